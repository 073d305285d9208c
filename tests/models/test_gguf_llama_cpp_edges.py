"""Where llama.cpp runs a GGUF otherwise than transformers runs the same model (an adversarial helper's
findings against llama.cpp's own source): from_gguf reads the file as llama.cpp runs it (against
tests/oracles/oracle_ggml.py, ggml's rope restated in float64), or refuses it."""

from __future__ import annotations

import math
import struct

import gguf
import numpy as np
import pytest

import oracle_ggml
import vkrope
from gguf_writer import add_values, finish, write

QWEN3VL = [("add_context_length", 262144), ("add_embedding_length", 4096), ("add_head_count", 32),
           ("add_rope_freq_base", 5000000.0), ("add_rope_dimension_count", 128),
           ("add_rope_dimension_sections", [24, 20, 20, 0])]


def test_qwen3vl_pairs_of_the_fourth_position_do_not_turn(tmp_path):
    """Qwen3-VL's GGUF ([24, 20, 20, 0] over 64 pairs): ggml_mrope_cache_init turns pairs 61 and 62 by the
    fourth position, e, which llama.cpp sets to 0 for every token (transformers turns them by time). With
    time, height and width apart (an image token) and as text; the [4 * S] layout with e = 0 alike, a
    non-zero e refused."""
    rope = vkrope.from_gguf(write(tmp_path / "q3vl.gguf", "qwen3vl", QWEN3VL), angle="exact")
    t, h, w = np.array([0, 5, 900, 100000]), np.array([0, 3, 17, 99999]), np.array([0, 7, 4, 12345])
    for rows in ((t, h, w), (t, t, t)):
        cos, sin = rope.cos_sin(np.stack(rows)[:, None, :])
        want_cos, want_sin = oracle_ggml.cos_sin(np.stack([*rows, 0 * t]), 128, 5e6, sections=(24, 20, 20, 0),
                                                 imrope=True)
        assert np.abs(cos[0, :, :64] - want_cos).max() < 2e-6 and np.abs(sin[0, :, :64] - want_sin).max() < 2e-6
    assert (sin[0, -1, 61:63] == 0).all() and (cos[0, -1, 61:63] == 1).all() and (sin[0, -1, [60, 63]] != 0).all()
    assert rope.summary()["still_pairs"] == [61, 62] and rope.summary()["freq_factors"][61] == "inf"
    flat = np.concatenate([t, h, w, 0 * t])
    assert np.array_equal(rope.cos_sin(flat)[1], rope.cos_sin(np.stack([t, h, w])[:, None, :])[1])
    with pytest.raises(ValueError, match=r"position_ids: the fourth position \(e\) .* must be 0"):
        rope.cos_sin(np.concatenate([t, h, w, 0 * t + 1]))
    qwen2vl = vkrope.from_gguf(write(tmp_path / "q2vl.gguf", "qwen2vl", [
        *QWEN3VL[:-1], ("add_rope_dimension_sections", [16, 24, 24, 0])]))
    assert qwen2vl.freq_factors is None  # (chunked sections that span every pair: none turns by e)
    qwen2vl.cos_sin(np.concatenate([t, h, w, 0 * t + 1]))  # (so e is not read, nor refused)


def test_one_axis_positions_of_another_length_than_4_s_are_named_so(tmp_path):
    """apply_rotary_pos_emb with q's S = 8 and 8 text positions on one axis (an adversary's): read as
    llama.cpp's [4 * S] layout of S = 2, they were refused for their fourth position, a row the caller never
    gave; the length is the fault, named first. The [4 * S] layout of S = 8 runs."""
    rope = vkrope.from_gguf(write(tmp_path / "q3vl.gguf", "qwen3vl", QWEN3VL))
    q = np.ones((1, 2, 8, 128), np.float32)
    with pytest.raises(ValueError, match=r"llama.cpp's M-RoPE layout \[4 \* S\] = \[32\] for q's S = 8 .* got \[8\]$"):
        vkrope.apply_rotary_pos_emb(q, q, rope, np.arange(8))
    p = np.arange(8)
    y, _ = vkrope.apply_rotary_pos_emb(q, q, rope, np.concatenate([p, p, p, 0 * p]))
    assert np.array_equal(y, vkrope.apply_rotary_pos_emb(q, q, rope, p[None])[0])  # (text: all three axes alike)


def test_yarn_ramp_ends_as_ggml_computes_them(tmp_path):
    """ggml_rope_yarn_corr_dims computes the ramp's ends in float32: a file whose end lies within float32
    rounding of an integer (Qwen2's 128 dims, base 1e4, original length 17206: 55.0000008 in float64, 55
    in float32) is refused; an ordinary one is read as ggml computes it."""
    def yarn(name, base, orig, betas=(), arch="qwen2"):
        return write(tmp_path / name, arch, [
            ("add_context_length", 131072), ("add_embedding_length", 256), ("add_head_count", 2),
            ("add_rope_freq_base", base), ("add_rope_scaling_type", gguf.RopeScalingType.YARN),
            ("add_rope_scaling_factor", 4.0), ("add_rope_scaling_orig_ctx_len", orig),
            *(("add_float32", (f"{arch}.rope.scaling.yarn_beta_{k}", v)) for k, v in betas)])
    with pytest.raises(ValueError, match="within float32 rounding of an integer"):
        vkrope.from_gguf(yarn("near.gguf", 10000.0, 17206))
    rope = vkrope.from_gguf(yarn("plain.gguf", 10000.0, 4096), angle="exact")
    p = np.array([0, 1, 4096, 50000, 131000])
    cos, sin = rope.cos_sin(p[None])
    want_cos, want_sin = oracle_ggml.cos_sin(p, 128, 10000.0, freq_scale=0.25, ext_factor=1.0, n_ctx_orig=4096)
    assert np.abs(cos[0, :, :64] - want_cos).max() < 4e-6 and np.abs(sin[0, :, :64] - want_sin).max() < 4e-6
    for base, orig in ((10000.0, 2), (2.0, 4096)):  # (ramps whose low end lies above their high end)
        with pytest.raises(ValueError, match="YaRN's ramp is empty here .*from original_context_length"):
            vkrope.from_gguf(yarn(f"empty{orig}.gguf", base, orig))
    with pytest.raises(ValueError, match="YaRN's ramp is empty here .*from rope.scaling.yarn_beta_fast 1 below "
                                         "yarn_beta_slow 32\\)"):  # (the betas named, not the length;
        # Mistral 3's loader reads them, Qwen2's does not)
        vkrope.from_gguf(yarn("reversed.gguf", 10000.0, 4096, (("fast", 1.0), ("slow", 32.0)), "mistral3"))


def test_frequency_factors_other_than_f32_are_refused(tmp_path):
    """ggml_rope asserts F32 frequency factors (llama.cpp aborts loading the file)."""
    for dtype, name in ((np.float16, "F16"), (np.float32, None)):
        path = str(tmp_path / f"{dtype.__name__}.gguf")
        w = gguf.GGUFWriter(path, arch="llama")
        add_values(w, {"block_count": 2, "context_length": 4096, "embedding_length": 256, "attention.head_count": 2,
                       "rope.freq_base": 5e5})
        w.add_tensor("rope_freqs.weight", np.linspace(1, 8, 64).astype(dtype))  # (finish would make it F32)
        finish(w, (), path)
        if name is None:
            assert vkrope.from_gguf(path).freq_factors[1] == pytest.approx(1 + 7 / 63, rel=1e-7)
            continue
        with pytest.raises(ValueError, match=f"rope_freqs.weight is {name}; llama.cpp's rope takes F32"):
            vkrope.from_gguf(path)


def test_longrope_context_rounded_up_as_llama_cpp_pads_it(tmp_path):
    """llama_context pads the context per sequence to a multiple of 256 before get_rope_factors compares it
    with the original length: with 4000, a context of 3841 runs the long factors, 3840 the short ones."""
    short, long = np.linspace(1, 2, 64, dtype=np.float32), np.linspace(1, 40, 64, dtype=np.float32)
    path = write(tmp_path / "phi3.gguf", "phi3", [
        ("add_context_length", 131072), ("add_embedding_length", 256), ("add_head_count", 2),
        ("add_rope_freq_base", 10000.0), ("add_rope_scaling_type", gguf.RopeScalingType.LONGROPE),
        ("add_rope_scaling_orig_ctx_len", 4000)],
        [("rope_factors_short.weight", short), ("rope_factors_long.weight", long)])
    for context, factors in ((3840, short), (3841, long), (4000, long), (256, short)):
        got = dict(vkrope.from_gguf(path, context_length=context).params)["short_factor"]
        assert np.array_equal(np.float32(got), factors), context
    # an original length stated as 0 is hparams' n_ctx_orig_yarn all the same (only cparams' falls back to
    # n_ctx_train): every context exceeds it, and runs the long factors
    path = write(tmp_path / "phi3-0.gguf", "phi3", [
        ("add_context_length", 131072), ("add_embedding_length", 256), ("add_head_count", 2),
        ("add_rope_freq_base", 10000.0), ("add_rope_scaling_type", gguf.RopeScalingType.LONGROPE),
        ("add_rope_scaling_orig_ctx_len", 0)],
        [("rope_factors_short.weight", short), ("rope_factors_long.weight", long)])
    for context in (1, 256, 4096):
        assert np.array_equal(np.float32(dict(vkrope.from_gguf(path, context_length=context).params)["short_factor"]),
                              long), context


def _file(tensors: list[tuple[list[int], int]], data: bytes, kind: int = 0) -> bytes:
    """A GGUF v3 file: a llama header, tensors `rope_freqs.weight` (F32), `t1`, ... (GGML type `kind`) with
    (dims, offset)."""
    def s(b: bytes) -> bytes:
        return struct.pack("<Q", len(b)) + b
    kvs = [s(b"general.architecture") + struct.pack("<I", 8) + s(b"llama")]
    for key, value in ((b"llama.block_count", 2), (b"llama.context_length", 4096), (b"llama.embedding_length", 256),
                       (b"llama.attention.head_count", 2)):
        kvs.append(s(key) + struct.pack("<II", 4, value))
    kvs.append(s(b"llama.attention.layer_norm_rms_epsilon") + struct.pack("<If", 6, 1e-5))
    infos = [s(b"rope_freqs.weight" if i == 0 else b"t%d" % i) + struct.pack("<I", len(dims))
             + b"".join(struct.pack("<Q", d) for d in dims) + struct.pack("<IQ", kind if i else 0, offset)
             for i, (dims, offset) in enumerate(tensors)]
    body = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(kvs) + b"".join(infos)
    return body + b"\0" * (-len(body) % 32) + data


@pytest.mark.parametrize("tensors, kind, match", [
    ([([64], 0), ([1, 1, 1, 1, 1], 256)], 0, "tensor 1 has 5 dimensions"),
    ([([64], 32)], 0, "'rope_freqs.weight' has its data at offset 32 of the data section, expected 0"),
    ([([64], 0), ([8], 0)], 0, "'t1' has its data at offset 0 of the data section, expected 256"),
    ([([64], 0), ([8], 288)], 0, "'t1' has its data at offset 288 of the data section, expected 256"),
    ([([64], 0), ([7], 256), ([8], 284)], 0, "'t2' has its data at offset 284 of the data section, expected 288"),
    ([([64], 0), ([20], 256)], 8, "row size \\(20\\) is not a multiple of Q8_0 block size"),
])
def test_tensor_tables_llama_cpp_refuses_are_refused(tmp_path, tensors, kind, match):
    """gguf_init's checks: at most 4 dimensions, a first dimension of whole blocks, and each tensor's data
    right after the one before (padded to the alignment: a 28-byte tensor takes
    32), the first at the data section's start; the same tables laid right are read."""
    path = tmp_path / "bad.gguf"
    path.write_bytes(_file(tensors, np.ones(64 + 64, np.float32).tobytes(), kind))
    with pytest.raises(ValueError, match=match):
        vkrope.from_gguf(str(path))
    for right in ([([64], 0), ([8], 256)], [([64], 0), ([7], 256), ([8], 288)]):
        path.write_bytes(_file(right, np.linspace(1, 2, 64 + 64, dtype=np.float32).tobytes()))
        assert vkrope.from_gguf(str(path)).freq_factors[63] == pytest.approx(2 - 64 / 127, rel=1e-6)


@pytest.mark.parametrize("alignment", [8, 64])
def test_a_stated_alignment_is_read(tmp_path, alignment):
    """A file stating general.alignment (gguf's add_custom_alignment; gguf_init takes any power of two) is read:
    the reader gives it as a numpy uint32, whose arithmetic with the tensors' sizes had overflowed."""
    path = str(tmp_path / f"aligned{alignment}.gguf")
    w = gguf.GGUFWriter(path, arch="llama")
    w.add_custom_alignment(alignment)
    add_values(w, {"context_length": 4096, "embedding_length": 256, "attention.head_count": 4, "block_count": 2})
    factors = np.linspace(1, 8, 32, dtype=np.float32)
    finish(w, {"rope_freqs.weight": factors, "t1": np.ones(3, np.float32), "t2": np.ones(5, np.float32)}, path)
    np.testing.assert_array_equal(vkrope.from_gguf(path).freq_factors, factors)


def _temperature(pos, scale, length):
    """llm_graph_input_attn_temp::set_input restated: log(floor(pos / length) + 1) * scale + 1 (the quotient of
    two floats in float32, then double), as float32."""
    steps = np.floor(np.float32(pos) / np.float32(length))
    return np.float32(math.log(float(steps) + 1.0) * float(np.float32(scale)) + 1.0)


MISTRAL3 = [("add_embedding_length", 512), ("add_head_count", 4), ("add_rope_freq_base", 1e6)]
DEEPSEEK2 = [("add_context_length", 163840), ("add_embedding_length", 7168), ("add_head_count", 128),
             ("add_uint32", ("deepseek2.attention.q_lora_rank", 1536)), ("add_rope_dimension_count", 64)]


@pytest.mark.parametrize("arch, kv, length", [
    ("mistral3", [*MISTRAL3, ("add_rope_scaling_orig_ctx_len", 16384)], 16384),
    ("mistral3", MISTRAL3, 4096),  # (n_ctx_orig_yarn defaults to context_length)
    ("deepseek2", [*DEEPSEEK2, ("add_uint32", ("deepseek2.attention.temperature_length", 8192))], 8192),
    ("mistral4", [(add, (v[0].replace("deepseek2", "mistral4"), v[1]) if add == "add_uint32" else v) for add, v in
                  [*DEEPSEEK2, ("add_uint32", ("deepseek2.attention.temperature_length", 64))]], 64),
])
def test_the_attention_temperature_is_read_as_llama_cpp_scales_q(tmp_path, arch, kv, length):
    """Mistral 3's, DeepSeek-V2's and Mistral 4's graphs multiply Q after RoPE by llama.cpp's attention
    temperature (`attention.temperature_scale`, over n_ctx_orig_yarn or `attention.temperature_length`
    positions): from_gguf read none of it, so q_scale was None and a model read from its GGUF was scaled
    otherwise than llama.cpp runs it. Without the key, no scale."""
    scale = 0.1
    path = write(tmp_path / f"{arch}.gguf", arch,
                 [*kv, ("add_float32", (f"{arch}.attention.temperature_scale", scale))])
    rope = vkrope.from_gguf(path)
    p = np.array([0, 1, length - 1, length, 3 * length + 5, 1 << 20, (1 << 24) - 1])
    want = [_temperature(v, scale, length) for v in p]
    assert np.array_equal(rope.q_scale(p[None])[0], np.array(want, np.float32))
    assert rope.q_scale(p[None]).dtype == np.float32 and "attention temperature" in rope.summary()["q_scale_after_rope"]
    plain = vkrope.from_gguf(write(tmp_path / f"{arch}-plain.gguf", arch, kv))
    assert plain.q_scale(p[None]) is None and "q_scale_after_rope" not in plain.summary()


def test_an_attention_temperature_llama_cpp_refuses_is_refused(tmp_path):
    """Mistral 3 with a temperature and an original length of 0: llama.cpp's loader throws; DeepSeek-V2 with a
    temperature and no length: its first batch fails GGML_ASSERT (an abort). Both refused, naming why."""
    path = write(tmp_path / "m3.gguf", "mistral3", [*MISTRAL3, ("add_rope_scaling_orig_ctx_len", 0),
                                                   ("add_float32", ("mistral3.attention.temperature_scale", 0.1))])
    with pytest.raises(ValueError, match=r"mistral3: llama.cpp refuses this file: 'invalid n_ctx_orig_yarn"):
        vkrope.from_gguf(path)
    path = write(tmp_path / "ds.gguf", "deepseek2", [*DEEPSEEK2,
                                                     ("add_float32", ("deepseek2.attention.temperature_scale", 0.1))])
    with pytest.raises(ValueError, match=r"assert n_attn_temp_floor_scale != 0 .*aborts"):
        vkrope.from_gguf(path)
    path = write(tmp_path / "neg.gguf", "mistral3", [*MISTRAL3,
                                                    ("add_float32", ("mistral3.attention.temperature_scale", -0.1))])
    with pytest.raises(ValueError, match=r"vkrope reads a scale > 0 with no offset; got scale -0\.1"):
        vkrope.from_gguf(path)


def test_a_config_rope_dict_never_gives_the_gguf_temperature():
    """attn_temperature_scale is llama.cpp's, read from a GGUF: a config.json's rope dict naming it is not read
    (transformers never reads it), so from_hf keeps it among the ignored keys and scales nothing."""
    rope = vkrope.from_hf({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
                           "rope_scaling": {"rope_type": "default", "attn_temperature_scale": 0.1,
                                            "attn_temperature_length": 8}})
    assert rope.q_scale(np.array([[100]])) is None and "attn_temperature_scale" in rope.ignored


def test_a_table_of_another_temperature_formula_is_refused(tmp_path, monkeypatch):
    """The table's script checks llama.cpp's set_input is the formula q_scale computes; a table regenerated from
    a llama.cpp whose formula changed says so, and the file is refused rather than scaled by the old one."""
    from vkrope.models import gguf_program

    rule = gguf_program.table()["hparams"]["q_scale"]
    monkeypatch.setitem(rule, "formula", rule["formula"].replace("+ 1.0 )", "+ 2.0 )"))
    path = write(tmp_path / "m3.gguf", "mistral3", [*MISTRAL3,
                                                   ("add_float32", ("mistral3.attention.temperature_scale", 0.1))])
    with pytest.raises(ValueError, match=r"attention temperature in this table is not the formula vkrope computes"):
        vkrope.from_gguf(path)


def test_a_modelrope_made_by_hand_takes_the_temperature_whole():
    """A ModelRope made by hand with the temperature's scale alone gave q_scale NaN (np.float32(None)) and a
    summary that raised; a length of 2.5 was divided by but printed as 2. Each is refused, naming the keys."""
    def rope(**params):
        return vkrope.ModelRope("default", 8, 8, 1e4, params=tuple(params.items()))
    for params, msg in ((dict(attn_temperature_scale=0.1), "go together"),
                        (dict(attn_temperature_length=8), "go together"),
                        (dict(attn_temperature_scale=0.1, attn_temperature_length=2.5), "a whole number of positions"),
                        (dict(attn_temperature_scale=0.1, attn_temperature_length=8, llama_4_scaling_beta=0.1),
                         "give one"),
                        (dict(attn_temperature_scale=-0.1, attn_temperature_length=8), "positive finite number"),
                        (dict(attn_temperature_scale=1e39, attn_temperature_length=8), "a positive float32"),
                        (dict(attn_temperature_scale=1e-50, attn_temperature_length=8), "a positive float32"),
                        (dict(attn_temperature_scale=0.1, attn_temperature_length=2**32), "below 2\\^32")):
        with pytest.raises(ValueError, match=msg):
            rope(**params)
    r = rope(attn_temperature_scale=0.1, attn_temperature_length=8)
    assert r.q_scale(np.array([[0, 8, 24]]))[0].tolist() == [_temperature(p, 0.1, 8) for p in (0, 8, 24)]
    assert "floor(position / 8)" in r.summary()["q_scale_after_rope"]


def test_a_load_arch_hparams_throw_over_read_fields_is_refused(tmp_path):
    """The table keeps each architecture's throws whose conditions read only what it reads: HunyuanV4 with an
    indexer top-k and no indexer on layer 0 (attention.indexer.types absent: llama.cpp fills it with 0) is
    refused as llama.cpp's loader refuses it; with layer 0's indexer, read."""
    base = [("add_embedding_length", 256), ("add_head_count", 4), ("add_rope_dimension_count", 32),
            ("add_uint32", ("hy_v4.attention.indexer.top_k", 8))]
    with pytest.raises(ValueError, match=r"hy_v4: llama.cpp refuses this file: 'hy_v4: layer 0 must own an indexer"):
        vkrope.from_gguf(write(tmp_path / "none.gguf", "hy_v4", base))
    ok = write(tmp_path / "l0.gguf", "hy_v4", [*base, ("add_array", ("hy_v4.attention.indexer.types", [1, 0]))])
    assert vkrope.from_gguf(ok).rotary_dim == 32
