"""vkrope.from_gguf: small GGUF files written with gguf.GGUFWriter, the way
llama.cpp's convert_hf_to_gguf.py writes the matching config.json (the
converter's steps are restated here, test-side), give the spec from_hf
gives for that config: the same rope type or its llama.cpp form, dims,
base, attention factor, and inverse frequencies within 2 float32 ulps
(llama.cpp stores Llama 3.1's smoothing as per-pair divisors, rounded
differently from transformers' step-by-step float32)."""

from __future__ import annotations

import json
import math
import struct
import os
import subprocess
import sys

import gguf
import numpy as np
import pytest

import vkrope
from gguf_writer import finish, write

CONFIGS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "hf_configs")


def config(name: str) -> dict:
    with open(os.path.join(CONFIGS, name + ".json")) as f:
        return json.load(f)


def ulps(a, b):
    return np.abs(np.asarray(a, np.float32).view(np.int32).astype(np.int64)
                  - np.asarray(b, np.float32).view(np.int32).astype(np.int64))


def llama3_factors(cfg: dict) -> np.ndarray:
    """convert_hf_to_gguf.py's LlamaModel.generate_extra_tensors, restated."""
    rs = cfg["rope_scaling"]
    base, dim = cfg["rope_theta"], cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    freqs = 1.0 / (np.float32(base) ** (np.arange(0, dim, 2, dtype=np.float32) / np.float32(dim)))
    factor, lo, hi, old = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"], rs["original_max_position_embeddings"]
    out = []
    for f in freqs.astype(np.float64):
        wl = 2 * math.pi / f
        if wl < old / hi:
            out.append(1.0)
        elif wl > old / lo:
            out.append(factor)
        else:
            s = (old / wl - lo) / (hi - lo)
            out.append(1 / ((1 - s) / factor + s))
    return np.array(out, np.float32)


def test_llama31_from_gguf_matches_config(tmp_path):
    cfg = config("llama-3.1-8b")
    path = write(tmp_path / "llama.gguf", "llama", [
        ("add_context_length", 131072), ("add_embedding_length", 4096), ("add_head_count", 32),
        ("add_rope_freq_base", 500000.0), ("add_rope_dimension_count", 128)],
        [("rope_freqs.weight", llama3_factors(cfg))])
    g, h = vkrope.from_gguf(path), vkrope.from_hf(cfg)
    assert (g.head_dim, g.rotary_dim, g.theta) == (h.head_dim, h.rotary_dim, h.theta)
    assert g.freq_factors is not None and g.interleaved  # llama.cpp's adjacent pairs (its converter permuted Q, K)
    assert ulps(g.inv_freq(), h.inv_freq()).max() <= 2
    assert g.attention_factor == h.attention_factor == 1.0


def test_qwen25_yarn_from_gguf(tmp_path):
    cfg = config("qwen2.5-7b-yarn")
    path = write(tmp_path / "qwen.gguf", "qwen2", [
        ("add_context_length", 32768), ("add_embedding_length", 3584), ("add_head_count", 28),
        ("add_rope_freq_base", 1000000.0), ("add_rope_scaling_type", gguf.RopeScalingType.YARN),
        ("add_rope_scaling_factor", 4.0), ("add_rope_scaling_orig_ctx_len", 32768)])
    g, h = vkrope.from_gguf(path), vkrope.from_hf(cfg)
    assert g.rope_type == h.rope_type == "yarn" and not g.interleaved
    assert np.array_equal(g.inv_freq(), h.inv_freq())
    assert np.float32(g.attention_factor) == np.float32(h.attention_factor)


def test_deepseek_yarn_log_multiplier(tmp_path):
    cfg = config("deepseek-v3")
    rs = cfg["rope_scaling"]
    path = write(tmp_path / "ds.gguf", "deepseek2", [
        ("add_context_length", 163840), ("add_embedding_length", 7168), ("add_head_count", 128),
        ("add_uint32", ("deepseek2.attention.q_lora_rank", 1536)), ("add_rope_dimension_count", 64), ("add_rope_freq_base", 10000.0),
        ("add_rope_scaling_type", gguf.RopeScalingType.YARN), ("add_rope_scaling_factor", float(rs["factor"])),
        ("add_rope_scaling_orig_ctx_len", rs["original_max_position_embeddings"]),
        ("add_rope_scaling_yarn_log_mul", 0.1 * rs["mscale_all_dim"])])
    g, h = vkrope.from_gguf(path), vkrope.from_hf(cfg)
    assert g.rotary_dim == h.rotary_dim == 64
    assert g.interleaved and h.interleaved  # llama.cpp runs deepseek2 with adjacent pairs, transformers interleaves
    assert np.array_equal(g.inv_freq(), h.inv_freq())
    assert g.attention_factor == h.attention_factor == 1.0  # not 0.1 ln(40) + 1: mscale / mscale_all_dim


def test_phi35_longrope_from_gguf(tmp_path):
    cfg = config("phi-3.5-mini")
    rs = cfg["rope_scaling"]
    scale = cfg["max_position_embeddings"] / cfg["original_max_position_embeddings"]
    attn = math.sqrt(1 + math.log(scale) / math.log(cfg["original_max_position_embeddings"]))
    path = write(tmp_path / "phi.gguf", "phi3", [
        ("add_context_length", 131072), ("add_embedding_length", 3072), ("add_head_count", 32),
        ("add_rope_freq_base", 10000.0), ("add_rope_dimension_count", 96),
        ("add_rope_scaling_orig_ctx_len", 4096), ("add_rope_scaling_attn_factors", attn)],
        [("rope_factors_long.weight", rs["long_factor"]), ("rope_factors_short.weight", rs["short_factor"])])
    h = vkrope.from_hf(cfg)
    # llama.cpp picks the factors by the context it allocates per sequence (build_rope_factors: long past
    # n_ctx_orig_yarn), for every position: a file alone does not say which, so no context is an error
    with pytest.raises(ValueError, match=r"context_length: .* has longrope factors, which llama.cpp picks by the "
                                         r"context it allocates per sequence \(the long ones past "
                                         r"rope.scaling.original_context_length = 4096\)"):
        vkrope.from_gguf(path)
    for context, picks in ((4096, 10), (512, 10), (4097, 100000), (131072, 100000)):  # (picks: h's length)
        g = vkrope.from_gguf(path, context_length=context)
        assert g.rope_type == "longrope"
        for n in (10, 4096, 4097, 100000):  # (every position of the run: the context's factors)
            assert np.array_equal(g.inv_freq(n), h.inv_freq(picks)), (context, n)
        assert np.float32(g.attention_factor) == np.float32(h.attention_factor)
        assert g.recompute_at is None  # (llama.cpp keeps its cache: the context's factors throughout)
    assert h.recompute_at == 4097  # (transformers' generate() rotates every key anew there)
    assert vkrope.from_gguf(path, context_length=2**32 - 256) == vkrope.from_gguf(path, context_length=131072)
    # (past 2^32 - 256 llama.cpp's uint32_t GGML_PAD wraps the context to 0: "n_ctx_seq == 0")
    for bad, error in ((0, ValueError), (2**32 - 255, ValueError), (2**32, ValueError), (True, TypeError),
                       (4096.0, TypeError)):
        with pytest.raises(error, match="context_length must be"):
            vkrope.from_gguf(path, context_length=bad)
    plain = write(tmp_path / "plain.gguf", "llama", [
        ("add_context_length", 4096), ("add_embedding_length", 4096), ("add_head_count", 32),
        ("add_rope_freq_base", 10000.0), ("add_rope_dimension_count", 128)])
    assert vkrope.from_gguf(plain, context_length=7) == vkrope.from_gguf(plain)  # (no longrope: not read)


def test_qwen2vl_sections_from_gguf(tmp_path):
    cfg = config("qwen2-vl-7b")
    path = write(tmp_path / "vl.gguf", "qwen2vl", [
        ("add_context_length", 32768), ("add_embedding_length", 3584), ("add_head_count", 28),
        ("add_rope_freq_base", 1000000.0), ("add_rope_dimension_count", 128),
        ("add_rope_dimension_sections", [16, 24, 24, 0])])
    g, h = vkrope.from_gguf(path), vkrope.from_hf(cfg)
    assert g.mrope_section == h.mrope_section == (16, 24, 24) and g.pair_axis == h.pair_axis
    assert np.array_equal(g.inv_freq(), h.inv_freq())


def test_gemma3_layers_from_gguf(tmp_path):
    cfg = config("gemma-3-4b")
    path = write(tmp_path / "g.gguf", "gemma3", [
        ("add_context_length", 131072), ("add_embedding_length", 2560), ("add_head_count", 8),
        ("add_block_count", 34), ("add_sliding_window", 1024), ("add_key_length", 256), ("add_rope_freq_base", 1000000.0),
        ("add_rope_scaling_type", gguf.RopeScalingType.LINEAR), ("add_rope_scaling_factor", 8.0)])
    for lt in ("full_attention", "sliding_attention"):
        g, h = vkrope.from_gguf(path, layer_type=lt), vkrope.from_hf(cfg, layer_type=lt)
        assert g.rope_type == h.rope_type and np.array_equal(g.inv_freq(), h.inv_freq()), lt


def test_gguf_errors(tmp_path):
    with pytest.raises(ValueError, match="^path: no such file: "):
        vkrope.from_gguf(tmp_path / "none.gguf")
    with pytest.raises(ValueError, match="^path: a directory, not a file: "):
        vkrope.from_gguf(tmp_path)
    with pytest.raises(ValueError, match="^path: not a regular file: '/dev/null'"):
        vkrope.from_gguf("/dev/null")
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf file at all")
    with pytest.raises(ValueError, match="not a GGUF file"):
        vkrope.from_gguf(bad)
    path = write(tmp_path / "y.gguf", "qwen2", [
        ("add_embedding_length", 3584), ("add_head_count", 28), ("add_rope_freq_base", 1e6),
        ("add_rope_scaling_type", gguf.RopeScalingType.YARN), ("add_rope_scaling_factor", 4.0),
        ("add_context_length", 0)])  # (llama.cpp requires the key; 0 leaves YaRN no original length)
    with pytest.raises(ValueError, match="original_context_length"):
        vkrope.from_gguf(path)
    with pytest.raises(ValueError, match="layer_type"):
        vkrope.from_gguf(path, layer_type="local")


def test_cli_config_reads_gguf(tmp_path, capsys):
    from vkrope.__main__ import main

    path = write(tmp_path / "g.gguf", "gemma3", [
        ("add_context_length", 131072), ("add_embedding_length", 2560), ("add_head_count", 8),
        ("add_block_count", 34), ("add_sliding_window", 1024), ("add_key_length", 256), ("add_rope_freq_base", 1000000.0),
        ("add_rope_scaling_type", gguf.RopeScalingType.LINEAR), ("add_rope_scaling_factor", 8.0)])
    assert main(["config", path]) == 0
    text = capsys.readouterr().out
    assert "(GGUF), layer type full_attention" in text and "layer type sliding_attention" in text


def test_cli_config_part_of_a_gguf(tmp_path, capsys):
    """--part on a GGUF file: the part named (DeepSeek-V3.2's indexer), each part without it; a part the file's
    graph does not have refused, naming the flag (a Llama file rotates its attention alone)."""
    from vkrope.__main__ import main

    path = write(tmp_path / "l.gguf", "llama", [
        ("add_context_length", 4096), ("add_embedding_length", 256), ("add_head_count", 4),
        ("add_rope_freq_base", 10000.0)])
    assert main(["config", path, "--part", "indexer"]) == 1
    assert "vkrope: error: ValueError: --part: llama.cpp's graph for 'llama' rotates its attention alone " \
        "(--part attention, or none); got 'indexer'" in capsys.readouterr().err
    assert main(["config", path]) == 0
    assert vkrope.from_gguf(path, part="attention").part == ""  # (one way: no part to label, as from_hf's)
    capsys.readouterr()
    ds = write(tmp_path / "ds.gguf", "deepseek32", [
        ("add_embedding_length", 2048), ("add_head_count", 16), ("add_rope_freq_base", 10000.0),
        ("add_rope_dimension_count", 64), ("add_uint32", ("deepseek32.attention.key_length", 192)),
        ("add_uint32", ("deepseek32.attention.indexer.key_length", 128))])
    assert main(["config", ds, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert [(r["part"], r["pairs"], r["head_dim"]) for r in got] == [("attention", "interleaved", 64),
                                                                     ("indexer", "rotate-half", 64)]
    assert main(["config", ds, "--part", "indexer", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["part"] == "indexer"  # (one RoPE: one object)


@pytest.mark.parametrize("kept", ["long", "short"])
def test_a_longrope_gguf_with_one_factor_tensor_reads_the_other_as_ones(tmp_path, kept):
    """An adversary against llama.cpp's source: Phi-3's loader creates rope_factors_long / _short each optionally
    (TENSOR_NOT_REQUIRED), and get_rope_factors hands the rope the one the context picks, a null tensor where the
    file lacks it, which ggml's rope reads as factors of 1 (theta / 1); vkrope refused such a file."""
    rs = config("phi-3.5-mini")["rope_scaling"]
    kv = [("add_context_length", 131072), ("add_embedding_length", 3072), ("add_head_count", 32),
          ("add_rope_freq_base", 10000.0), ("add_rope_dimension_count", 96), ("add_rope_scaling_orig_ctx_len", 4096),
          ("add_rope_scaling_attn_factors", 1.25)]
    one = write(tmp_path / "one.gguf", "phi3", kv, [(f"rope_factors_{kept}.weight", rs[f"{kept}_factor"])])
    ones = write(tmp_path / "ones.gguf", "phi3", kv, [(f"rope_factors_{kept}.weight", rs[f"{kept}_factor"]),
                                                      (f"rope_factors_{'short' if kept == 'long' else 'long'}.weight",
                                                       [1.0] * 48)])
    plain = 1.0 / 10000.0 ** (np.arange(0, 96, 2) / 96)  # (the float64 angles of no factor)
    for context, picked in ((4096, "short"), (8192, "long")):
        g = vkrope.from_gguf(one, context_length=context)
        assert g == vkrope.from_gguf(ones, context_length=context)
        want = plain / np.asarray(rs[f"{kept}_factor"]) if picked == kept else plain
        np.testing.assert_allclose(g.inv_freq(10), want, rtol=3.6e-7)  # (3 float32 ulps: ggml's float32 powf)
        assert np.float32(g.attention_factor) == np.float32(1.25)


def test_cli_config_takes_the_context_a_longrope_gguf_needs(tmp_path, capsys):
    from vkrope.__main__ import main

    rs = config("phi-3.5-mini")["rope_scaling"]
    path = write(tmp_path / "phi.gguf", "phi3", [
        ("add_context_length", 131072), ("add_embedding_length", 3072), ("add_head_count", 32),
        ("add_rope_freq_base", 10000.0), ("add_rope_dimension_count", 96), ("add_rope_scaling_orig_ctx_len", 4096)],
        [("rope_factors_long.weight", rs["long_factor"]), ("rope_factors_short.weight", rs["short_factor"])])
    assert main(["config", path]) == 1
    assert "pass --context-length (llama.cpp" in capsys.readouterr().err  # (the flag, not the keyword)
    assert main(["config", path, "--context-length", "8192", "--json"]) == 0
    import json  # noqa: PLC0415
    read = json.loads(capsys.readouterr().out)
    read = read[0] if isinstance(read, list) else read
    assert read["rope_type"] == "longrope"
    with pytest.raises(SystemExit):  # (argparse's own usage error)
        main(["config", path, "--context-length", "0"])
    assert "must be a positive integer; got '0'" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # (5000 digits, past Python's int parsing: named, cut, not echoed whole)
        main(["config", path, "--context-length", "9" * 5000])
    err = capsys.readouterr().err
    assert "must be a positive integer; got '99999999999... (5000 characters)" in err and len(err) < 300
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(config("phi-3.5-mini")))
    assert main(["config", str(cfg), "--context-length", "8192"]) == 1
    assert "--context-length: applies to GGUF files" in capsys.readouterr().err


def test_gguf_layer_types_and_bad_tensors(tmp_path):
    path = write(tmp_path / "l.gguf", "llama", [
        ("add_embedding_length", 4096), ("add_head_count", 32), ("add_rope_freq_base", 500000.0)])
    with pytest.raises(ValueError, match="one RoPE for every layer"):
        vkrope.from_gguf(path, layer_type="sliding_attention")
    bad = llama3_factors(config("llama-3.1-8b"))
    bad[3] = np.nan
    path = write(tmp_path / "nan.gguf", "llama", [
        ("add_embedding_length", 4096), ("add_head_count", 32), ("add_rope_freq_base", 500000.0)],
        [("rope_freqs.weight", bad)])
    with pytest.raises(ValueError, match="freq_factors must be positive numbers; got nan"):
        vkrope.from_gguf(path)
    bad[3] = np.inf  # (ggml divides the pair's frequency by it: 0, a pair that does not turn)
    path = write(tmp_path / "inf.gguf", "llama", [
        ("add_embedding_length", 4096), ("add_head_count", 32), ("add_rope_freq_base", 500000.0)],
        [("rope_freqs.weight", bad)])
    cos, sin = vkrope.from_gguf(path).cos_sin(np.array([[12345]]))
    assert (cos[0, 0, 3], sin[0, 0, 3]) == (1.0, 0.0) and sin[0, 0, 2] != 0
    path = write(tmp_path / "heads.gguf", "llama", [
        ("add_embedding_length", 256), ("add_head_count", [4, 4, 4]), ("add_key_length", 64),
        ("add_rope_freq_base", 10000.0), ("add_block_count", 3)])
    assert vkrope.from_gguf(path).head_dim == 64
    path = write(tmp_path / "heads2.gguf", "llama", [  # (llama.cpp's get_key_or_arr: exactly block_count)
        ("add_embedding_length", 256), ("add_head_count", [4, 4, 4]), ("add_rope_freq_base", 10000.0)])
    with pytest.raises(ValueError, match="head_count must be a count, or 2 counts"):
        vkrope.from_gguf(path)
    path = write(tmp_path / "neg.gguf", "llama", [
        ("add_embedding_length", 256), ("add_head_count", 4), ("add_rope_freq_base", -5.0)])
    with pytest.raises(ValueError, match="theta"):
        vkrope.from_gguf(path)


def test_gguf_architectures_and_their_pairs(tmp_path):
    """llama.cpp's rope table: adjacent pairs, NeoX pairs, M-RoPE by sections
    for glm4; an architecture it does not list is refused, not guessed."""
    base = [("add_embedding_length", 512), ("add_head_count", 4), ("add_rope_freq_base", 10000.0)]
    for arch, inter in (("llama", True), ("granite", True), ("qwen3", False), ("gpt-oss", False),
                        ("glm4", True), ("glm4moe", False)):
        extra = [("add_sliding_window", 128)] if arch == "gpt-oss" else []  # (llama.cpp requires it there)
        assert vkrope.from_gguf(write(tmp_path / f"{arch}.gguf", arch, base + extra)).interleaved is inter, arch
    glm = vkrope.from_gguf(write(tmp_path / "glmv.gguf", "glm4", base + [("add_rope_dimension_sections",
                                                                            [16, 24, 24, 0])]))
    assert glm.mrope_section == (16, 24, 24) and not glm.interleaved
    with pytest.raises(ValueError, match="not in vkrope's table of llama.cpp"):
        vkrope.from_gguf(write(tmp_path / "new.gguf", "brand-new-arch", base))
    with pytest.raises(ValueError, match="not in vkrope's table of llama.cpp"):  # (LLM_ARCH_UNKNOWN's name:
        vkrope.from_gguf(write(tmp_path / "unknown.gguf", "(unknown)", base))  # llama.cpp's "unknown model architecture")
    with pytest.raises(ValueError, match="llama.block_count is missing: llama.cpp's loader requires it"):
        vkrope.from_gguf(write(tmp_path / "nb.gguf", "llama", base, block_count=False))


def test_gemma4_sliding_layers_from_gguf(tmp_path):
    """A Gemma 4 GGUF as llama.cpp's converter writes it: the sliding layers' head width, rotary dim and base
    in *_swa keys, rope_freqs (proportional RoPE as divisors) for the full layers only."""
    w = gguf.GGUFWriter(str(tmp_path / "g4.gguf"), arch="gemma4")
    w.add_context_length(131072)
    w.add_block_count(6)
    w.add_sliding_window(512)
    w.add_array("gemma4.attention.sliding_window_pattern", [True] * 5 + [False])
    w.add_embedding_length(2560)
    w.add_head_count(8)
    w.add_key_length(512)
    w.add_value_length(512)  # (its graph asserts each layer's key and value widths equal)
    w.add_uint32("gemma4.attention.key_length_swa", 256)
    w.add_uint32("gemma4.attention.value_length_swa", 256)
    w.add_rope_dimension_count(512)
    w.add_uint32("gemma4.rope.dimension_count_swa", 256)
    w.add_rope_freq_base(1e6)
    w.add_float32("gemma4.rope.freq_base_swa", 10000.0)
    divisors = np.where(np.arange(256) < 64, 1.0, 1e30).astype(np.float32)  # pairs past 64 do not turn
    path = finish(w, [("rope_freqs.weight", divisors)], tmp_path / "g4.gguf")
    sliding = vkrope.from_gguf(path, layer_type="sliding_attention")
    assert (sliding.head_dim, sliding.rotary_dim, sliding.theta, sliding.freq_factors) == (256, 256, 1e4, None)
    full = vkrope.from_gguf(path, layer_type="full_attention")
    assert (full.head_dim, full.rotary_dim, full.theta) == (512, 512, 1e6)
    assert full.freq_factors is not None and np.count_nonzero(full.inv_freq() > 1e-20) == 64
    with pytest.raises(ValueError, match="pass layer_type='sliding_attention' or 'full_attention'"):
        vkrope.from_gguf(path)
    # the exact angle: the 1e30 divisors leave frequencies below the 2^-64 it holds; those pairs are still
    exact = vkrope.from_gguf(path, layer_type="full_attention", angle="exact")
    inv = exact.freqs().inv_freq64
    assert np.count_nonzero(inv) == 64 and np.allclose(inv[:64], 1e6 ** -(np.arange(64) / 256), rtol=1e-14, atol=0)
    q = np.random.default_rng(3).standard_normal((1, 1, 5, 512)).astype(np.float32)
    pos = np.array([[0, 1, 1000, 65535, 16777215]])
    y, _ = vkrope.apply_rotary_pos_emb(q, q, exact, pos)
    assert np.array_equal(y[..., 64:256], q[..., 64:256]) and np.array_equal(y[..., 320:], q[..., 320:])
    ang = pos[0, :, None] * inv[None, :64]
    want = q[0, 0, :, :64] * np.cos(ang) - q[0, 0, :, 256:320] * np.sin(ang)
    assert np.abs(y[0, 0, :, :64] - want).max() < 1e-5 * np.abs(q).max()


def test_bert_gguf_has_no_rope(tmp_path):
    """llama.cpp's rope table lists bert, but its graph adds learned position embeddings and never rotates."""
    for arch in ("bert", "jina-bert-v2"):
        path = write(tmp_path / f"{arch}.gguf", arch, [("add_embedding_length", 768), ("add_head_count", 12)])
        for layer in (None, 0):  # (NoRopeLayers, whichever layer is asked for)
            with pytest.raises(vkrope.NoRopeLayers, match=f"'{arch}' applies no RoPE in llama.cpp's graph") as e:
                vkrope.from_gguf(path, layer=layer)
            assert e.value.reason == f"architecture '{arch}' applies no RoPE in llama.cpp's graph"
    path = write(tmp_path / "nomic.gguf", "nomic-bert", [("add_embedding_length", 768), ("add_head_count", 12)])
    assert vkrope.from_gguf(path).head_dim == 64  # nomic-bert does rotate
    # (GPT-J rotates; llama.cpp's rope table lists it as none and builds no graph for it: refused, not "no RoPE")
    path = write(tmp_path / "gptj.gguf", "gptj", [("add_embedding_length", 768), ("add_head_count", 12)])
    with pytest.raises(ValueError, match="'gptj': vkrope cannot read where its graph rotates") as e:
        vkrope.from_gguf(path)
    assert not isinstance(e.value, vkrope.NoRopeLayers)


def test_a_vision_projector_gguf_is_refused_not_called_ropeless(tmp_path):
    """An mmproj file (arch clip): llama.cpp refuses it as a main model, and its vision encoders rotate in
    tools/mtmd (Qwen2-VL's ggml_rope_multi, Pixtral's 2-D RoPE), which vkrope does not read: a ValueError saying
    so, not NoRopeLayers ("applies no RoPE"), whichever layer is asked for; the CLI exits 1."""
    path = write(tmp_path / "mmproj.gguf", "clip", [("add_string", ("clip.projector_type", "qwen2.5vl_merger")),
                                                    ("add_uint32", ("clip.vision.attention.head_count", 16))])
    for layer in (None, 0):
        with pytest.raises(ValueError, match="'clip' is not a model llama.cpp runs alone .*CLIP cannot be used as "
                           r"main model.*vision projector \(mmproj\) file") as e:
            vkrope.from_gguf(path, layer=layer)
        assert not isinstance(e.value, vkrope.NoRopeLayers)
    run = subprocess.run([sys.executable, "-m", "vkrope", "config", str(path)], capture_output=True, text=True)
    assert run.returncode == 1 and "vision projector" in run.stderr, (run.returncode, run.stdout, run.stderr)


def test_a_head_count_not_dividing_the_embedding_reads_llama_cpps_integer_head(tmp_path):
    """llama.cpp's load_hparams takes the head as embedding_length / head_count in integers (n_embd_head_k_full)
    and loads a file whose heads do not divide it (Llama's invalid-n_rot check compares two equal numbers):
    250 channels over 4 heads rotate a head of 62, as its graph does; not refused."""
    for arch in ("llama", "qwen2"):
        path = write(tmp_path / f"{arch}.gguf", arch, [("add_embedding_length", 250), ("add_head_count", 4)])
        rope = vkrope.from_gguf(path)
        assert (rope.head_dim, rope.rotary_dim) == (62, 62)
        np.testing.assert_allclose(rope.freqs().inv_freq64, 10000.0 ** -(np.arange(31) * 2 / 62), rtol=1e-15)


def _arch_file(tmp_path, arch, n_layer, extra=(), tensors=()):
    base = [("add_embedding_length", 512), ("add_head_count", 4), ("add_rope_freq_base", 50000.0),
            ("add_block_count", n_layer)]
    return write(tmp_path / f"{arch}-{n_layer}.gguf", arch, base + list(extra), tensors)


def test_gguf_layers_without_rope(tmp_path):
    """llama.cpp's graphs skip RoPE on some layers (read from its code by scripts/gguf_arch_table.py):
    Cohere 2 rotates only its sliding layers (every 4th is full), Llama 4 and SmolLM3 skip every 4th layer,
    EXAONE 4 32B (64 layers) rotates only its sliding layers, the 1.2B (no sliding layers) all."""
    cohere = _arch_file(tmp_path, "cohere2", 8, [("add_sliding_window", 4096)])
    rope = vkrope.from_gguf(cohere)
    assert rope.nope_layers == (3, 7) and rope.theta == 50000.0 and rope.interleaved
    assert vkrope.from_gguf(cohere, layer=3) is None and vkrope.from_gguf(cohere, layer=2) == \
        vkrope.from_gguf(cohere, layer_type="sliding_attention")
    assert vkrope.from_gguf(cohere, layer_type="full_attention") is None
    for arch in ("llama4", "smollm3"):
        rope = vkrope.from_gguf(_arch_file(tmp_path, arch, 8))
        assert rope.nope_layers == (3, 7), arch
    big = vkrope.from_gguf(_arch_file(tmp_path, "exaone4", 64))
    assert big.nope_layers == tuple(range(3, 64, 4)) and not big.interleaved
    assert vkrope.from_gguf(_arch_file(tmp_path, "exaone4", 30)).nope_layers == ()
    # a Llama 4 file whose sliding window is 0: llama.cpp sets the NoPE step to the layer count ("always use
    # rope", says its comment), its graph's (il + 1) % step != 0 then skips the last layer, which scales Q by the
    # attention temperature, left 0 on that path: set_input's GGML_ASSERT aborts at the first batch. Refused
    # (it was read, nope_layers (7,)), whichever layer is asked for
    zero = _arch_file(tmp_path, "llama4", 8, [("add_sliding_window", 0)])
    for layer in (None, 0, 7):
        with pytest.raises(ValueError, match=r"llama4: the attention temperature fails llama\.cpp's assert "
                                             r"f_attn_temp_scale != 0.* scales Q by it on layer 7"):
            vkrope.from_gguf(zero, layer=layer)


def test_gguf_per_layer_matches_hf(tmp_path):
    """Gemma 3 per layer index: the layer type and RoPE from_hf gives for it (transformers' own rules)."""
    cfg = config("gemma-3-4b")
    path = write(tmp_path / "g.gguf", "gemma3", [
        ("add_context_length", 131072), ("add_embedding_length", 2560), ("add_head_count", 8),
        ("add_block_count", cfg["text_config"]["num_hidden_layers"]), ("add_sliding_window", 1024),
        ("add_key_length", 256), ("add_rope_freq_base", 1000000.0),
        ("add_rope_scaling_type", gguf.RopeScalingType.LINEAR), ("add_rope_scaling_factor", 8.0)])
    for i in range(cfg["text_config"]["num_hidden_layers"]):  # (Gemma3TextConfig: every 6th layer full)
        lt = "full_attention" if (i + 1) % 6 == 0 else "sliding_attention"
        g, h = vkrope.from_gguf(path, layer=i), vkrope.from_hf(cfg, layer_type=lt)
        assert g.layer_type == lt and g.rope_type == h.rope_type and np.array_equal(g.inv_freq(), h.inv_freq()), i
    with pytest.raises(ValueError, match="layer must be in"):
        vkrope.from_gguf(path, layer=34)
    with pytest.raises(TypeError, match="layer must be an int"):
        vkrope.from_gguf(path, layer=1.0)
    with pytest.raises(ValueError, match="is not layer 5's"):
        vkrope.from_gguf(path, layer=5, layer_type="sliding_attention")


def test_gguf_sliding_base_and_scale_as_llama_cpp(tmp_path):
    """Gemma 2 and Cohere 2 give sliding layers the full base (and scale) when the file has no
    freq_base_swa; Gemma 3 keeps llama_hparams' default 10000, unscaled."""
    g2 = _arch_file(tmp_path, "gemma2", 4, [("add_sliding_window", 4096)])
    assert vkrope.from_gguf(g2, layer_type="sliding_attention").theta == 50000.0
    assert vkrope.from_gguf(g2).nope_layers == ()
    g3 = _arch_file(tmp_path, "gemma3", 6, [("add_sliding_window", 512), ("add_rope_scaling_type",
                                            gguf.RopeScalingType.LINEAR), ("add_rope_scaling_factor", 8.0)])
    s = vkrope.from_gguf(g3, layer=0)
    assert (s.theta, s.rope_type, s.layer_type) == (10000.0, "default", "sliding_attention")
    f = vkrope.from_gguf(g3, layer=5)
    assert (f.theta, f.rope_type, f.layer_type) == (50000.0, "linear", "full_attention")
    # without a sliding window llama.cpp makes no layer of Gemma 3 sliding: one RoPE
    assert vkrope.from_gguf(_arch_file(tmp_path, "gemma3", 7)).theta == 50000.0


def test_gguf_refusals_read_from_llama_cpp(tmp_path):
    """starcoder (listed as "normal" RoPE; its graph adds learned positions) and baichuan (RoPE or ALiBi by
    model size) are refused; Granite with rope.scaling.finetuned false rotates no layer (NoRopeLayers where no
    layer is named: from_gguf then gives a RoPE or raises)."""
    from vkrope import NoRopeLayers

    with pytest.raises(ValueError, match="'starcoder' applies no RoPE in llama.cpp's graph"):
        vkrope.from_gguf(_arch_file(tmp_path, "starcoder", 2))
    with pytest.raises(ValueError, match="'baichuan': vkrope cannot read where its graph rotates"):
        vkrope.from_gguf(_arch_file(tmp_path, "baichuan", 2))
    path = _arch_file(tmp_path, "granite", 4, [("add_rope_scaling_finetuned", False)])
    with pytest.raises(NoRopeLayers, match=r"^path: .* \(granite\): llama\.cpp's graph applies RoPE on none of "
                                           r"its layers \(its graph rotates where .*has_rope.*; this file's "
                                           r"rope\.scaling\.finetuned False\)") as said:
        vkrope.from_gguf(path)
    assert said.value.reason == "llama.cpp: its graph rotates where ((has_rope(il))); this file's " \
                                "rope.scaling.finetuned False"  # (the key that turns it off, named)
    assert vkrope.from_gguf(path, layer=0) is None
    assert vkrope.from_gguf(_arch_file(tmp_path, "granite", 3)).nope_layers == ()


def test_a_gguf_layer_pattern_vkrope_cannot_read_is_said_as_llama_cpp_s(tmp_path, monkeypatch):
    """Where which layers rotate is unknown the summary said "the config lacks the key that says (pass it as
    transformers saves it)", a config.json's remedy a GGUF file has none of; it gives the plan's own reason
    (ModelRope.nope_why), and layer= is refused. Qwen3.5's pattern, a loop once unknown, is read; at a
    full_attention_interval of 0 llama.cpp divides by zero loading the file, and vkrope refuses it."""
    sections = ("add_rope_dimension_sections", [24, 20, 20, 0])
    assert vkrope.from_gguf(_arch_file(tmp_path, "qwen35", 8, [sections])).nope_layers == (0, 1, 2, 4, 5, 6)
    with pytest.raises(ValueError, match=r"qwen35: llama\.cpp divides an integer by zero in \(i \+ 1\) % "
                                         r"full_attn_interval on this file \(it crashes there\)"):
        vkrope.from_gguf(_arch_file(tmp_path, "qwen35", 9, [sections, ("add_full_attention_interval", 0)]))
    from vkrope.models import gguf_program  # (a rule the table could not translate, as a newer llama.cpp may hold)

    monkeypatch.setitem(gguf_program.table()["archs"], "llama", {**gguf_program.table()["archs"]["llama"],
                                                                "rotates": "mystery(il)"})
    path = _arch_file(tmp_path, "llama", 4)
    rope = vkrope.from_gguf(path)
    assert rope.nope_layers is None and rope.summary()["layers_without_rope"] == (
        "unknown: llama.cpp's graph for 'llama' rotates where mystery(il) (mystery() is not known for this file) "
        "(layer= is refused)")
    with pytest.raises(ValueError, match="which layers rotate is unknown"):
        vkrope.from_gguf(path, layer=0)


def test_cli_config_gguf_layers_without_rope(tmp_path, capsys):
    """A GGUF file's layers without RoPE are listed; a file none of whose layers rotates says so, and why."""
    from vkrope.__main__ import main

    path = _arch_file(tmp_path, "granite", 4, [("add_rope_scaling_finetuned", False)])
    assert main(["config", path]) == 0
    said = capsys.readouterr().out
    assert said == f"{path} (GGUF): no layer applies RoPE (llama.cpp: its graph rotates where ((has_rope(il))); this " \
                   "file's rope.scaling.finetuned False)\n"
    hybrid = _arch_file(tmp_path, "lfm2", 4, [("add_head_count_kv", [0, 0, 0, 0])])  # (every layer recurrent)
    assert main(["config", hybrid]) == 0
    assert "this file's attention.head_count_kv [0, 0, 0, 0])" in capsys.readouterr().out
    every = ("add_array", ("qwen35.attention.recurrent_layers", [True] * 4))  # (so the interval is not read)
    hybrid = _arch_file(tmp_path, "qwen35", 4, [("add_rope_dimension_sections", [24, 20, 20, 0]), every,
                                                 ("add_full_attention_interval", 2)])
    assert main(["config", hybrid]) == 0
    assert capsys.readouterr().out.endswith("this file's attention.recurrent_layers [True, True, True, True])\n")
    heads = write(tmp_path / "lfm2-heads.gguf", "lfm2", [("add_embedding_length", 512), ("add_rope_freq_base", 5e4),
                                                          ("add_block_count", 4), ("add_head_count", [0] * 4)])
    assert main(["config", heads]) == 0  # (no head_count_kv: llama.cpp's n_head_kv is n_head, so that decides)
    assert capsys.readouterr().out.endswith("this file's attention.head_count [0, 0, 0, 0])\n")
    period = ("add_uint32", ("cohere2.attention.sliding_window_pattern", 1))  # (every layer full: none rotates)
    assert main(["config", _arch_file(tmp_path, "cohere2", 8, [("add_sliding_window", 4096), period])]) == 0
    assert "this file's attention.sliding_window_pattern 1" in capsys.readouterr().out

    assert main(["config", _arch_file(tmp_path, "cohere2", 8, [("add_sliding_window", 4096)])]) == 0
    assert "layers_without_rope" in capsys.readouterr().out


def test_gguf_sliding_pattern_from_the_file(tmp_path):
    """load_swa_pattern: the file's array, else its period, before the code's default (Gemma 3: 6)."""
    arr = _arch_file(tmp_path, "gemma3", 4, [("add_sliding_window", 512),
                                            ("add_array", ("gemma3.attention.sliding_window_pattern",
                                                           [True, False, True, False]))])
    assert [vkrope.from_gguf(arr, layer=i).layer_type for i in range(4)] == \
        ["sliding_attention", "full_attention"] * 2
    period = _arch_file(tmp_path, "gemma3", 3, [("add_sliding_window", 512),
                                               ("add_uint32", ("gemma3.attention.sliding_window_pattern", 3))])
    assert [vkrope.from_gguf(period, layer=i).layer_type for i in range(3)] == \
        ["sliding_attention", "sliding_attention", "full_attention"]


def test_gguf_unknown_per_layer_is_refused(tmp_path):
    """Where llama.cpp decides per layer by what vkrope cannot evaluate (DeepSeek-V4's graph), a layer index is
    refused; the plain read says the rest is unknown. Bailing-MoE 3's recurrent layers, a loop the table could
    not run, are read now."""
    ds4 = _arch_file(tmp_path, "deepseek4", 4, [("add_sliding_window", 128)])
    for kw in ({"layer": 0}, {}):  # (its graph calls RoPE under conditions on its compression state too)
        with pytest.raises(ValueError, match="cannot read where its graph rotates"):
            vkrope.from_gguf(ds4, **kw)
    from vkrope.models import gguf_layers, gguf_program  # (a statement the table could not read, where its condition holds)
    entry = {"rotates": "True", "pairs": "norm", "hparams": [["True", "unknown", "hparams.x[il] = 1;"]]}
    lp = gguf_layers.plan("test", entry, {"block_count": 2, "attention.head_count": 4, "embedding_length": 64, "context_length": 512})
    assert lp.sliding is None and "does not run: hparams.x[il] = 1;" in lp.unknown
    # (a loop that sets some layers of a field whose default is unknown: the others stay unknown, not None read
    # as false)
    loop = {"rotates": "not is_recr(il)", "pairs": "norm",
            "hparams": [["True", "per_layer", "is_recr_impl", "i", "0", "1", "i == 0"]]}
    lp = gguf_layers.plan("test", loop, {"block_count": 2, "attention.head_count": 4, "embedding_length": 64, "context_length": 512})
    assert lp.rotates is None and "is_recr_impl[il] has no value here" in lp.unknown
    # (an integer division by zero is llama.cpp's crash only where C evaluates it: after an unknown operand of
    # and / or, or on a side of a ternary whose test is unknown, it is unknown; decided before it, a refusal)
    hp = gguf_program.Hparams({"k": 3, "n": 0, "f": False}, {})
    for unknown in ("x and k % n == 0", "x or k % n == 0", "(k % n) if x else 1", "1 if x else (k % n)"):
        with pytest.raises(gguf_layers.Unknown, match="divides an integer by zero"):
            hp.evaluate(unknown)
    assert hp.evaluate("f and k % n == 0") is False
    for crash in ("k % n == 0 and x", "(k % n) if True else 1"):
        with pytest.raises(gguf_program.Refused, match="divides an integer by zero"):
            hp.evaluate(crash)
    bl3 = _arch_file(tmp_path, "bailingmoe3", 4, [("add_head_count_kv", [0, 4, 0, 4])])  # (its loop, now run)
    assert vkrope.from_gguf(bl3).nope_layers == (0, 2) and vkrope.from_gguf(bl3, layer=0) is None


def test_gguf_mrope_needs_two_sections(tmp_path):
    """llama_hparams::use_mrope(): the first two sections set; GLM-4 with only a temporal one stays normal."""
    one = _arch_file(tmp_path, "glm4", 2, [("add_rope_dimension_sections", [16, 0, 0, 0])])
    assert vkrope.from_gguf(one).mrope_section is None and vkrope.from_gguf(one).interleaved


def test_gguf_metadata_llama_cpp_would_reject(tmp_path):
    """What llama.cpp refuses to load is a ValueError naming the key, never an answer: more layers than
    LLAMA_MAX_LAYERS, a required array missing (Gemma 4's sliding pattern), a key of the wrong type."""
    with pytest.raises(ValueError, match=r"gemma2\.block_count must be an integer in \[1, 512\]"):
        vkrope.from_gguf(_arch_file(tmp_path, "gemma2", 10**6))
    with pytest.raises(ValueError, match="sliding_window_pattern is missing: llama.cpp's loader requires it"):
        vkrope.from_gguf(_arch_file(tmp_path, "gemma4", 4, [("add_sliding_window", 512)]))
    with pytest.raises(ValueError, match=r"gemma3\.attention\.sliding_window is a GGUF STRING; llama.cpp reads it as UINT32"):
        vkrope.from_gguf(_arch_file(tmp_path, "gemma3", 4, [("add_string", ("gemma3.attention.sliding_window", "x"))]))
    with pytest.raises(ValueError, match=r"nextn_predict_layers must be an integer in \[0, block_count 4\]; got 5"):
        vkrope.from_gguf(_arch_file(tmp_path, "gemma2", 4, [("add_uint32", ("gemma2.nextn_predict_layers", 5))]))
    # (llama.cpp asserts n_layer_nextn <= n_layer_all: a file of MTP layers alone loads, its main graph empty)
    with pytest.raises(ValueError, match="each of gemma2's layers is a next-token-prediction layer"):
        vkrope.from_gguf(_arch_file(tmp_path, "gemma2", 4, [("add_uint32", ("gemma2.nextn_predict_layers", 4))]))
    short = _arch_file(tmp_path, "gemma3", 4, [("add_sliding_window", 512),
                                              ("add_array", ("gemma3.attention.sliding_window_pattern", [False]))])
    # (a short array fills its first entries; the rest keep llama_hparams' default: not sliding)
    assert [vkrope.from_gguf(short, layer=i).layer_type for i in range(4)] == [None] * 4


def _header(kvs: bytes, n_kv: int, n_tensors: int = 0) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", 3, n_tensors, n_kv) + kvs


def _gguf_string(s: bytes) -> bytes:
    return struct.pack("<Q", len(s)) + s


ARCH = _gguf_string(b"general.architecture") + struct.pack("<I", 8) + _gguf_string(b"llama")


@pytest.mark.parametrize("kvs, n_kv, n_tensors, match", [
    (ARCH + _gguf_string(b"x") + struct.pack("<IIQ", 9, 0, 2**30), 2, 0, r"metadata 1 \(1073741824 values\)"),
    (ARCH + _gguf_string(b"x") + struct.pack("<IIQ", 9, 0, 2**40), 2, 0,
     r"metadata 1's length is 1099511627776, past llama.cpp's limit of 2\^30"),
    (ARCH + _gguf_string(b"x") + struct.pack("<IIQ", 9, 8, 2**40), 2, 0, "metadata 1"),  # strings
    (ARCH + _gguf_string(b"x") + struct.pack("<IQ", 8, 2**30), 2, 0, "metadata 1 needs 1073741824 bytes"),
    (ARCH + _gguf_string(b"x") + struct.pack("<IQ", 8, 2**62), 2, 0, "metadata 1's length is 4611686018427387904, past"),
    (ARCH + _gguf_string(b"x") + struct.pack("<IIQQ", 9, 8, 1, 2**31), 2, 0, "metadata 1's length is 2147483648, past"),
    (ARCH, 2**40, 0, r"the header counts 1099511627776 metadata entries and 0 tensors, more than the file's \d+ "
                     "bytes left can hold"),
    (ARCH, 1, 2**40, r"counts 1 metadata entries and 1099511627776 tensors"),
    (ARCH, 2, 0, "metadata key 1"),  # (within what the bytes could hold: the walk finds the key missing)
    (ARCH + _gguf_string(b"x") + struct.pack("<I", 77), 2, 0, "value type 77"),
    (ARCH + _gguf_string(b"x") + struct.pack("<IIQ", 9, 77, 1), 2, 0, "metadata 1: an array of value type 77"),
    (ARCH + _gguf_string(b"x") + struct.pack("<I", 9) + struct.pack("<IQ", 9, 1) * 9 + struct.pack("<IQ", 0, 0), 2, 0,
     "an array of arrays, which llama.cpp's gguf_init refuses"),
])
def test_a_header_claiming_more_than_the_file_holds_is_refused_at_once(tmp_path, kvs, n_kv, n_tensors, match):
    """gguf's reader trusted the header: a 100-byte file whose array claimed
    2^40 elements made it loop, its memory growing, for ever (an adversarial
    helper's file). Every count and length is now held to the file's bytes
    first (vkrope/models/gguf_file.py): a ValueError naming the field."""
    path = tmp_path / "lying.gguf"
    path.write_bytes(_header(kvs, n_kv, n_tensors))
    with pytest.raises(ValueError, match=match):
        vkrope.from_gguf(str(path))


def test_a_file_shorter_than_the_header_is_named(tmp_path):
    """The magic and half a version: the walk names the header it cannot
    read (not a bare struct.error from unpacking the version)."""
    path = tmp_path / "short.gguf"
    path.write_bytes(b"GGUF\x03\x00")
    with pytest.raises(ValueError, match=r"\(ValueError: the start \(magic and version\) needs 8 bytes at offset 0; the file has 6 left\)"):
        vkrope.from_gguf(str(path))


def test_arrays_of_strings_and_big_endian_files_still_read(tmp_path):
    """What gguf's writer makes passes the walk: a vocabulary's string
    array, 64-bit values (each 8 bytes: the keys after them are found), a
    big-endian file; an array of arrays, which gguf writes and llama.cpp's
    gguf_init refuses, is refused."""
    kv = [("add_uint32", ("llama.context_length", 4096)), ("add_uint32", ("llama.embedding_length", 256)),
          ("add_uint64", ("test.u64", 2**40 + 3)), ("add_int64", ("test.i64", -5)),
          ("add_float64", ("test.f64", 0.25)),
          ("add_uint32", ("llama.attention.head_count", 4)), ("add_uint32", ("llama.block_count", 2)),
          ("add_array", ("tokenizer.ggml.tokens", ["a", "bb", "ccc"] * 300))]
    little = vkrope.from_gguf(write(tmp_path / "le.gguf", "llama", kv))
    w = gguf.GGUFWriter(str(tmp_path / "be.gguf"), arch="llama", endianess=gguf.GGUFEndian.BIG)
    for add, (key, value) in kv:
        getattr(w, add)(key, value)
    finish(w, (), tmp_path / "be.gguf")
    assert vkrope.from_gguf(str(tmp_path / "be.gguf")) == little and little.head_dim == 64
    nested = write(tmp_path / "nested.gguf", "llama", kv + [("add_array", ("test.nested", [[1, 2], [3, 4, 5]]))])
    with pytest.raises(ValueError, match=r"is not a GGUF file \(ValueError: metadata 9: an array of arrays, which "
                                         r"llama.cpp's gguf_init refuses\)"):
        vkrope.from_gguf(nested)


def test_a_rope_key_that_is_not_utf8_is_named_once(tmp_path):
    """A key the rope rules read, not UTF-8: named once, after the file and the architecture (its place was said
    twice: "p: qwen2.path: 'p': qwen2.rope.scaling.type ...")."""
    path = write(tmp_path / "u.gguf", "qwen2", [("add_embedding_length", 1024), ("add_head_count", 8),
                                                ("add_rope_scaling_type", gguf.RopeScalingType.YARN)])
    data = open(path, "rb").read()
    assert data.count(b"yarn") == 1
    open(path, "wb").write(data.replace(b"yarn", b"\xffarn"))
    with pytest.raises(ValueError) as info:
        vkrope.from_gguf(path)
    assert str(info.value) == f"{path}: qwen2: qwen2.rope.scaling.type is not UTF-8 text"


def test_a_key_that_is_not_utf8_is_named(tmp_path):
    """Strings are decoded when asked for: a value that is not UTF-8 is
    named (a bare UnicodeDecodeError was all a non-UTF-8 architecture gave)."""
    arch = _gguf_string(b"general.architecture") + struct.pack("<I", 8) + _gguf_string(b"\xffllama")
    path = tmp_path / "nonutf8.gguf"
    path.write_bytes(_header(arch, 1))
    with pytest.raises(ValueError, match="general.architecture is not UTF-8 text"):
        vkrope.from_gguf(str(path))
