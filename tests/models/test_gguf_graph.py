"""vkrope.from_gguf against what llama.cpp's code does with a file, where an
adversarial review found it read otherwise: the RoPE fields only some
architectures read (Grok's and Mistral 3's YaRN betas, DeepSeek's log
multiplier), llama_context's frequency scale and attention factor, and each
graph's own rope calls (MLA's rotated channels apart from the head, a mode
or base of the graph's own, sliding layers rotated unscaled). Expected
values are llama.cpp's arithmetic restated here (llama-context.cpp's
cparams, ggml's rope_yarn), sharing no code with vkrope."""

from __future__ import annotations

import math

import gguf
import numpy as np
import pytest

import vkrope


def gguf_file(tmp_path, arch, kv, tensors=(), name="m"):
    """A GGUF of `arch` with metadata `kv` (keys without the arch prefix; int -> uint32, float -> float32)."""
    path = tmp_path / f"{name}-{arch}.gguf"
    w = gguf.GGUFWriter(str(path), arch=arch)
    for key, value in {"context_length": 4096, "embedding_length": 2048, "attention.head_count": 16,
                       "block_count": 2, **kv}.items():
        full = f"{arch}.{key}"
        if isinstance(value, str):
            w.add_string(full, value)
        elif isinstance(value, list):
            w.add_array(full, value)
        elif isinstance(value, int):
            w.add_uint32(full, value)
        else:
            w.add_float32(full, value)
    for tname, arr in tensors:
        w.add_tensor(tname, np.asarray(arr, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return str(path)


def yarn_magnitude(factor, attn=1.0):
    """llama.cpp's cos / sin factor for YaRN without a log multiplier: cparams' 0.1 ln(s) + 1, cancelled
    by 1 / (1 + 0.1 ln s), times rope.scaling.attn_factor, times rope_yarn's own 1 + 0.1 ln s."""
    return (0.1 * math.log(factor) + 1) / (1 + 0.1 * math.log(factor)) * attn * (1 + 0.1 * math.log(factor))


YARN = {"rope.scaling.type": "yarn", "rope.scaling.factor": 4.0, "rope.scaling.original_context_length": 1024}


@pytest.mark.parametrize("arch", ["deepseek2", "minicpm3", "plm", "mistral4", "bailingmoe3"])
def test_mla_rotates_a_head_of_rope_dimension_count(tmp_path, arch):
    """MLA graphs rotate q_pe / k_pe (a view rope.dimension_count wide, or the head's trailing channels by
    ggml_rope_set_offset): the RoPE's head is those 64 channels, never the first 64 of the 192-wide head."""
    path = gguf_file(tmp_path, arch, {"attention.key_length": 192, "attention.value_length": 128,
                                      "rope.dimension_count": 64})
    r = vkrope.from_gguf(path)
    assert (r.head_dim, r.rotary_dim) == (64, 64)


@pytest.mark.parametrize("arch", ["deepseek32", "dots3note", "deepseek2-ocr", "glm-dsa"])
def test_a_graph_rotating_in_two_ways_is_refused(tmp_path, arch):
    """DeepSeek-V3.2's (and dots.ocr's) indexer rotates its own head with NeoX pairs beside the attention's
    adjacent pairs; DeepSeek-OCR rotates whole heads with NeoX pairs, base 10000 and no scaling; GLM-DSA's
    indexer layers follow a rule of its version that vkrope does not evaluate."""
    path = gguf_file(tmp_path, arch, {"attention.key_length": 192, "rope.dimension_count": 64,
                                      "attention.sliding_window": 128, "rope.freq_base_swa": 10000.0,
                                      "attention.sliding_window_pattern": [True, False]})
    with pytest.raises(ValueError, match=r"rotates layer \d in 2 ways|is_indexer_full_impl: .* not known"):
        vkrope.from_gguf(path)


def test_scaling_type_none_never_scales(tmp_path):
    """llama_context: rope_freq_scale = 1 when the scaling type is none, whatever the factor (HunyuanVL's
    converter writes both)."""
    r = vkrope.from_gguf(gguf_file(tmp_path, "llama", {"rope.scaling.type": "none", "rope.scaling.factor": 4.0}))
    assert r.rope_type == "default"


def test_a_factor_of_zero_is_no_scaling_and_hides_the_old_key(tmp_path):
    """load_hparams reads rope.scale_linear only where rope.scaling.factor is absent; 0 means scale 1."""
    kv = {"rope.scaling.factor": 0.0, "rope.scale_linear": 4.0}
    assert vkrope.from_gguf(gguf_file(tmp_path, "llama", kv)).rope_type == "default"
    r = vkrope.from_gguf(gguf_file(tmp_path, "llama", {"rope.scale_linear": 4.0}, name="old"))
    assert (r.rope_type, dict(r.params)["factor"]) == ("linear", 4.0)


def test_attn_factor_outside_yarn_and_longrope_is_refused(tmp_path):
    """llama.cpp multiplies cos and sin by rope.scaling.attn_factor for every architecture and type; vkrope's
    default and linear types have no such factor, so the file is refused, not read without it."""
    with pytest.raises(ValueError, match="multiplies cos and sin by 0.5"):
        vkrope.from_gguf(gguf_file(tmp_path, "llama", {"rope.scaling.attn_factor": 0.5}))
    r = vkrope.from_gguf(gguf_file(tmp_path, "llama", {**YARN, "rope.scaling.attn_factor": 0.5}, name="yarn"))
    assert r.attention_factor == pytest.approx(yarn_magnitude(4.0, 0.5), rel=1e-6)


def test_yarn_betas_only_where_the_architecture_reads_them(tmp_path):
    """Only Grok's and Mistral 3's load_arch_hparams read the betas; every other architecture keeps 32 and 1
    (Kimi-K2's deepseek2 file gives 1 and 1). Grok's default beta_fast is 8."""
    betas = {**YARN, "rope.scaling.yarn_beta_fast": 16.0, "rope.scaling.yarn_beta_slow": 2.0}
    for arch, want in (("qwen2", (32.0, 1.0)), ("mistral3", (16.0, 2.0)), ("grok", (16.0, 2.0))):
        p = dict(vkrope.from_gguf(gguf_file(tmp_path, arch, betas)).params)
        assert (p["beta_fast"], p["beta_slow"]) == want, arch
    p = dict(vkrope.from_gguf(gguf_file(tmp_path, "grok", YARN, name="default")).params)
    assert (p["beta_fast"], p["beta_slow"]) == (8.0, 1.0)


def test_yarn_log_multiplier_as_each_architecture_reads_it(tmp_path):
    """DeepSeek 2 divides it by 0.1 and llama_context cancels it (cos / sin times attn_factor only); Mistral 3
    takes it raw, giving g(s, 1) / g(s, m) before rope_yarn's own factor; llama ignores the key."""
    log = {**YARN, "rope.scaling.yarn_log_multiplier": 0.5}
    ds = vkrope.from_gguf(gguf_file(tmp_path, "deepseek2", {**log, "rope.scaling.attn_factor": 0.5,
                                                             "rope.dimension_count": 64}))
    assert ds.attention_factor == pytest.approx(0.5, rel=1e-6)
    s = 4.0
    m3 = vkrope.from_gguf(gguf_file(tmp_path, "mistral3", log))
    want = (0.1 * math.log(s) + 1) / (0.05 * math.log(s) + 1) / (1 + 0.1 * math.log(s)) * (1 + 0.1 * math.log(s))
    assert m3.attention_factor == pytest.approx(want, rel=1e-6)
    assert vkrope.from_gguf(gguf_file(tmp_path, "llama", log)).attention_factor == pytest.approx(yarn_magnitude(s))


def test_longrope_without_attn_factor_is_one(tmp_path):
    """llama.cpp's longrope multiplies by rope.scaling.attn_factor, 1 where the file has none (its converter
    writes transformers' value)."""
    short, long = np.ones(48), np.full(48, 2.0)
    path = gguf_file(tmp_path, "phi3", {"embedding_length": 3072, "attention.head_count": 32,
                                        "rope.dimension_count": 96, "context_length": 131072,
                                        "rope.scaling.original_context_length": 4096},
                     [("rope_factors_short.weight", short), ("rope_factors_long.weight", long)])
    r = vkrope.from_gguf(path)
    assert (r.rope_type, r.attention_factor) == ("longrope", 1.0)


def test_yarn_without_original_length_takes_the_context_length(tmp_path):
    """load_hparams: n_ctx_orig_yarn defaults to n_ctx_train (MiniCPM 4's converter writes no original)."""
    kv = {"rope.scaling.type": "yarn", "rope.scaling.factor": 4.0, "context_length": 8192}
    assert vkrope.from_gguf(gguf_file(tmp_path, "llama", kv)).original_max_position_embeddings == 8192


def test_hunyuan_alpha_is_refused_not_ignored(tmp_path):
    """HunyuanVL's load_arch_hparams scales the base by alpha^(d / (d - 2)), which vkrope does not evaluate."""
    kv = {"rope.dimension_sections": [16, 16, 16, 16], "rope.scaling.alpha": 1000.0}
    with pytest.raises(ValueError, match="rope_freq_base_train for 'hunyuan_vl'"):
        vkrope.from_gguf(gguf_file(tmp_path, "hunyuan_vl", kv))


def test_olmo2_sliding_layers_rotate_unscaled(tmp_path):
    """Olmo 3's graph calls ggml_rope_ext with scale 1, ext_factor 0 and attn_factor 1 on its sliding layers."""
    path = gguf_file(tmp_path, "olmo2", {**YARN, "attention.sliding_window": 512, "block_count": 4})
    with pytest.raises(ValueError, match="pass layer_type"):
        vkrope.from_gguf(path)
    assert vkrope.from_gguf(path, layer=0).rope_type == "default"
    full = vkrope.from_gguf(path, layer_type="full_attention")
    assert full.rope_type == "yarn" and full.attention_factor == pytest.approx(yarn_magnitude(4.0))


def test_cogvlm_rotates_with_ggml_ropes_defaults(tmp_path):
    """CogVLM calls plain ggml_rope: base 10000, no scaling, no per-pair factors, whatever the file says."""
    path = gguf_file(tmp_path, "cogvlm", {"rope.freq_base": 500000.0, "rope.scaling.type": "linear",
                                          "rope.scaling.factor": 2.0}, [("rope_freqs.weight", np.full(64, 3.0))])
    r = vkrope.from_gguf(path)
    assert (r.rope_type, r.theta, r.freq_factors) == ("default", 10000.0, None)


@pytest.mark.parametrize("sections", [[8, 8, 8, 0], [16, 16, 16], [16, 16, 16, 16], [16, 24, 24, 0, 0],
                                      [24, 20, 20, 8]])
def test_mrope_sections_llama_cpp_would_cycle_or_refuse(tmp_path, sections):
    """get_key_or_arr takes exactly 4 sections; ggml cycles them where they cover fewer pairs than rotate,
    and a 4th section is a 4th position axis: vkrope refuses each."""
    with pytest.raises(ValueError, match="dimension_sections"):
        vkrope.from_gguf(gguf_file(tmp_path, "qwen3vl", {"rope.dimension_sections": sections,
                                                         "rope.dimension_count": 128}))
    assert vkrope.from_gguf(gguf_file(tmp_path, "qwen3vl", {"rope.dimension_sections": [24, 20, 20, 0],
                                                            "rope.dimension_count": 128}, name="ok")
                            ).mrope_section == (24, 20, 20)


@pytest.mark.parametrize("arch, extra", [("qwen3next", {"full_attention_interval": 4}),
                                         ("granitehybrid", {"attention.head_count_kv": [0, 0, 8, 0, 0, 8, 0, 8]}),
                                         ("lfm2", {"attention.head_count_kv": [0, 0, 8, 0, 0, 8, 0, 8]}),
                                         ("plamo2", {})])
def test_hybrid_recurrent_layers_are_never_called_rotating(tmp_path, arch, extra):
    """The hybrids' graphs build attention (and RoPE) only where `not is_recr(il)`, in a method or lambda the
    graph calls under that condition; vkrope cannot run the loops that set is_recr, so which layers rotate is
    unknown (the plain read says so), never "every layer"."""
    path = gguf_file(tmp_path, arch, {"block_count": 8, "attention.head_count_kv": 2, "attention.key_length": 128,
                                      "rope.dimension_count": 64, **extra})
    assert vkrope.from_gguf(path).nope_layers is None
    with pytest.raises(ValueError, match="which layers rotate is unknown"):
        vkrope.from_gguf(path, layer=0)
