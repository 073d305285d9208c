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
import warnings
import struct

import gguf
import numpy as np
import pytest

import oracle_ggml
import vkrope
from gguf_writer import add_values, finish


def gguf_file(tmp_path, arch, kv, tensors=(), name="m", omit=()):
    """A GGUF of `arch` with metadata `kv` (keys without the arch prefix; int -> uint32, float -> float32, a
    (type, *arguments) -> gguf's add_<type>: ("int32", 16), ("float64", 1e4)); the keys llama.cpp requires
    filled in but those in `omit`."""
    path = tmp_path / f"{name}-{arch}.gguf"
    w = gguf.GGUFWriter(str(path), arch=arch)
    add_values(w, {"context_length": 4096, "embedding_length": 2048, "attention.head_count": 16, "block_count": 2,
                   **kv})
    return finish(w, tensors, path, omit)


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
                                      "rope.dimension_count": 64, "attention.q_lora_rank": 1536})
    r = vkrope.from_gguf(path)
    assert (r.head_dim, r.rotary_dim) == (64, 64)


DSA = {"attention.key_length": 192, "rope.dimension_count": 64, "attention.indexer.key_length": 128,
       "attention.sliding_window": 128, "rope.freq_base_swa": 10000.0, "attention.sliding_window_pattern": [True, False],
       "attention.indexer.types": [True, False]}  # (dots3note requires its sliding keys and indexer types)


@pytest.mark.parametrize("arch", ["deepseek32", "dots3note"])
def test_a_graph_rotating_two_parts_is_read_per_part(tmp_path, arch):
    """DeepSeek-V3.2's (and dots.ocr's) lightning indexer rotates the first n_rot channels of its own heads
    (attention.indexer.key_length wide, [rope | nope]) with NeoX pairs, beside the attention's adjacent pairs on
    q_pe / k_pe, by the same frequency arguments (deepseek32.cpp's two ggml_rope_ext calls): part= picks one;
    without it the file is refused, naming both; a part the graph does not have is refused."""
    path = gguf_file(tmp_path, arch, {**DSA, "rope.scaling.type": "yarn", "rope.scaling.factor": 4.0,
                                      "rope.scaling.original_context_length": 1024})
    with pytest.raises(ValueError, match=r"rotates layer \d in 2 ways, one per part \(part='attention': adjacent pairs "
                                         r"\(2i, 2i \+ 1\) on heads of their own, 64 channels; part='indexer': "
                                         r"rotate-half pairs \(i, i \+ n / 2\) on the first 64 of 128-channel heads\): "
                                         r"pass part="):
        vkrope.from_gguf(path)
    full = "full_attention" if arch == "dots3note" else None  # (its indexer runs on the full layers only)
    att = vkrope.from_gguf(path, part="attention", layer_type=full, angle="exact")
    ind = vkrope.from_gguf(path, part="indexer", layer_type=full, angle="exact")
    assert (att.head_dim, att.rotary_dim, att.interleaved, att.part) == (64, 64, True, "attention")
    assert (ind.head_dim, ind.rotary_dim, ind.interleaved, ind.part) == (64, 64, False, "indexer")  # (its heads'
    # rotated channels, q[..., :64], as from_hf's indexer)
    assert (ind.part_channels, att.part_channels) == ("first", "")
    p = np.array([[0, 1, 100, 1000, 4000]])
    assert all(np.array_equal(a, b) for a, b in zip(att.cos_sin(p), ind.cos_sin(p)))  # (one call's arguments)
    cos, sin = ind.cos_sin(p)
    want_cos, want_sin = oracle_ggml.cos_sin(p[0], 64, 10000.0, freq_scale=0.25, ext_factor=1.0, n_ctx_orig=1024)
    mag, want_mag = np.hypot(cos, sin), np.hypot(want_cos, want_sin)  # (the angles; the magnitude: tested above)
    assert np.abs(cos[0, :, :32] / mag[0, :, :32] - want_cos / want_mag).max() < 4e-6
    assert np.abs(sin[0, :, :32] / mag[0, :, :32] - want_sin / want_mag).max() < 4e-6
    with pytest.raises(ValueError, match=r"part must be one of \['attention', 'indexer'\]"):
        vkrope.from_gguf(path, part="mla")
    with pytest.raises(TypeError, match="part must be a str"):
        vkrope.from_gguf(path, part=1)


def test_an_indexer_narrower_than_its_rotation_is_refused(tmp_path):
    """deepseek32.cpp (and glm-dsa.cpp): GGML_ASSERT(hparams.n_rot() <= n_embd_indexer_head), whichever part is
    asked for, and whether any layer runs the indexer."""
    narrow = {**DSA, "attention.indexer.key_length": 32}
    files = [gguf_file(tmp_path, "deepseek32", narrow),  # (and where no layer runs the indexer: asserted before)
             gguf_file(tmp_path, "glm-dsa", {**narrow, "attention.indexer.types": [False, False]})]
    for path, arch in zip(files, ("deepseek32", "glm-dsa")):
        for part in ("attention", "indexer"):
            with pytest.raises(ValueError, match=rf"the indexer's heads are 32 channels wide \({arch}\.attention\."
                                                 r"indexer\.key_length\), fewer than the 64 it rotates"):
                vkrope.from_gguf(path, part=part)


def test_parts_turning_the_same_pairs_read_as_the_attention(tmp_path):
    """GLM-DSA's indexer turns adjacent pairs as its MLA attention does, by the same angles: read without
    part= as the attention (as from_hf reads GLM-5), or per part, each with its own heads."""
    path = gguf_file(tmp_path, "glm-dsa", DSA)
    assert vkrope.from_gguf(path) == vkrope.from_gguf(path, part="attention")
    ind = vkrope.from_gguf(path, part="indexer")
    assert (ind.head_dim, ind.rotary_dim, ind.interleaved) == (64, 64, True)


def test_a_part_reads_the_layers_that_run_it(tmp_path):
    """dots.ocr's indexer runs on its full layers only: part='indexer' on a sliding layer (or layer type) has no
    RoPE (None, as a layer without one), and the part's nope_layers are the sliding ones; where which layers run
    it cannot be decided (GLM-5.2's default indexer types), they are unknown (None, layer= refused), while
    the parts, turning alike there, read without part= as the attention."""
    path = gguf_file(tmp_path, "dots3note", DSA)
    assert vkrope.from_gguf(path, part="indexer", layer=0) is None
    assert vkrope.from_gguf(path, part="indexer", layer_type="sliding_attention") is None
    assert vkrope.from_gguf(path, part="indexer").nope_layers == (0,)
    assert vkrope.from_gguf(path, part="indexer", layer=1).rotary_dim == 64
    # (no part named: a layer that rotates one way is read, one whose parts differ refused)
    assert vkrope.from_gguf(path, layer_type="sliding_attention") == \
        vkrope.from_gguf(path, part="attention", layer_type="sliding_attention")
    assert vkrope.from_gguf(path, layer=0) == vkrope.from_gguf(path, part="attention", layer=0)
    with pytest.raises(ValueError, match="rotates layer 1 in 2 ways, one per part"):
        vkrope.from_gguf(path, layer=1)
    none = gguf_file(tmp_path, "glm-dsa", {**DSA, "attention.indexer.types": [False, False]}, name="none")
    with pytest.raises(vkrope.NoRopeLayers, match="llama.cpp's graph runs its indexer on none of this file's layers: "
                                                  "it has no indexer RoPE to give"):
        vkrope.from_gguf(none, part="indexer")  # (not "applies RoPE on none of its layers": its attention does)
    assert vkrope.from_gguf(none, part="indexer", layer=0) is None
    glm52 = gguf_file(tmp_path, "glm-dsa", {**{k: v for k, v in DSA.items() if k != "attention.indexer.types"},
                                            "context_length": 1048576}, name="52")
    assert vkrope.from_gguf(glm52) == vkrope.from_gguf(glm52, part="attention")
    assert vkrope.from_gguf(glm52, part="indexer").nope_layers is None
    with pytest.raises(ValueError, match="which layers run its indexer is unknown"):
        vkrope.from_gguf(glm52, part="indexer", layer=0)


def test_nanbeige_layers_read_where_its_loops_are_known(tmp_path):
    """NanBeige's loader reads num_loops (default 1) into a member of its class, n_loops, and copies its layers'
    settings for each further loop: a file of one loop (the key absent or 1) is read per layer; one of more
    loops, whose copied layers the table does not run, refuses layer= and names the statement."""
    base = {"embedding_length": 256, "attention.head_count": 4, "block_count": 3}
    for kv in ({}, {"num_loops": 1}):
        path = gguf_file(tmp_path, "nanbeige", {**base, **kv}, name=f"n{len(kv)}")
        assert vkrope.from_gguf(path, layer=2) == vkrope.from_gguf(path)
    path = gguf_file(tmp_path, "nanbeige", {**base, "num_loops": 3}, name="n3")
    with pytest.raises(ValueError, match=r"which layers rotate is unknown: .* a statement vkrope does not run"):
        vkrope.from_gguf(path, layer=0)


def test_two_calls_of_one_part_on_a_layer_are_refused(tmp_path, monkeypatch):
    """A layer whose graph rotates twice outside any part, each call its own way (a table of a llama.cpp whose
    graph added a NeoX call beside Llama's adjacent pairs): refused, neither read as the layer's RoPE."""
    from vkrope.models import gguf_program

    entry = gguf_program.table()["archs"]["llama"]
    neox = {**entry["rope_forms"][0], "mode": "LLAMA_ROPE_TYPE_NEOX"}
    monkeypatch.setitem(gguf_program.table()["archs"], "llama", {**entry, "rope_forms": [*entry["rope_forms"], neox]})
    path = gguf_file(tmp_path, "llama", {"rope.dimension_count": 128})
    with pytest.raises(ValueError, match=r"rotates layer 0 in 2 ways \(another head's RoPE beside the attention's, "
                                         r"or another mode\): vkrope reads one"):
        vkrope.from_gguf(path)


def test_a_graph_rotating_in_another_mode_is_refused(tmp_path):
    """DeepSeek-OCR rotates whole heads with NeoX pairs, base 10000 and no scaling, in a branch whose asserts
    (its widths, its base) the table does not hold: refused, with or without part=."""
    path = gguf_file(tmp_path, "deepseek2-ocr", DSA)
    for part in (None, "attention"):
        with pytest.raises(ValueError, match=r"with GGML_ROPE_TYPE_NEOX, not its rope type"):
            vkrope.from_gguf(path, part=part)
    with pytest.raises(ValueError, match="rotates its attention alone"):
        vkrope.from_gguf(path, part="indexer")


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
                                                             "rope.dimension_count": 64,
                                                             "attention.q_lora_rank": 1536}))
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
    r = vkrope.from_gguf(path, context_length=4096)
    assert (r.rope_type, r.attention_factor) == ("longrope", 1.0)
    bare = gguf_file(tmp_path, "phi3", {"rope.scaling.type": "longrope", "embedding_length": 3072,
                                        "attention.head_count": 32, "rope.dimension_count": 96}, name="bare")
    assert vkrope.from_gguf(bare).rope_type == "default"  # (no factor tensors: get_rope_factors gives none)


def test_longrope_factors_picked_by_the_context_are_every_positions(tmp_path):
    """llama.cpp picks a longrope file's factors once, by its context: the ModelRope's short and long factors are
    that one list, no call switches them, and its summary (`vkrope config`) says so (it printed the short factors
    as `long_factor` and a per-call switch that never happens)."""
    short, long = np.linspace(1, 2, 48), np.linspace(3, 4, 48)
    path = gguf_file(tmp_path, "phi3", {"embedding_length": 3072, "attention.head_count": 32,
                                        "rope.dimension_count": 96, "context_length": 131072,
                                        "rope.scaling.original_context_length": 4096},
                     [("rope_factors_short.weight", short), ("rope_factors_long.weight", long)])
    for n_ctx, want in ((4096, short), (4097, long)):
        r = vkrope.from_gguf(path, context_length=n_ctx)
        d = r.summary()
        assert not r.uses_seq_len() and "decided_per_call" not in d and "long_factor" not in d
        np.testing.assert_allclose(d["factors"], want.astype(np.float32), rtol=0)
        assert np.array_equal(r.inv_freq(10), r.inv_freq(100000))
    phi = vkrope.ModelRope(rope_type="longrope", head_dim=96, rotary_dim=96, theta=10000.0,
                           max_position_embeddings=131072,
                           original_max_position_embeddings=4096, params={"short_factor": tuple(short),
                                                                          "long_factor": tuple(long)})
    assert phi.uses_seq_len() and "short_factor" in phi.summary() and "decided_per_call" in phi.summary()


def test_yarn_without_original_length_takes_the_context_length(tmp_path):
    """load_hparams: n_ctx_orig_yarn defaults to n_ctx_train (MiniCPM 4's converter writes no original)."""
    kv = {"rope.scaling.type": "yarn", "rope.scaling.factor": 4.0, "context_length": 8192}
    assert vkrope.from_gguf(gguf_file(tmp_path, "llama", kv)).original_max_position_embeddings == 8192


def test_hunyuan_alpha_scales_the_base(tmp_path):
    """HunyuanVL's (and Hunyuan dense's) load_arch_hparams scales the base by alpha^(d / (d - 2)) (float
    division: the casts are kept); the file's alpha was ignored before."""
    r = vkrope.from_gguf(gguf_file(tmp_path, "hunyuan-dense", {"rope.scaling.alpha": 1000.0}))
    assert r.theta == pytest.approx(10000.0 * 1000.0 ** (128 / 126), rel=1e-6)
    # as C computes it, in float32: the exponent float(128) / float(126) rounded, powf's result, then the product
    exponent = np.float32(128) / np.float32(126)
    power = np.float32(math.pow(1000.0, float(exponent)))
    assert r.theta == float(np.float32(10000.0) * power) == 11158844.0  # (float64 arithmetic: 11158840)
    assert vkrope.from_gguf(gguf_file(tmp_path, "hunyuan-dense", {}, name="plain")).theta == 10000.0


def test_refusals_name_what_the_loader_made_the_value_of(tmp_path):
    """An adversary's findings: an infinite base from alpha^(2 / 0) (a key length of 2) blamed rope.freq_base =
    10000 alone, and numpy warned of the division (an error under -W error); a factor tensor's tiny value that
    overflowed the inverse frequencies named no tensor; a rope.dimension_count of 0 in the file was said to be
    missing."""
    path = gguf_file(tmp_path, "hunyuan-dense", {"rope.scaling.alpha": 1000.0, "attention.key_length": 2,
                                                 "attention.value_length": 2})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"got inf \(from hunyuan-dense.rope.freq_base .*, then its loader's "
                                             r"rope_freq_base_train = rope_freq_base_train \* powf\(rope_scaling_alpha"):
            vkrope.from_gguf(path)
    # (a base that is llama.cpp's default, no rope.freq_base in the file: no loader statement set it)
    from vkrope.models import gguf  # noqa: PLC0415
    assert gguf._read_from("theta bad", "hunyuan-dense", {}, 10000.0) == (  # noqa: SLF001
        " (from hunyuan-dense.rope.freq_base (not in the file: llama.cpp's default, or derived))")
    assert "then its loader's" in gguf._read_from("theta bad", "hunyuan-dense", {}, 1e30)  # noqa: SLF001
    tiny = np.ones(64, np.float32)
    tiny[5] = 1e-45
    path = gguf_file(tmp_path, "llama", {}, [("rope_freqs.weight", tiny)], name="tiny")
    with pytest.raises(ValueError, match=r"not finite numbers >= 0 \(theta 10000.0, \{\}, divided by its freq_factors\) "
                                         r"\(from the tensor rope_freqs.weight"):
        vkrope.from_gguf(path)
    path = gguf_file(tmp_path, "stablelm", {"rope.dimension_count": 0}, name="zero")
    with pytest.raises(ValueError, match=r"stablelm.rope.dimension_count is 0 in the file; vkrope refuses the file$"):
        vkrope.from_gguf(path)
    path = gguf_file(tmp_path, "gemma3", {"rope.dimension_count": 128, "rope.dimension_count_swa": 0,
                                          "attention.sliding_window": 512}, name="swa")  # (a diff reviewer's)
    with pytest.raises(ValueError, match=r"gemma3.rope.dimension_count_swa is 0 in the file \(its sliding layers' "
                                         r"width\); vkrope refuses the file$"):
        vkrope.from_gguf(path, layer=0)
    # (a base that overflows on its own is not blamed on a factor tensor beside it, a diff reviewer's)
    path = gguf_file(tmp_path, "llama", {"rope.freq_base": 1e-44}, [("rope_freqs.weight", np.ones(64))], name="base")
    with pytest.raises(ValueError) as err:
        vkrope.from_gguf(path)
    assert "freq_factors" not in str(err.value) and "rope_freqs" not in str(err.value), err.value


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


KV_PATTERN = [0, 0, 8, 0, 0, 8, 0, 8]  # (attention where a layer has kv heads: 2, 5 and 7)


@pytest.mark.parametrize("arch, extra, nope", [
    ("qwen3next", {"full_attention_interval": 4}, (0, 1, 2, 4, 5, 6)),  # (every 4th layer attends)
    ("qwen3next", {}, (0, 1, 2, 4, 5, 6)),  # (the loader's default interval, 4)
    ("qwen3next", {"full_attention_interval": 2}, (0, 2, 4, 6)),
    ("qwen3next", {"attention.recurrent_layers": [True, False] * 4}, (0, 2, 4, 6)),  # (the array wins)
    ("granitehybrid", {"attention.head_count_kv": KV_PATTERN}, (0, 1, 3, 4, 6)),
    ("lfm2", {"attention.head_count_kv": KV_PATTERN}, (0, 1, 3, 4, 6)),
    ("plamo2", {"attention.head_count_kv": KV_PATTERN}, (0, 1, 3, 4, 6)),
    ("plamo2", {}, ()),  # (kv heads on every layer: none recurrent)
    ("lfm2moe", {"attention.head_count_kv": KV_PATTERN}, (0, 1, 3, 4, 6)),
    ("minimax-01", {}, (0, 1, 2, 3, 4, 5, 6)),  # (its loader's default interval, 8)
    ("qwen3next", {"nextn_predict_layers": 1}, (0, 1, 2, 4, 5, 6))])  # (7 main layers: the MTP one apart)
def test_hybrid_recurrent_layers_are_read_as_llama_cpp_s_loader_sets_them(tmp_path, arch, extra, nope):
    """The hybrids' graphs build attention (and RoPE) only where `not is_recr(il)`; their loaders set is_recr
    in a loop (Qwen3-Next / Qwen3.5: every full_attention_interval-th layer attends, unless
    attention.recurrent_layers lists them; Granite hybrid, LFM2, PLaMo 2: where n_head_kv(i) is 0), which
    the table now runs: which layers rotate was "unknown" and layer= refused."""
    path = gguf_file(tmp_path, arch, {"block_count": 8, "attention.head_count_kv": 2, "attention.key_length": 128,
                                      "rope.dimension_count": 64, **extra})
    rope = vkrope.from_gguf(path)
    assert rope.nope_layers == nope
    for layer in range(8 - extra.get("nextn_predict_layers", 0)):
        got = vkrope.from_gguf(path, layer=layer)
        assert (got is None) == (layer in nope), layer
        assert got is None or got == rope


def test_a_loader_dividing_by_zero_is_refused(tmp_path):
    """Qwen3-Next's loop takes (i + 1) % full_attention_interval: at an interval of 0 llama.cpp divides an
    integer by zero loading the file (SIGFPE), so vkrope refuses it whichever layer is asked for (it read the
    rotating layers' RoPE with the layers unknown); with attention.recurrent_layers the loop does not run."""
    keys = {"block_count": 8, "attention.head_count_kv": 2, "attention.key_length": 128,
            "rope.dimension_count": 64, "full_attention_interval": 0}
    path = gguf_file(tmp_path, "qwen3next", keys)
    for kw in ({}, {"layer": 0}):
        with pytest.raises(ValueError, match="divides an integer by zero in \\(i \\+ 1\\) % full_attn_interval"):
            vkrope.from_gguf(path, **kw)
    listed = gguf_file(tmp_path, "qwen3next", {**keys, "attention.recurrent_layers": [True] * 7 + [False]}, name="l")
    assert vkrope.from_gguf(listed).nope_layers == tuple(range(7))


def test_factor_tensors_where_each_layers_call_takes_them(tmp_path):
    """EXAONE 4's graph passes get_rope_factors on every rotating layer, its sliding ones too (the factors
    were dropped there); Step 3.5's full layers read the first rotary_dim / 2 of its one shared tensor (they
    were refused); a factor tensor the architecture never loads is refused, as llama.cpp's loader does."""
    factors = np.linspace(1.0, 8.0, 64)
    ex = gguf_file(tmp_path, "exaone4", {"block_count": 64, "attention.sliding_window": 512},
                   [("rope_freqs.weight", factors)])
    for kw in ({}, {"layer": 0}, {"layer_type": "sliding_attention"}):
        assert vkrope.from_gguf(ex, **kw).freq_factors == tuple(np.float32(factors)), kw
    st = gguf_file(tmp_path, "step35", {"block_count": 4, "attention.sliding_window": 512,
                                        "attention.sliding_window_pattern": [True, False, True, False]},
                   [("rope_freqs.weight", factors)])
    assert vkrope.from_gguf(st, layer=1).freq_factors == tuple(np.float32(factors[:32]))
    assert vkrope.from_gguf(st, layer=0).freq_factors is None  # (its graph: nullptr on sliding layers)
    with pytest.raises(ValueError, match="cohere2 loads no rope_freqs.weight tensor"):
        vkrope.from_gguf(gguf_file(tmp_path, "cohere2", {"attention.sliding_window": 512},
                                   [("rope_freqs.weight", factors)]))


def test_what_llama_cpps_loader_refuses_is_refused(tmp_path):
    """Llama's load_hparams throws 'invalid n_rot' where the rotary dim is not the head width; get_key checks
    each key's GGUF type; get_key_or_arr takes one section for all four; get_arr refuses a float array."""
    with pytest.raises(ValueError, match="'invalid n_rot'|graph asserts they are equal"):
        vkrope.from_gguf(gguf_file(tmp_path, "llama", {"rope.dimension_count": 64}))
    with pytest.raises(ValueError, match="'invalid n_rot'"):  # (the loader's check is on the key width)
        vkrope.from_gguf(gguf_file(tmp_path, "llama", {"rope.dimension_count": 64, "attention.key_length": 128,
                                                       "attention.value_length": 64}, name="kv"))
    for arch in ("qwen2", "starcoder2", "olmoe"):  # (GGML_ASSERT(n_embd_head == n_rot) in their graphs)
        with pytest.raises(ValueError, match=r": the rotated width 64 \(llama.cpp's n_rot: layer 0's "
                                             r"rope.dimension_count, .*\) is not the head width 128 \(.*\): its"):
            vkrope.from_gguf(gguf_file(tmp_path, arch, {"rope.dimension_count": 64}, name="part"))
    pair = [("rope_factors_short.weight", np.ones(64)), ("rope_factors_long.weight", np.ones(64))]
    with pytest.raises(ValueError, match="loads no rope_factors_long.weight, rope_factors_short.weight tensor"):
        vkrope.from_gguf(gguf_file(tmp_path, "llama", {}, pair, name="lr"))  # (Llama: only for type longrope)
    assert vkrope.from_gguf(gguf_file(tmp_path, "llama", {"rope.scaling.type": "longrope",
                                                          "rope.scaling.original_context_length": 1024},
                                      pair, name="lr2"), context_length=1024).rope_type == "longrope"
    with pytest.raises(ValueError, match="rope.dimension_count is a GGUF FLOAT32; llama.cpp reads it as UINT32"):
        vkrope.from_gguf(gguf_file(tmp_path, "qwen2", {"rope.dimension_count": 64.5}, name="f"))
    with pytest.raises(ValueError, match="rope.freq_base is a GGUF UINT32; llama.cpp reads it as FLOAT32"):
        vkrope.from_gguf(gguf_file(tmp_path, "qwen2", {"rope.freq_base": 500000}, name="i"))
    with pytest.raises(ValueError, match="dimension_sections \\[16, 16, 16, 16\\]"):  # (a scalar: 4 times)
        vkrope.from_gguf(gguf_file(tmp_path, "qwen3vl", {"rope.dimension_sections": ("int32", 16)}))
    with pytest.raises(ValueError, match="rope.scaling.factor .* must be positive"):
        vkrope.from_gguf(gguf_file(tmp_path, "qwen2", {**YARN, "rope.scaling.factor": -4.0}, name="neg"))
    # (refused where a rope call takes the scale, not where the graph's plain ggml_rope never reads it: CogVLM's)
    assert vkrope.from_gguf(gguf_file(tmp_path, "cogvlm", {"rope.scaling.factor": -2.0}, name="negc")).theta == 10000
    # (GGML_ASSERT(n_embd_head == hparams.n_embd_head_k()) in about 100 graphs, n_embd_head the value width: an
    # adversary's Qwen3 of key width 96 and value width 64 was read)
    with pytest.raises(ValueError, match=r"qwen3: layer 0's key width 96 and value width 64 differ \(attention.key_length "
                                         r"and value_length, .*\): llama.cpp's qwen3 graph asserts .* and aborts"):
        vkrope.from_gguf(gguf_file(tmp_path, "qwen3", {"attention.key_length": 96, "attention.value_length": 64,
                                                        "rope.dimension_count": 64}, name="kv3"))
    # (llama_rope_scaling_type_from_string gives UNSPECIFIED for a name it lacks, which load_hparams asserts against)
    with pytest.raises(ValueError, match=r"llama.cpp aborts on this file: its GGML_ASSERT\(rope_scaling_type_train != "
                                         r"LLAMA_ROPE_SCALING_TYPE_UNSPECIFIED\) fails; rope.scaling.type = 'YaRN' is "
                                         r"none of 'linear', 'longrope', 'none', 'yarn'"):
        vkrope.from_gguf(gguf_file(tmp_path, "qwen2", {**YARN, "rope.scaling.type": "YaRN"}, name="case"))
    assert vkrope.from_gguf(gguf_file(tmp_path, "qwen2", {"rope.scaling.type": "none", "rope.scaling.factor": 4.0},
                                      name="none")).rope_type == "default"  # (type none: llama_context's scale 1)
    pattern = {"block_count": 8, "attention.sliding_window": 512}
    with pytest.raises(ValueError, match="sliding_window_pattern is a GGUF ARRAY\\[FLOAT32\\]; llama.cpp reads it as "
                                         "ARRAY\\[BOOL\\] or ARRAY\\[UINT32\\] or ARRAY\\[INT32\\] or UINT32"):
        vkrope.from_gguf(gguf_file(tmp_path, "gemma3", {**pattern, "attention.sliding_window_pattern":
                                                        [1.0, 0.0] * 4}, name="fl"))  # (load_swa_pattern's reads)
    with pytest.raises(ValueError, match="sliding_window_pattern is a GGUF INT32"):
        vkrope.from_gguf(gguf_file(tmp_path, "gemma3", {**pattern, "attention.sliding_window_pattern":
                                                        ("int32", 2)}, name="i32"))
    long = vkrope.from_gguf(gguf_file(tmp_path, "gemma3", {**pattern, "attention.sliding_window_pattern":
                                                            [True, True, True, False] * 3}, name="long"), layer=3)
    assert long.layer_type == "full_attention"


def test_head_widths_per_layer_as_the_graph_uses_them(tmp_path):
    """Gemma 4's graph takes each layer's own head width: a plain read of a file whose sliding and full heads
    differ asks for the layer type (it gave the full width to every layer); Gemma 3's graph rotates layer
    0's n_rot on every layer, so different head widths are refused rather than guessed."""
    g4 = gguf_file(tmp_path, "gemma4", {"block_count": 6, "attention.sliding_window": 512,
                                        "attention.sliding_window_pattern": [True] * 5 + [False],
                                        "attention.key_length": 512, "attention.key_length_swa": 256,
                                        "attention.value_length": 512, "attention.value_length_swa": 256,
                                        "rope.dimension_count": 128, "rope.dimension_count_swa": 128,
                                        "rope.freq_base_swa": 10000.0},
                  [("rope_freqs.weight", np.ones(256))])  # (its loader requires it: the full head 512 / 2)
    with pytest.raises(ValueError, match="pass layer_type"):
        vkrope.from_gguf(g4)
    assert vkrope.from_gguf(g4, layer=0).head_dim == 256 and vkrope.from_gguf(g4, layer=5).head_dim == 512
    # (its graph asserts each layer's key and value widths equal, per layer: the reviewer's file, sliding
    # layers of key 256 and value 128, is refused as llama.cpp refuses it)
    odd = gguf_file(tmp_path, "gemma4", {"block_count": 6, "attention.sliding_window": 512,
                                         "attention.sliding_window_pattern": [True] * 5 + [False],
                                         "attention.key_length": 512, "attention.key_length_swa": 256,
                                         "attention.value_length": 512, "attention.value_length_swa": 128,
                                         "rope.dimension_count": 128, "rope.dimension_count_swa": 128},
                    [("rope_freqs.weight", np.ones(256))], name="odd")
    with pytest.raises(ValueError, match=r"layer 0's key width 256 and value width 128 differ .* gemma4 graph asserts"):
        vkrope.from_gguf(odd, layer=5)
    g3 = gguf_file(tmp_path, "gemma3", {"block_count": 6, "attention.sliding_window": 512,
                                        "attention.key_length": 256, "attention.key_length_swa": 128,
                                        "rope.dimension_count": 128})
    with pytest.raises(ValueError, match="head widths differ"):
        vkrope.from_gguf(g3, layer=5)


def test_a_key_of_a_type_llama_cpp_does_not_take_is_refused(tmp_path):
    """llama.cpp's loader takes each key as exactly the GGUF type its field has (GKV<T>::get_kv: a uint32
    count, a float32 real, a bool flag; get_key_or_arr's arrays of bool / int32 / uint32 into uint32 fields),
    read from its source into the table's key_types; another type refuses the file ("wrong type"). A read
    under a condition is checked only where the condition holds."""
    def refused(kv, key, given, name):
        with pytest.raises(ValueError, match=rf"{key} is a GGUF {given}; llama.cpp reads it as "):
            vkrope.from_gguf(gguf_file(tmp_path, "qwen2", kv, name=name))
    refused({"context_length": ("uint64", 4096)}, "context_length", "UINT64", "u64")
    refused({"block_count": ("int32", 2)}, "block_count", "INT32", "i32")
    refused({"rope.freq_base": ("float64", 1e6)}, "rope.freq_base", "FLOAT64", "f64")
    refused({"rope.scaling.finetuned": 1}, "rope.scaling.finetuned", "UINT32", "ft")  # (a bool field)
    refused({"attention.head_count": [16.0, 16.0]}, "attention.head_count", "ARRAY\\[FLOAT32\\]", "hf")
    refused({"rope.scale_linear": ("float64", 2.0)}, "rope.scale_linear", "FLOAT64", "sl")
    # (get_key_or_arr takes an int32, uint32 or bool array into uint32 counts)
    as_uint32 = ("key_value", [16, 16], gguf.GGUFValueType.ARRAY, gguf.GGUFValueType.UINT32)
    for heads, name in (([16, 16], "hi"), (as_uint32, "hu"), (16, "h")):
        assert vkrope.from_gguf(gguf_file(tmp_path, "qwen2", {"attention.head_count": heads}, name=name)) \
            .head_dim == 128
    # (rope.scale_linear is read only where rope.scaling.factor is absent; a float32 one is the factor)
    assert vkrope.from_gguf(gguf_file(tmp_path, "qwen2", {"rope.scaling.factor": 2.0, "rope.scaling.type": "linear",
                                                          "rope.scale_linear": ("float64", 2.0)}, name="both")) \
        .rope_type == "linear"
    assert vkrope.from_gguf(gguf_file(tmp_path, "qwen2", {"rope.scaling.type": "linear", "rope.scale_linear": 2.0},
                                      name="old")).rope_type == "linear"
    # (Gemma 3 reads rope.freq_base_swa only where the file has a sliding window)
    swa = {"rope.freq_base_swa": ("float64", 1e4), "block_count": 6}
    assert vkrope.from_gguf(gguf_file(tmp_path, "gemma3", swa, name="noswa")).theta == 10000.0
    with pytest.raises(ValueError, match="rope.freq_base_swa is a GGUF FLOAT64; llama.cpp reads it as FLOAT32"):
        vkrope.from_gguf(gguf_file(tmp_path, "gemma3", {**swa, "attention.sliding_window": 512}, name="swa"))
    with pytest.raises(ValueError, match="rope.dimension_sections is a GGUF UINT32; llama.cpp reads it as INT32"):
        vkrope.from_gguf(gguf_file(tmp_path, "qwen3vl", {"rope.dimension_sections": 16}, name="su"))


def test_an_empty_arrays_element_type_is_read_from_its_header(tmp_path):
    """An empty array's element type is its header's (gguf's reader listed none; one of no GGUF type is a
    broken file, as llama.cpp's reader says)."""
    path = tmp_path / "e-qwen2.gguf"
    w = gguf.GGUFWriter(str(path), arch="qwen2")
    for key, value in {"context_length": 4096, "embedding_length": 2048, "block_count": 2,
                       "attention.head_count": 16}.items():
        w.add_uint32(f"qwen2.{key}", value)
    w.add_array("qwen2.attention.head_count_kv", [7.5])
    finish(w, (), path)
    data = path.read_bytes()
    at = data.index(b"qwen2.attention.head_count_kv") + len(b"qwen2.attention.head_count_kv")
    assert struct.unpack_from("<IIQ", data, at) == (9, 6, 1)  # (ARRAY of FLOAT32, one element)
    for itype, match in ((6, r"head_count_kv is a GGUF ARRAY\[FLOAT32\]; llama.cpp reads it as UINT32 or"),
                         (99, r"is not a GGUF file \(ValueError: metadata 5: an array of value type 99")):
        path.write_bytes(data[:at + 4] + struct.pack("<IQ", itype, 0) + data[at + 20:])
        with pytest.raises(ValueError, match=match):
            vkrope.from_gguf(path)


def test_what_llama_cpp_reads_only_sometimes_is_checked_where_it_does(tmp_path):
    """An optional get_arr passes over a value that is no array (classifier.output_labels as a string: llama.cpp
    loads the file); a read under a condition is checked where the condition holds for the file (Ernie 4.5
    MoE's interleave step, read for that architecture only); a get_key_or_arr array of another length than
    llama.cpp takes is refused ("wrong array length"); rope.dimension_sections is read only by architectures
    whose loader reads it (Llama's ignores it); a bool array of head counts reads as ones and zeros."""
    assert vkrope.from_gguf(gguf_file(tmp_path, "llama", {"classifier.output_labels": "x"}, name="lab")).theta
    with pytest.raises(ValueError, match="interleave_moe_layer_step is a GGUF FLOAT32; llama.cpp reads it as UINT32"):
        vkrope.from_gguf(gguf_file(tmp_path, "ernie4_5-moe", {"attention.layer_norm_rms_epsilon": 1e-6,
                                                              "interleave_moe_layer_step": 1.0,
                                                              "expert_feed_forward_length": 1024}, name="im"))
    for key in ("feed_forward_length", "expert_used_count"):
        with pytest.raises(ValueError, match=f"{key} holds 3 entries; llama.cpp's get_key_or_arr takes exactly 2"):
            vkrope.from_gguf(gguf_file(tmp_path, "llama", {key: [1, 2, 3]}, name="n" + key))
    assert vkrope.from_gguf(gguf_file(tmp_path, "llama", {"rope.dimension_sections": [1, 2, 3]}, name="sec")) \
        .mrope_section is None
    with pytest.raises(ValueError, match="rope.dimension_sections must be 4"):  # (Qwen2-VL's loader reads them)
        vkrope.from_gguf(gguf_file(tmp_path, "qwen2vl", {"rope.dimension_sections": [1, 2, 3]}, name="sec"))
    bools = ("key_value", [True, True], gguf.GGUFValueType.ARRAY, gguf.GGUFValueType.BOOL)
    assert vkrope.from_gguf(gguf_file(tmp_path, "llama", {"attention.head_count_kv": bools}, name="hb")).head_dim \
        == 128
    one = vkrope.from_gguf(gguf_file(tmp_path, "llama", {"attention.head_count": bools, "embedding_length": 512,
                                                         "attention.head_count_kv": 1}, name="hq"))
    assert one.head_dim == one.rotary_dim == 512  # (get_arr's 0 / 1: one head of the whole width; was refused)


def test_a_factor_tensor_of_another_shape_is_refused(tmp_path):
    """llama.cpp's loader creates each factor tensor with its architecture's shape (Llama's {n_rot/2}, PhiMoE's
    {n_embd/n_head/2}) and refuses a file whose tensor has another ("wrong shape"); vkrope read the first
    rotary_dim / 2 values of a longer one. Trailing ones are the same shape to ggml (ne [64, 1])."""
    for n in (63, 65, 128):
        with pytest.raises(ValueError, match=rf"rope_freqs.weight has shape \[{n}\] \(ggml's ne\); llama.cpp's "
                                             r"llama loader creates it with \[64\]"):
            vkrope.from_gguf(gguf_file(tmp_path, "llama", {}, [("rope_freqs.weight", np.ones(n))], name=f"n{n}"))
    nope = gguf_file(tmp_path, "llama4", {"block_count": 4}, [("rope_freqs.weight", np.ones(100))], name="l4")
    for kw in ({}, {"layer": 3}):  # (layer 3: a NoPE layer, whose RoPE is None; the file is refused all the same)
        with pytest.raises(ValueError, match=r"rope_freqs.weight has shape \[100\]"):
            vkrope.from_gguf(nope, **kw)
    good = np.linspace(1.0, 4.0, 64)
    flat = vkrope.from_gguf(gguf_file(tmp_path, "llama", {}, [("rope_freqs.weight", good.reshape(1, 64))], name="t"))
    assert flat.freq_factors == tuple(np.float32(good))
    with pytest.raises(ValueError, match=r"has shape \[1, 64\] \(ggml's ne\)"):
        vkrope.from_gguf(gguf_file(tmp_path, "llama", {}, [("rope_freqs.weight", good.reshape(64, 1))], name="c"))
    step = {"block_count": 4, "rope.dimension_count": 64, "attention.key_length": 128, "attention.value_length": 128,
            "rope.freq_base_swa": 1e4, "attention.sliding_window": 512, "expert_feed_forward_length": 1,
            "attention.sliding_window_pattern": [0, 1, 1, 1]}  # (full layers rotate 32 channels, sliding ones 64)
    for n in (8, 16, 100):  # (Step 3.5's one tensor: the widest layer's n_rot / 2, whichever layer is asked for)
        for layer in (0, 1):
            with pytest.raises(ValueError, match=rf"rope_freqs.weight has shape \[{n}\].*step35 loader creates it "
                                                 r"with \[32\]"):
                vkrope.from_gguf(gguf_file(tmp_path, "step35", step, [("rope_freqs.weight", np.ones(n))],
                                           name=f"s{n}"), layer=layer)
    full = vkrope.from_gguf(gguf_file(tmp_path, "step35", step, [("rope_freqs.weight", good[:32])], name="s"), layer=0)
    assert full.rotary_dim == 32 and full.freq_factors == tuple(np.float32(good[:16]))  # (the first n_rot(0) / 2)
    with pytest.raises(ValueError, match=r"rope_factors_long.weight has shape \[32\].*phimoe loader creates it "
                                         r"with \[64\]"):  # (2048 / 16 / 2, whatever rope.dimension_count says)
        vkrope.from_gguf(gguf_file(tmp_path, "phimoe", {"rope.dimension_count": 64, "rope.scaling.type": "longrope",
                                                        "rope.scaling.original_context_length": 1024},
                                   [("rope_factors_short.weight", np.ones(32)),
                                    ("rope_factors_long.weight", np.ones(32))], name="p"))


def test_a_key_llama_cpps_loader_requires_is_required(tmp_path):
    """llama.cpp's get_key / get_arr without `false` throw "key not found in model": every Llama file needs
    layer_norm_rms_epsilon (and context_length, base load_hparams'); DeepSeek-V2 needs q_lora_rank except
    on its lite models (27 layers), where the read is skipped. A converted config (from_hf through
    llama.cpp's converter) holds only the RoPE keys and is not held to it."""
    for arch in ("llama", "qwen2"):
        with pytest.raises(ValueError, match=rf"{arch}\.attention\.layer_norm_rms_epsilon is missing: llama.cpp's "
                                             r"loader requires it"):
            vkrope.from_gguf(gguf_file(tmp_path, arch, {}, omit=("attention.layer_norm_rms_epsilon",)))
    w = gguf.GGUFWriter(str(tmp_path / "noctx.gguf"), arch="llama")
    for key, value in (("embedding_length", 2048), ("attention.head_count", 16), ("block_count", 2)):
        w.add_uint32(f"llama.{key}", value)
    with pytest.raises(ValueError, match=r"llama\.context_length is missing: llama.cpp's loader requires it"):
        vkrope.from_gguf(finish(w, (), tmp_path / "noctx.gguf", ("context_length",)))
    mla = {"attention.key_length": 192, "rope.dimension_count": 64}
    with pytest.raises(ValueError, match=r"deepseek2\.attention\.q_lora_rank is missing: llama.cpp's loader "
                                         r"requires it for this file"):
        vkrope.from_gguf(gguf_file(tmp_path, "deepseek2", mla, name="full", omit=("attention.q_lora_rank",)))
    lite = vkrope.from_gguf(gguf_file(tmp_path, "deepseek2", {**mla, "block_count": 27}, name="lite",
                                      omit=("attention.q_lora_rank",)))
    assert (lite.head_dim, lite.rotary_dim) == (64, 64)


def test_a_factor_tensor_the_loader_requires_is_required(tmp_path):
    """Gemma 4's loader creates rope_freqs on its first full-attention layer without TENSOR_NOT_REQUIRED:
    llama.cpp refuses a file without it ('tensor not found'), where vkrope rotated all 256 pairs of a head
    whose proportional RoPE turns 64. Llama's is optional (no scaling)."""
    kv = {"block_count": 2, "attention.sliding_window": 512, "attention.sliding_window_pattern": [True, False],
          "attention.key_length": 512, "rope.dimension_count": 512, "attention.key_length_swa": 256,
          "rope.dimension_count_swa": 256, "attention.value_length": 512, "attention.value_length_swa": 256}
    with pytest.raises(ValueError, match=r"gemma4 loader requires rope_freqs.weight for this file and refuses it"):
        vkrope.from_gguf(gguf_file(tmp_path, "gemma4", kv), layer_type="full_attention")
    with pytest.raises(ValueError, match=r"requires rope_freqs.weight"):  # (the file's, whichever layer is asked)
        vkrope.from_gguf(gguf_file(tmp_path, "gemma4", kv, name="s"), layer_type="sliding_attention")
    divisors = np.where(np.arange(256) < 64, 1.0, 1e30)
    full = vkrope.from_gguf(gguf_file(tmp_path, "gemma4", kv, [("rope_freqs.weight", divisors)], name="f"),
                            layer_type="full_attention")
    assert full.freq_factors == tuple(np.float32(divisors))
    assert vkrope.from_gguf(gguf_file(tmp_path, "llama", {}, name="plain")).freq_factors is None


@pytest.mark.parametrize("arch, kv, tensors, match", [
    ("llama", {"rope.freq_base": 0.0}, (), r"theta .* got 0\.0 \(from llama\.rope\.freq_base = 0\.0\)$"),
    ("llama", {"context_length": 0, "rope.scaling.type": "yarn", "rope.scaling.factor": 4.0}, (),  # (its default
     r"yarn needs llama\.rope\.scaling\.original_context_length \(or context_length"),  # original length: 0)
    ("llama", {"rope.scaling.type": "yarn", "rope.scaling.factor": 4.0, "rope.scaling.attn_factor": -1.0}, (),
     r"attention_factor .* \(from llama\.rope\.scaling\.attn_factor = -1\.0 and the scaling it multiplies in\)$"),
    ("mistral3", {"rope.scaling.type": "yarn", "rope.scaling.factor": 4.0, "rope.scaling.yarn_beta_fast": 0.0}, (),
     r"beta_fast .* \(from mistral3\.rope\.scaling\.yarn_beta_fast = 0\.0\)$"),
    ("grok", {"expert_count": 8, "expert_used_count": 2, "rope.scaling.yarn_attn_factor": 0.5}, (),
     r"by 0\.5 here \(grok\.rope\.scaling\.yarn_attn_factor = 0\.5\), which"),
    ("qwen2", {"attention.head_count": None, "rope.dimension_count": 64}, (),
     r"qwen2\.attention\.head_count is missing or 0"),
    ("llama", {}, [("rope_freqs.weight", np.r_[0.0, np.ones(63)])],
     r"freq_factors must be positive numbers; got 0\.0 \(from the tensor rope_freqs\.weight"),
    ("stablelm", {"rope.dimension_count": 31}, (),  # (an HF partial_rotary_factor was blamed)
     r"rotary_dim must be even and <= head_dim \(128\); got 31 \(from the layer's n_rot: rope\.dimension_count, "
     r"or rope\.dimension_count_swa on a sliding layer, else attention\.key_length, as its graph takes it\)$"),
])
def test_a_refused_value_names_the_gguf_key_it_came_from(tmp_path, arch, kv, tensors, match):
    """A value ModelRope refuses (by its from_hf name) is named as the file holds it: its key and value."""
    with pytest.raises(ValueError, match=match):
        vkrope.from_gguf(gguf_file(tmp_path, arch, kv, tensors))


def test_what_a_third_gguf_adversary_found(tmp_path, capsys):
    """A float32 rope.freq_base of 1e30 (llama.cpp runs it) was refused as past 2**63, a bound for ints; a file
    named .gguf without GGUF's magic was "not JSON"; a bad angle= was checked after the file was read (and
    named it); 'LLaMA' had no close architecture; heads outnumbering the embedding's channels (a head dim of
    0) blamed a missing dimension count only."""
    rope = vkrope.from_gguf(gguf_file(tmp_path, "llama", {"rope.freq_base": 1e30}))
    assert rope.theta == float(np.float32(1e30))
    d = rope.head_dim
    inv = np.float32(1e30) ** (-np.arange(0, d, 2, dtype=np.float64) / d)  # (float64 oracle; float32 power in torch)
    ours = np.asarray(rope.freqs(np.array([[0, 1]])).inv_freq, np.float64)
    assert np.allclose(ours, inv, rtol=4 * 2.0**-23, atol=0)
    with pytest.raises(ValueError, match=r"llama\.rope\.freq_base must be a finite number; got inf$"):
        vkrope.from_gguf(gguf_file(tmp_path, "llama", {"rope.freq_base": math.inf}, name="inf"))
    from vkrope.__main__ import main  # noqa: PLC0415

    (tmp_path / "empty.gguf").write_bytes(b"")
    (tmp_path / "gg.gguf").write_bytes(b"GG")
    for name in ("empty.gguf", "gg.gguf"):
        assert main(["config", str(tmp_path / name)]) == 1
        assert f"{str(tmp_path / name)!r} is not a GGUF file (it does not start with GGUF's magic)" in \
            capsys.readouterr().err
        with pytest.raises(ValueError, match=r"is not a GGUF file \(it does not start with GGUF's magic\)$"):
            vkrope.from_hf(str(tmp_path / name))
    with pytest.raises(ValueError, match=r"^angle must be one of \('float32', 'exact'\); got 'float64'$"):
        vkrope.from_gguf(tmp_path / "absent.gguf", angle="float64")
    with pytest.raises(ValueError, match=r"^angle must be one of \('float32', 'exact'\); got \['a' 'b'\]$"):
        vkrope.RopeFreqs(64, angle=np.array(["a", "b"]))  # (one rule for specs and models; an array named, not
        # numpy's "truth value of an array ... is ambiguous")
    with pytest.raises(ValueError, match=r"architecture 'LLaMA' is not in .*close: llama, "):
        vkrope.from_gguf(gguf_file(tmp_path, "LLaMA", {}))
    with pytest.raises(ValueError, match=r"0 where the heads outnumber the channels"):
        vkrope.from_gguf(gguf_file(tmp_path, "llama", {"attention.head_count": 2**31, "embedding_length": 64},
                                   name="heads"))


def test_a_context_length_of_zero_is_read_as_llama_cpp_loads_it(tmp_path):
    """llama.cpp loads a file whose context_length is 0 (its n_ctx_train; no rope call reads it): the RoPE,
    without a length (it was refused); YaRN's original length defaults to it, and is refused at 0 (above)."""
    rope = vkrope.from_gguf(gguf_file(tmp_path, "llama", {"context_length": 0}))
    other = vkrope.from_gguf(gguf_file(tmp_path, "llama", {}, name="n"))  # (the same rotation, with a length)
    pos = np.array([[0, 5, 4095, 100000]])
    assert rope.max_position_embeddings is None and other.max_position_embeddings
    np.testing.assert_array_equal(np.asarray(rope.cos_sin(pos)), np.asarray(other.cos_sin(pos)))
    yarn = {"context_length": 0, "rope.scaling.type": "yarn", "rope.scaling.factor": 4.0,
            "rope.scaling.original_context_length": 4096}
    assert vkrope.from_gguf(gguf_file(tmp_path, "llama", yarn, name="y")).original_max_position_embeddings == 4096


def test_what_llama_cpp_computes_as_nan_or_reads_elsewhere_is_refused_by_name(tmp_path):
    """An adversary's GGUF files: a YaRN original length past 2^31 - 1 gave finite frequencies where llama.cpp's
    int32 n_ctx_orig makes them NaN; a key width unlike the head width blamed a rope.dimension_count the file
    lacks; a zero head count of layer 0 said the dimension count was missing; a bad longrope factor was not
    located."""
    yarn = {"rope.scaling.type": "yarn", "rope.scaling.factor": 4.0}
    with pytest.raises(ValueError, match=r"original_context_length \(else context_length\) 3000000000 is past "
                                         r"2\^31 - 1: llama.cpp's graph holds it as an int32"):
        vkrope.from_gguf(gguf_file(tmp_path, "llama", {**yarn, "rope.scaling.original_context_length": 3_000_000_000}))
    assert vkrope.from_gguf(gguf_file(tmp_path, "llama", {**yarn, "rope.scaling.original_context_length": 2**31 - 1},
                                      name="edge")).rope_type == "yarn"
    with pytest.raises(ValueError, match=r"qwen2: the rotated width 32 \(llama.cpp's n_rot: .* else its "
                                         r"attention.key_length, else embedding_length / head_count\) is not the "
                                         r"head width 128 \(llama.cpp's n_embd_head_v\(0\)\)"):
        vkrope.from_gguf(gguf_file(tmp_path, "qwen2", {"attention.key_length": 32}, name="key"))
    with pytest.raises(ValueError, match=r"qwen2.rope.dimension_count is 64, yet layer 0's rotated width is 0 \(its "
                                         r"attention.head_count is 0"):
        vkrope.from_gguf(gguf_file(tmp_path, "qwen2", {"attention.head_count": [0, 4], "attention.key_length": 64,
                                                       "rope.dimension_count": 64}, name="heads"))
    with pytest.raises(ValueError, match=r"short_factor must hold positive finite numbers; got 0.0 at \[3\] of 32"):
        vkrope.ModelRope("longrope", 64, 64, 1e4, (("long_factor", (1.0,) * 32),
                                                   ("short_factor", (1.0,) * 3 + (0.0,) + (1.0,) * 28)), 8192, 4096)
