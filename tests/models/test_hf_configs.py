"""Real models' RoPE from their configs (vkrope.from_hf, ModelRope,
apply_rotary_pos_emb), proven against transformers' own rotary modules
(tests/data/hf_golden.npz, from scripts/hf_golden.py on the configs of
tests/data/hf_configs/) and against tests/oracles/oracle_hf.py, which is written
from the formulas and shares no code with vkrope.

Tolerances. Inverse frequencies: within 1 float32 ulp of transformers'
(torch's float32 power differs from the correctly rounded one vkrope takes
on a few columns; tests/specs/test_generated.py) and bit for bit the oracle's.
cos / sin: within 8 float32 ulps of the angle (plus 2^-22 for their own
rounding), times the attention factor. Rotations: float32 within that
bound times |pair| of the float64 rotation by transformers' cos / sin;
bfloat16 / float16 results within one ulp of their dtype.
"""

from __future__ import annotations

import copy
import functools
import json
import math
import os
import re
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import oracle_hf
import vkrope
from vkrope.models import model_table as hf_models

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data")
CONFIGS = os.path.join(DATA, "hf_configs")
GOLD = np.load(os.path.join(DATA, "hf_golden.npz"))
CASES = sorted({k.rsplit("/", 1)[0] for k in GOLD.files if k.count("/") == 2})
NAMES = sorted(f[:-5] for f in os.listdir(CONFIGS))


def config(name: str) -> dict:
    with open(os.path.join(CONFIGS, name + ".json")) as f:
        return json.load(f)


def rope_of_case(case: str):
    """(config name, layer type, the ModelRope) of a golden case "<config>[@<layer type>][#<part>]/<case>"."""
    named, _, part = case.split("/")[0].partition("#")
    cfg_name, _, layer = named.partition("@")
    return cfg_name, (layer or None), vkrope.from_hf(os.path.join(CONFIGS, cfg_name + ".json"),
                                                       layer_type=layer or None, part=part or None)


def one_part(cfg: dict) -> str | None:
    """The part to read a config whose model rotates two ways by (DeepSeek-V3.2's: the same angles either way),
    as its table entry says; None for any other."""
    return "attention" if hf_models.table()["models"][cfg["model_type"]].get("parts") else None


def halves_written(rope) -> bool:
    """Whether the model writes its interleaved pairs cat(even, odd) (MLA's apply_rotary_pos_emb_interleave, as
    the model table found the attention, or the part read, rotating)."""
    e = hf_models.table()["models"][rope.model]
    return (e["parts"][rope.part] if rope.part else e)["pairs"] == "interleaved_to_halves" and rope.interleaved


def as_halves(rope, cos, sin):
    """cos / sin as cat(freqs, freqs) for the oracle (Cohere's and GLM-OCR's modules repeat each pair's value,
    adjacent)."""
    if rope.cos_layout == "repeated":
        return tuple(np.concatenate([t[..., 0::2]] * 2, -1) for t in (cos, sin))
    return cos, sin


def pair_tol(case: str, rope, ids) -> np.ndarray:
    """float64 [N, rot/2]: how far cos or sin of each (token, pair) may be
    from transformers': 4 float32 ulps of 1 (each side's cos / sin within 2),
    and on a column whose inverse frequency differs from torch's (its power
    1 ulp off the correctly rounded one) that difference times the
    position plus one ulp of the angle (the float32 product rounded from
    other inputs); times the attention factor."""
    spec = rope.freqs(rope.check_position_ids(GOLD[case + "/pos"]))
    ours = np.array(spec.inv_freq, np.float64)
    d_inv = np.abs(ours - GOLD[case + "/inv_freq"].astype(np.float64))
    if rope.mrope_section:
        cols = np.asarray(ids, np.float64)[:, spec.pair_axis_array]
    else:
        cols = np.repeat(np.asarray(ids, np.float64).reshape(-1, 1), ours.size, 1)
    angle = np.abs(spec.angles(ids)).astype(np.float32)
    off = cols * d_inv + (d_inv > 0) * np.spacing(angle).astype(np.float64)
    return spec.attention_factor * (off + 2.0**-22)


def ulps32(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.abs(np.asarray(a, np.float32).view(np.int32).astype(np.int64)
                  - np.asarray(b, np.float32).view(np.int32).astype(np.int64))


def test_goldens_cover_the_issue():
    """Every config the issue names is in the goldens, with both sides of the
    longrope switch and of dynamic's length, and M-RoPE grids."""
    cases = set(CASES)
    for need in ("llama-3.1-8b/max", "llama-3.2-1b/max", "phi-3.5-mini/below_switch", "phi-3.5-mini/above_switch",
                 "phi-4-mini-shape/above_switch", "qwen2.5-7b-yarn/max", "deepseek-v3/max",
                 "gemma-3-4b@sliding_attention/max", "gemma-3-4b@full_attention/max", "llama-2-7b-dynamic/at_length",
                 "llama-2-7b-dynamic/beyond", "phi-2/max", "qwen2-vl-7b/grid", "qwen3-vl-8b/grid",
                 "llama-4-scout-rope/max", "yarn-mscale-ratio/max", "glm-4-9b/max", "cohere-command-r/max",
                 "gemma-3-4b-minimal@sliding_attention/max", "gemma-3-4b-minimal@full_attention/max",
                 "phi-3.5-moe-shape/above_switch", "deepseek-v3.2-exp#attention/max",
                 "deepseek-v3.2-exp#indexer/max"):
        assert need in cases, need


@pytest.mark.parametrize("case", CASES)
def test_frequencies_and_factor_match_transformers(case, monkeypatch):
    """Within 1 float32 ulp of transformers' inverse frequencies, 2 where torch's power is 1 ulp off the
    correctly rounded one vkrope takes (test_float32_steps_match_transformers_given_its_power: bit for bit
    given torch's); the attention factor exactly."""
    import vkrope.models.rope_types as configs

    torch_pow, base, real, ours = GOLD[case + "/torch_pow"], GOLD[case + "/pow_base"][0], configs.pow32, []

    def spy(b, exps):
        out = real(b, exps)
        if np.float32(b) == base and len(exps) == len(torch_pow):
            ours.append(out)
        return out

    monkeypatch.setattr(configs, "pow32", spy)
    _, _, rope = rope_of_case(case)
    pos = GOLD[case + "/pos"]
    spec = rope.freqs(rope.check_position_ids(pos))
    ulp = ulps32(np.array(spec.inv_freq, np.float32), GOLD[case + "/inv_freq"])
    off = any(not np.array_equal(p, torch_pow) for p in ours)
    assert ulp.max() <= (2 if off else 1), (case, ulp.max())
    assert np.float32(spec.attention_factor) == np.float32(GOLD[case + "/scaling"][0])
    # (PhiMoE's factor follows the length: long_mscale past the original one)
    assert np.float32(rope.attention_factor_for(int(pos.max()) + 1)) == np.float32(GOLD[case + "/scaling"][0])


@pytest.mark.parametrize("case", CASES)
def test_cos_sin_match_transformers(case):
    _, _, rope = rope_of_case(case)
    pos = GOLD[case + "/pos"]
    c, s = rope.cos_sin(pos)
    gc, gs = GOLD[case + "/cos"], GOLD[case + "/sin"]
    assert c.shape == gc.shape and c.dtype == np.float32
    p3 = rope.check_position_ids(pos)
    ids = np.moveaxis(p3, 0, -1).reshape(-1, 3) if rope.mrope_section else p3.reshape(-1)
    per_pair = pair_tol(case, rope, ids)
    tol = (np.repeat(per_pair, 2, -1) if rope.cos_layout == "repeated" else np.tile(per_pair, 2)).reshape(gc.shape)
    assert (np.abs(c.astype(np.float64) - gc) <= tol).all(), case
    assert (np.abs(s.astype(np.float64) - gs) <= tol).all(), case


def _interleave_back(y: np.ndarray, rot: int) -> np.ndarray:
    """DeepSeek's transformers output: the rotated channels as cat(even, odd)."""
    out = y.copy()
    out[..., :rot] = np.concatenate([y[..., 0:rot:2], y[..., 1:rot:2]], -1)
    return out


@pytest.mark.parametrize("case", CASES)
def test_apply_rotary_pos_emb_matches_transformers(case):
    """q and k through the kernel against the float64 rotation by
    transformers' own cos / sin and against its own apply_rotary_pos_emb."""
    _, _, rope = rope_of_case(case)
    pos, q, k = GOLD[case + "/pos"], GOLD[case + "/q"], GOLD[case + "/k"]
    gc, gs = GOLD[case + "/cos"], GOLD[case + "/sin"]
    rot = gc.shape[-1]
    gc, gs = as_halves(rope, gc, gs)
    permuted = halves_written(rope)  # transformers returns DeepSeek's pairs as cat(even, odd)
    out_q, out_k = np.full_like(q, np.nan), np.full_like(k, np.nan)
    yq, yk = vkrope.apply_rotary_pos_emb(q, k, rope, pos, out_q=out_q, out_k=out_k)
    assert yq is out_q and yk is out_k
    p3 = rope.check_position_ids(pos)
    ids = np.moveaxis(p3, 0, -1).reshape(-1, 3) if rope.mrope_section else p3.reshape(-1)
    tol_pair = pair_tol(case, rope, ids).reshape(gc.shape[:-1] + (rot // 2,))[:, None]  # [B, 1, S, rot/2]
    for x, y, gold in ((q, yq, GOLD[case + "/q_out"]), (k, yk, GOLD[case + "/k_out"])):
        if rope.interleaved:  # DeepSeek: transformers permutes q, k to rotate-half; vkrope rotates the pairs
            ref = oracle_hf.rotate(x, gc.astype(np.float64), gs.astype(np.float64), rot, interleaved=True)
            a, b = np.abs(x[..., 0:rot:2]), np.abs(x[..., 1:rot:2])
            bound = np.repeat((a + b) * tol_pair, 2, -1)
        else:
            ref = oracle_hf.rotate(x, gc.astype(np.float64), gs.astype(np.float64), rot)
            a, b = np.abs(x[..., : rot // 2]), np.abs(x[..., rot // 2: rot])
            bound = np.concatenate([(a + b) * tol_pair] * 2, -1)
        bound = bound + 2 * np.spacing(np.abs(ref[..., :rot]).astype(np.float32))
        assert (np.abs(y[..., :rot] - ref[..., :rot]) <= bound).all(), case
        assert np.array_equal(y[..., rot:], x[..., rot:]), case  # passed through, bit for bit
        mine = _interleave_back(y, rot) if permuted else y
        # and transformers' own float32 output (two roundings of its own): within the same bound and 4 ulps
        assert (np.abs(mine[..., :rot] - gold[..., :rot]) <= (
            _interleave_back(bound, rot) if permuted else bound) + 4 * np.spacing(
            np.abs(gold[..., :rot]))).all(), case


@pytest.mark.parametrize("case", [c for c in CASES if c.endswith(("/max", "/far", "/beyond", "/above_switch"))])
def test_bfloat16_is_one_rounding_of_the_rotation(case):
    """bfloat16 q: vkrope rounds the float32-exact rotation once; transformers'
    bfloat16 path rounds cos / sin and every product (stored for comparison)."""
    _, _, rope = rope_of_case(case)
    pos = GOLD[case + "/pos"]
    qb = GOLD[case + "/q_bf16"].view(ml_dtypes.bfloat16)
    kb = qb[:, :1].copy()
    yq, _ = vkrope.apply_rotary_pos_emb(qb, kb, rope, pos)
    assert yq.dtype == ml_dtypes.bfloat16
    c, s = as_halves(rope, *rope.cos_sin(pos))
    rot = c.shape[-1]
    ref = oracle_hf.rotate(qb.astype(np.float64), c.astype(np.float64), s.astype(np.float64), rot,
                           interleaved=rope.interleaved)
    got = yq.astype(np.float64)
    # one rounding of (nearly) the float64 value: within half an ulp plus the float32 cos / sin's share
    ulp = np.abs(ref).astype(ml_dtypes.bfloat16).astype(np.float64) * 2.0**-7
    assert (np.abs(got - ref) <= 0.5 * ulp + 1e-6 * np.abs(qb.astype(np.float64)).max()).all(), case
    hf = GOLD[case + "/q_bf16_out"].view(ml_dtypes.bfloat16).astype(np.float64)
    if not rope.interleaved:
        assert np.abs(got - ref).max() <= np.abs(hf - ref).max() + 1e-12  # never worse than transformers' path


@pytest.mark.parametrize("name", [n for n in NAMES if not n.endswith("-minimal")])  # (the oracle reads keys as given)
def test_oracle_agrees_bit_for_bit(name):
    """The float32 frequencies equal the formula oracle's at many lengths
    (dynamic and longrope decide by them); the attention factor too."""
    cfg = config(name)
    layers = [None]
    nested = cfg.get("text_config", cfg).get("rope_parameters") or {}
    if "rope_local_base_freq" in json.dumps(cfg):
        layers = ["sliding_attention", "full_attention"]
    elif nested and all(isinstance(v, dict) for v in nested.values()):  # (RoPE per layer type: MiMo-V2-Flash)
        layers = sorted(nested)
    for layer in layers:
        rope = vkrope.from_hf(cfg, layer_type=layer, part=one_part(cfg))
        ref = oracle_hf.rope_of(cfg, layer)
        for n in (1, 100, 4096, 4097, 8193, 32769, 131072, 1 << 20):
            assert np.array_equal(rope.inv_freq(n), oracle_hf.inv_freq(ref, n)), (name, layer, n)
        assert np.float32(rope.attention_factor) == np.float32(oracle_hf.attention_factor(ref))
        assert rope.rotary_dim == ref["dim"]


_LONG = {"rope_type": "longrope", "rope_theta": 6e5, "short_factor": [1.0 + 0.05 * i for i in range(32)],
         "long_factor": [1.0 + 0.4 * i for i in range(32)]}


@pytest.mark.parametrize("lengths, rope", [
    ({"model_max_length": 4096, "max_position_embeddings": 8192}, _LONG),  # (the field's 8192 is the original)
    ({"model_max_length": 4096}, {**_LONG, "original_max_position_embeddings": 2048}),  # (the dict's own kept)
    ({"model_max_length": 4096}, {"rope_type": "yarn", "rope_theta": 6e5, "factor": 4.0}),  # (262144)
    ({"model_max_length": 300000}, {"rope_type": "yarn", "rope_theta": 6e5, "factor": 4.0}),
], ids=["both", "dict_original", "yarn", "yarn_longer"])
def test_bailing_lengths_agree_with_the_oracle(lengths, rope):
    """Bailing hybrid's max_position_embeddings is its class's field, stored as model_max_length, which a file's
    key sets after the RoPE standardization filled the dict's original length from the field (the file's, else
    262144): the oracle's reading of that rule (tests/oracles/oracle_hf.py) and from_hf agree, bit for bit, at
    lengths on both sides of each original length (the golden config bailing-hybrid-model-max-length holds
    transformers' own)."""
    cfg = {"model_type": "bailing_hybrid", "hidden_size": 2048, "num_attention_heads": 16, "qk_rope_head_dim": 64,
           "rope_parameters": rope, **lengths}
    r, ref = vkrope.from_hf(cfg), oracle_hf.rope_of(cfg)
    assert (r.max_position_embeddings, r.original_max_position_embeddings) == (ref["mpe"], ref["orig"])
    for n in (1, 2048, 2049, 4097, 8193, 262145, 1 << 20):
        assert np.array_equal(r.inv_freq(n), oracle_hf.inv_freq(ref, n)), n
    assert np.float32(r.attention_factor) == np.float32(oracle_hf.attention_factor(ref))


@pytest.mark.parametrize("rope, match", [
    ({"rope_type": "yarn", "rope_theta": 6e5, "factor": 4.0}, "compares with the original length and fails on"),
    ({"rope_type": "llama3", "rope_theta": 6e5, "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0},
     "compares with the original length and fails on"),
    (_LONG, r"longrope needs factor \(or max_position_embeddings to derive it\)"),
], ids=["yarn", "llama3", "longrope"])
def test_bailing_null_length_refused_where_transformers_fails(rope, match):
    """A null model_max_length sets Bailing hybrid's max_position_embeddings to None after its class's checks:
    transformers' YaRN and Llama 3 validation then fail, and LongRoPE without a factor divides None (a
    TypeError); vkrope refuses those, and reads a rope type that never reads the length."""
    cfg = {"model_type": "bailing_hybrid", "max_position_embeddings": 8192, "model_max_length": None}
    with pytest.raises(ValueError, match=match):
        vkrope.from_hf({**cfg, "rope_parameters": rope})
    assert vkrope.from_hf({**cfg, "rope_parameters": {"rope_type": "linear", "rope_theta": 6e5, "factor": 2.0}}) \
        .max_position_embeddings is None


def test_proportional_matches_transformers():
    cfg = json.loads(str(GOLD["proportional/config"]))
    rope = vkrope.from_hf(cfg, like="llama")  # (a bare config: the rope type on Llama's attention)
    assert rope.rope_type == "proportional" and rope.rotary_dim == 256
    inv = rope.inv_freq()
    assert ulps32(inv, GOLD["proportional/inv_freq"]).max() <= 1
    assert np.count_nonzero(inv) == 32  # int(0.25 * 256 // 2) pairs rotate; the rest have frequency 0
    assert np.array_equal(inv, oracle_hf.inv_freq(oracle_hf.rope_of(cfg)))
    q = np.random.default_rng(1).standard_normal((1, 2, 5, 256)).astype(np.float32)
    pos = np.array([[0, 7, 100, 5000, 100000]])
    yq, yk = vkrope.apply_rotary_pos_emb(q, q[:, :1].copy(), rope, pos)
    c, s = oracle_hf.cos_sin(oracle_hf.rope_of(cfg), pos)
    ref = oracle_hf.rotate(q, c, s, 256)
    assert np.abs(yq - ref).max() < 1e-5
    assert np.array_equal(yq[..., 32:128], q[..., 32:128])  # pairs of frequency 0: rotated by exactly nothing


# --- kernel against the oracle on random inputs ------------------------------------------
DTYPES = [np.float32, np.float16, ml_dtypes.bfloat16]


@pytest.mark.parametrize("name", ["llama-3.1-8b", "phi-4-mini-shape", "qwen2.5-7b-yarn", "qwen3-vl-8b",
                                  "qwen2-vl-7b", "deepseek-v3", "phi-2", "phi-3.5-moe-shape"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_kernel_against_oracle(name, dtype):
    cfg = config(name)
    rope = vkrope.from_hf(cfg)
    ref_rope = oracle_hf.rope_of(cfg)
    rng = np.random.default_rng(len(name))
    d = rope.head_dim
    b, s = 2, 7
    q = rng.standard_normal((b, 4, s, d)).astype(dtype)
    k = rng.standard_normal((b, 2, s, d)).astype(dtype)
    if rope.mrope_section:
        pos = rng.integers(0, 50000, (3, b, s))
    else:
        pos = rng.integers(0, (rope.max_position_embeddings or 4096), (b, s))
    yq, yk = vkrope.apply_rotary_pos_emb(q, k, rope, pos)
    c, sn = oracle_hf.cos_sin(ref_rope, pos)
    rot = rope.rotary_dim
    for x, y in ((q, yq), (k, yk)):
        ref = oracle_hf.rotate(x.astype(np.float64), c, sn, rot, interleaved=rope.interleaved)
        eps = {np.float32: 2e-6, np.float16: 2.0**-10, ml_dtypes.bfloat16: 2.0**-7}[dtype]
        err = np.abs(y.astype(np.float64) - ref)
        assert (err <= eps * np.maximum(np.abs(ref), 1) + 1e-5 * np.abs(x.astype(np.float64)).max()).all(), name
        assert np.array_equal(y[..., rot:], x[..., rot:])


def test_mrope_text_positions_equal_one_axis():
    """[B, S] position ids on an M-RoPE spec are text (all three axes equal):
    the same as [3, B, S] with the row repeated, and as the default RoPE."""
    rope = vkrope.from_hf(config("qwen3-vl-8b"))
    rng = np.random.default_rng(2)
    q = rng.standard_normal((1, 2, 6, 128)).astype(np.float32)
    pos = rng.integers(0, 1000, (1, 6))
    a, _ = vkrope.apply_rotary_pos_emb(q, q, rope, pos)
    b, _ = vkrope.apply_rotary_pos_emb(q, q, rope, np.stack([pos] * 3))
    plain = vkrope.InvFreqs(rope.inv_freq())
    c, _ = vkrope.apply_rotary_pos_emb(q, q, plain, pos)
    assert np.array_equal(a, b) and np.array_equal(a, c)


def test_mrope_sections_take_their_axis():
    """Chunked vs interleaved vs alternating: each pair reads its own axis (a
    pair given a wrong axis would rotate by another position)."""
    for name, layout in (("qwen2-vl-7b", "chunked"), ("qwen3-vl-8b", "interleaved"),
                         ("ernie-4.5-vl-28b-a3b", "alternating")):
        rope = vkrope.from_hf(config(name))
        assert rope.mrope_layout == layout
        ax = np.array(rope.pair_axis)
        assert np.array_equal(ax, oracle_hf.pair_axes(oracle_hf.rope_of(config(name))))
        pos = np.zeros((3, 1, 1), np.int64)
        for axis in range(3):
            p = pos.copy()
            p[axis] = 1000
            _, sn = rope.cos_sin(p)
            moved = (sn[0, 0, 0::2] if rope.cos_layout == "repeated" else sn[0, 0, :64]) != 0
            assert np.array_equal(moved, ax == axis), (name, axis)
    ernie = vkrope.from_hf(config("ernie-4.5-vl-28b-a3b"))  # (its config's [h, w, t], held as (t, h, w))
    assert ernie.mrope_section == (20, 22, 22) and ernie.interleaved and ernie.summary()["mrope"] == "alternating"
    assert ernie.summary()["mrope_section"] == [20, 22, 22]  # (time, height, width, as every layout's)
    assert ernie.summary()["mrope_section_as_config_lists"] == [22, 22, 20]  # (height, width, time)
    assert "mrope_section_as_config_lists" not in vkrope.from_hf(config("qwen2-vl-7b")).summary()


def test_exact_angle_at_long_context():
    """angle='exact': the float64 product, reduced exactly (within 2 ulp of
    float64 cos / sin at position 131071), where the float32 product drifts."""
    rope = vkrope.from_hf(config("llama-3.1-8b"), angle="exact")
    q = np.random.default_rng(3).standard_normal((1, 1, 3, 128)).astype(np.float32)
    pos = np.array([[131071, 100003, 65537]])
    yq, _ = vkrope.apply_rotary_pos_emb(q, q, rope, pos)
    inv = rope.inv_freq(None, np.float64)
    a = pos[0][:, None] * inv
    c = np.concatenate([np.cos(a)] * 2, -1)[None]
    s = np.concatenate([np.sin(a)] * 2, -1)[None]
    ref = oracle_hf.rotate(q, c, s, 128)
    assert np.abs(yq - ref).max() < 4e-6
    f32 = vkrope.from_hf(config("llama-3.1-8b"))
    y32, _ = vkrope.apply_rotary_pos_emb(q, q, f32, pos)
    assert np.abs(y32 - ref).max() > 10 * np.abs(yq - ref).max()  # the float32 angle is what drifts


def test_device_arrays_in_and_out(device):
    rope = vkrope.from_hf(config("phi-4-mini-shape"))
    rng = np.random.default_rng(4)
    q = rng.standard_normal((1, 3, 5, 128)).astype(np.float32)
    k = rng.standard_normal((1, 1, 5, 128)).astype(np.float32)
    pos = np.array([[0, 1, 2, 4095, 4096]])  # past the switch: long factors
    dq, dk = device.asarray(q), device.asarray(k)
    yq, yk = device.apply_rotary_pos_emb(dq, dk, rope, pos)
    assert isinstance(yq, vkrope.DeviceArray)
    nq, nk = device.apply_rotary_pos_emb(q, k, rope, pos)
    assert np.array_equal(yq.get(), nq) and np.array_equal(yk.get(), nk)
    out = device.asarray(np.full_like(q, np.nan))
    rq, _ = device.apply_rotary_pos_emb(dq, dk, rope, pos, out_q=out)
    assert rq is out and np.array_equal(out.get(), nq)
    # the long factors were taken: the short ones give another result
    short, _ = device.apply_rotary_pos_emb(q[:, :, :4], k[:, :, :4], rope, pos[:, :4])
    assert not np.array_equal(short, nq[:, :, :4])


def test_other_ops_take_a_model_spec():
    """rotary_embedding, apply_rotary_emb_hf and rope_and_cache take a ModelRope
    (one axis) and give apply_rotary_pos_emb's result."""
    rope = vkrope.from_hf(config("llama-3.2-1b"))
    rng = np.random.default_rng(5)
    q = rng.standard_normal((1, 2, 4, 64)).astype(np.float32)
    k = rng.standard_normal((1, 2, 4, 64)).astype(np.float32)
    pos = np.array([[3, 9, 70000, 131071]])
    want, want_k = vkrope.apply_rotary_pos_emb(q, k, rope, pos)
    got = vkrope.rotary_embedding(q, rope, None, pos)
    assert np.array_equal(got, want)
    start = np.arange(10, 14)[None]
    hq, hk = vkrope.apply_rotary_emb_hf(q.transpose(0, 2, 1, 3).copy(), k.transpose(0, 2, 1, 3).copy(), rope, None,
                                        10)
    w2, _ = vkrope.apply_rotary_pos_emb(q, k, rope, start)
    assert np.array_equal(hq.transpose(0, 2, 1, 3), w2)
    dev = vkrope.default_device()
    kc = dev.asarray(np.zeros((1, 2, 131072, 64), np.float32))
    vc = dev.asarray(np.zeros((1, 2, 131072, 64), np.float32))
    qo = vkrope.rope_and_cache(q, k, k, kc, vc, rope, pos)
    assert np.abs(qo - want).max() < 1e-6
    assert np.abs(kc.get()[0, :, pos[0]].transpose(1, 0, 2) - want_k).max() < 1e-6


def test_mrope_decode_refused_on_a_contiguous_cache():
    """(test_an_mrope_model_in_the_one_position_ops_and_its_decode_step: with slots it is read) The caches are
    untouched."""
    rope = vkrope.from_hf(config("qwen2-vl-7b"))
    q = np.zeros((1, 1, 2, 128), np.float32)
    dev = vkrope.default_device()
    kc = dev.asarray(np.zeros((1, 1, 4, 128), np.float32))
    vc = dev.asarray(np.zeros((1, 1, 4, 128), np.float32))
    with pytest.raises(ValueError, match="M-RoPE"):
        vkrope.rope_and_cache(q, q, q, kc, vc, rope, np.array([[0, 1]]))
    per_axis = np.zeros((3, 1, 2), np.int64)  # (as transformers gives them: the step says what it takes)
    with pytest.raises(ValueError, match=r"got \[3, 1, 2\]: the decode step turns every M-RoPE axis by one "
                                         r"position per token .* position_ids\[0\]"):
        vkrope.rope_and_cache(q, q, q, kc, vc, rope, per_axis, cache_position=np.array([[0, 1]]))
    for other in ((2, 1, 2), (3, 2, 2)):  # (no M-RoPE ids of this call's [B, S]: no hint)
        with pytest.raises(ValueError, match=rf"got \[{other[0]}, {other[1]}, 2\]$"):
            vkrope.rope_and_cache(q, q, q, kc, vc, rope, np.zeros(other, np.int64), cache_position=np.array([[0, 1]]))
    assert not kc.get().any()


def test_dynamic_is_decided_per_call_without_state():
    rope = vkrope.from_hf(config("llama-2-7b-dynamic"))
    q = np.random.default_rng(6).standard_normal((1, 1, 2, 128)).astype(np.float32)
    short = np.array([[5, 6]])
    a, _ = vkrope.apply_rotary_pos_emb(q, q, rope, short)
    vkrope.apply_rotary_pos_emb(q, q, rope, np.array([[5, 20000]]))  # a long call in between
    b, _ = vkrope.apply_rotary_pos_emb(q, q, rope, short)
    assert np.array_equal(a, b)
    c, _ = vkrope.apply_rotary_pos_emb(q, q, rope, np.array([[5, 6]]) + np.array([[0, 9000]]))
    plain = vkrope.InvFreqs(rope.inv_freq(None))
    d, _ = vkrope.apply_rotary_pos_emb(q, q, plain, np.array([[5, 9006]]))
    assert not np.array_equal(c[..., 1, :], d[..., 1, :])  # beyond the length the base grows


def test_recompute_at_says_where_generate_rotates_the_cached_keys_anew():
    """transformers' generate() for Phi-3 and Phi-3.5-MoE drops its KV cache when the input
    first holds original_max_position_embeddings + 1 tokens and runs every position again, with the long factors
    (PhiMoE: long_mscale): a decode loop that rotated each key once differs from the model from that step (an
    adversary's, tracing generate()). recompute_at names that length where the rotation changes there, and is
    None where nothing cached would change (no longrope), and for other model types (Llama's longrope keeps
    its cache; a GGUF's: test_gguf)."""
    for name in ("phi-3.5-mini", "phi-3.5-moe-shape", "phi-4-mini-shape"):
        c = config(name)
        assert vkrope.from_hf(c).recompute_at == 4096 + 1, name
        assert vkrope.from_hf({**c, "original_max_position_embeddings": 1000,
                               "rope_scaling": {**c["rope_scaling"], "original_max_position_embeddings": 1000}
                               }).recompute_at == 1001, name
    phi3 = config("phi-3.5-mini")
    assert vkrope.from_hf({**phi3, "rope_scaling": None}).recompute_at is None  # (default: the keys unchanged)
    # Phi-4-multimodal's generate() drops its cache there too but runs the newest token alone (it keeps
    # generate()'s next_sequence_length): nothing a cached loop can match, so no length is named
    mm = {**config("phi-4-mini-shape"), "model_type": "phi4_multimodal", "architectures": None}
    assert vkrope.from_hf(mm).rope_type == "longrope" and vkrope.from_hf(mm).recompute_at is None
    moe = config("phi-3.5-moe-shape")  # (PhiMoE keeps its short factors: equal mscales change nothing)
    assert vkrope.from_hf({**moe, "rope_scaling": {**moe["rope_scaling"], "long_mscale": 1.1}}).recompute_at is None
    assert vkrope.from_hf({**phi3, "model_type": "llama", "architectures": ["LlamaForCausalLM"]}).recompute_at is None
    assert vkrope.from_hf(config("phi-2")).recompute_at is None and vkrope.from_hf(config("llama-2-7b-dynamic")).recompute_at is None


@pytest.mark.parametrize("seq_len, error, match", [
    (float("inf"), TypeError, r"^seq_len must be an int \(max\(position_ids\) \+ 1\) or None; got float inf$"),
    (float("nan"), TypeError, "got float nan"), (5000.5, TypeError, "got float 5000.5"),
    (True, TypeError, "got bool True"), ("8192", TypeError, "got str '8192'"), ([5000], TypeError, "got list"),
    (-5, ValueError, r"^seq_len must be >= 0 and at most 2\^64; got -5$"), (2**64 + 1, ValueError, "at most 2\\^64"),
])
def test_a_call_length_is_checked_before_it_picks_factors(seq_len, error, match):
    """inv_freq and attention_factor_for decide by a comparison with seq_len: NaN picked longrope's short
    factors, inf a dynamic base of 1 (an adversary's); each is refused, naming seq_len, and an int of numpy's
    is taken as Python's."""
    for name in ("llama-2-7b-dynamic", "phi-3.5-mini"):
        rope = vkrope.from_hf(config(name))
        for call in (rope.inv_freq, rope.attention_factor_for):
            with pytest.raises(error, match=match):
                call(seq_len)
        assert np.array_equal(rope.inv_freq(np.int64(9000)), rope.inv_freq(9000))
        rope.freqs(np.array([[2**64 - 1]], np.uint64))  # (the largest uint64 position: seq_len 2^64, taken)
        assert rope.attention_factor_for(np.int64(9000)) == rope.attention_factor_for(9000)


# --- configs: both styles, errors -------------------------------------------------------
def test_transformers5_style_equals_hub_style():
    hub = config("llama-3.1-8b")
    v5 = {k: v for k, v in hub.items() if k not in ("rope_scaling", "rope_theta")}
    v5["rope_parameters"] = dict(hub["rope_scaling"], rope_theta=hub["rope_theta"])
    assert vkrope.from_hf(v5) == vkrope.from_hf(hub)
    g = config("gemma-3-4b")["text_config"]
    nested = {k: v for k, v in g.items() if k not in ("rope_scaling", "rope_theta", "rope_local_base_freq")}
    nested["rope_parameters"] = {"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
                                 "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}
    for lt in ("full_attention", "sliding_attention"):
        assert vkrope.from_hf(nested, layer_type=lt) == vkrope.from_hf(g, layer_type=lt)
    assert vkrope.hf_layer_types(g) == ("full_attention", "sliding_attention")
    assert vkrope.hf_layer_types(hub) == ()


def test_config_sources(tmp_path):
    path = os.path.join(CONFIGS, "phi-2.json")
    a = vkrope.from_hf(path)
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text(open(path).read())
    assert vkrope.from_hf(str(folder)) == a

    class Cfg:
        def to_dict(self):
            return config("phi-2")

    assert vkrope.from_hf(Cfg()) == a
    assert a.rotary_dim == 32 and a.head_dim == 80  # partial_rotary_factor 0.4 kept


@pytest.mark.parametrize("edit, match", [
    (lambda c: c["rope_scaling"].pop("factor"), "factor"),
    (lambda c: c["rope_scaling"].update(rope_type="bogus"), "rope_type 'bogus'"),
    (lambda c: c["rope_scaling"].update(type="linear"), "contradict"),
    (lambda c: c["rope_scaling"].pop("high_freq_factor"), "high_freq_factor"),  # (one below the low one is read:
    # tests/data/hf_configs/llama3-inverted-factors.json)
    (lambda c: c["rope_scaling"].update(factor="8"), "factor must be a number"),
    (lambda c: c.update(rope_theta=-1.0), "rope_theta"),
    (lambda c: c.pop("model_type"), "model_type is missing"),
    (lambda c: c.update(model_type="chatglm"), "'chatglm' is not in vkrope's model table"),
    (lambda c: c.update(partial_rotary_factor=1.5), "partial_rotary_factor"),
    (lambda c: c.update(rope_scaling=[1, 2]), "rope_scaling"),
    (lambda c: c.update(rope_scaling={"rope_type": "default", "mrope_section": [16, 24, 25]}), "mrope_section"),
    (lambda c: c.update(rope_scaling={"rope_type": "default", "mrope_interleaved": True}), "mrope_section"),
    (lambda c: c.update(rope_scaling={"rope_type": "longrope", "short_factor": [1.0], "long_factor": [1.0]}),
     "short_factor"),
])
def test_bad_configs_name_the_key(edit, match):
    c = json.loads(json.dumps(config("llama-3.1-8b")))
    edit(c)
    with pytest.raises(ValueError, match=match):
        vkrope.from_hf(c)


def test_a_hub_id_is_told_vkrope_does_not_download(tmp_path, monkeypatch, capsys):
    """'org/name' that is no local path reads like a Hub id: the 'no such file' says vkrope does not download and
    what to pass instead; a missing local-looking path (absolute, relative with './', deeper, a .json) does not."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=r"^config: no such file 'meta-llama/Llama-3\.1-8B' \(it looks like a Hugging "
                                         r"Face Hub id: vkrope does not download from the Hub; pass the path of the "
                                         r"model's config\.json, or its contents as a dict\)$"):
        vkrope.from_hf("meta-llama/Llama-3.1-8B")
    from vkrope.__main__ import main
    assert main(["config", "meta-llama/Llama-3.1-8B"]) == 1  # (the command line says so too, its own way)
    assert capsys.readouterr().err.endswith("does not download from the Hub; pass the path of a downloaded "
                                            "config.json)\n")
    for path in (str(tmp_path / "a" / "b"), "./a/b", "a/b/c", "a/config.json"):
        with pytest.raises(ValueError, match=r"^config: no such file '[^']*'$"):
            vkrope.from_hf(path)
    (tmp_path / "meta-llama" / "Llama-3.1-8B").mkdir(parents=True)  # a local folder of that name: its config.json
    with pytest.raises(ValueError, match=r"^config: no such file 'meta-llama/Llama-3\.1-8B/config\.json'$"):
        vkrope.from_hf("meta-llama/Llama-3.1-8B")


def test_a_rotated_width_the_class_refuses_is_refused_for_every_layer_type():
    """An adversary's finding: NeoMME's config class raises unless every layer type's rotated width is a multiple
    of 4 (its two position axes take alternate pairs; transformers 5.25 raised on the three configs below and
    loaded the last); vkrope read them. The rules table measures it (`width_step`), and the refusal holds
    whichever layer type is asked for."""
    def neomme(head_dim: int, full: float, sliding: float = 1.0) -> dict:
        return {"model_type": "neomme", "hidden_size": 1024, "num_attention_heads": 16, "head_dim": head_dim,
                "rope_parameters": {
                    "full_attention": {"rope_type": "default", "rope_theta": 1e6, "partial_rotary_factor": full},
                    "sliding_attention": {"rope_type": "default", "rope_theta": 1e4, "partial_rotary_factor": sliding}}}
    for cfg, bad, width in ((neomme(72, 0.25), "full_attention", 18), (neomme(70, 0.4), "sliding_attention", 70),
                            (neomme(64, 0.03125), "full_attention", 2)):
        for asked in ("full_attention", "sliding_attention"):
            with pytest.raises(ValueError, match=rf"^config: the rotated width of layer type '{bad}' is {width} "
                                                 r"\(head_dim \d+ times its partial factor\): neomme's config class "
                                                 r"refuses widths that are not a multiple of 4"):
                vkrope.from_hf(cfg, layer_type=asked)
    assert vkrope.from_hf(neomme(64, 0.25), layer_type="full_attention").rotary_dim == 16
    assert vkrope.from_hf(neomme(64, 0.25), layer_type="sliding_attention").rotary_dim == 64


def test_a_diffusers_config_is_refused_with_the_nd_route():
    """An adversary's finding: a diffusers transformer's config (no model_type) was told to pass like='llama',
    which read Cosmos' 3-axis RoPE as Llama's 1-D one, its rope_scale dropped unsaid."""
    flux = {"_class_name": "FluxTransformer2DModel", "_diffusers_version": "0.42.1", "axes_dims_rope": [16, 56, 56],
            "num_attention_heads": 24, "attention_head_dim": 128}
    cosmos = {"_class_name": "CosmosTransformer3DModel", "num_attention_heads": 32, "attention_head_dim": 128,
              "rope_scale": [2.0, 1.0, 1.0]}
    for cfg in (flux, cosmos, {**flux, "model_type": None}):
        for call in (vkrope.from_hf, functools.partial(vkrope.from_hf, like="llama"), vkrope.hf_layers,
                     vkrope.hf_parts, vkrope.hf_layer_types):
            with pytest.raises(ValueError, match=r"^config: a diffusers config \(_class_name '\w+'\), not a "
                                                 r"transformers model's.*vkrope\.NdFreqs .*docs/guide/nd\.md .*apply_nd$"):
                call(cfg)


def test_layer_type_errors_and_inputs(tmp_path):
    with pytest.raises(ValueError, match="layer_type.*sliding_attention"):
        vkrope.from_hf(config("gemma-3-4b"))
    with pytest.raises(ValueError, match="layer_type must be one of"):
        vkrope.from_hf(config("gemma-3-4b"), layer_type="local")
    with pytest.raises(ValueError, match="one RoPE for every layer"):
        vkrope.from_hf(config("phi-2"), layer_type="full_attention")
    with pytest.raises(ValueError, match=r"no such file '[^']*nope\.json'$"):
        vkrope.from_hf(str(tmp_path / "nope.json"))
    # bytes are a path, as from_gguf reads them; a config's contents given as a str or bytes are told apart
    (tmp_path / "config.json").write_text(json.dumps(config("phi-2")))
    assert vkrope.from_hf(os.fsencode(tmp_path)) == vkrope.from_hf(config("phi-2"))
    for contents in (json.dumps(config("phi-2")), json.dumps(config("phi-2")).encode()):
        with pytest.raises(ValueError, match=r"^config: no such file .*: a str or bytes is read as a path, and this "
                                             r"looks like a config\.json's contents: pass json\.loads of it$"):
            vkrope.from_hf(contents)
    with pytest.raises(TypeError, match=r"a path to a config\.json \(str, bytes or os\.PathLike\).*got bytearray"):
        vkrope.from_hf(bytearray(b"x"))
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ValueError, match="not JSON"):
        vkrope.from_hf(str(tmp_path / "bad.json"))
    (tmp_path / "model.gguf").write_bytes(b"GGUF\x03\x00\x00\x00" + bytes(16))
    with pytest.raises(ValueError, match=r"^config: '[^']*model\.gguf' is a GGUF file, not a config\.json: read it with "
                                         r"vkrope\.from_gguf$"):
        vkrope.from_hf(str(tmp_path / "model.gguf"))
    with pytest.raises(TypeError, match="config must be a dict"):
        vkrope.from_hf(42)
    (tmp_path / "n.json").write_text("[1, 2]")  # (a file's JSON that is no object: the file is named)
    with pytest.raises(ValueError, match=r"^config: '[^']*n\.json' holds a JSON list, not an object"):
        vkrope.from_hf(str(tmp_path / "n.json"))


@pytest.mark.parametrize("call, exc, match", [
    (lambda q, k, r: vkrope.apply_rotary_pos_emb(q, k, r, np.zeros((1, 3), np.int64)), ValueError, r"\[B, S\]"),
    (lambda q, k, r: vkrope.apply_rotary_pos_emb(q, k, r, np.full((1, 2), 0.5, np.float32)), ValueError,
     "whole positions"),  # (whole float ids are read: Qwen3-Omni's)
    (lambda q, k, r: vkrope.apply_rotary_pos_emb(q, k, r, np.zeros((1, 2), np.complex64)), TypeError, "integers"),
    (lambda q, k, r: vkrope.apply_rotary_pos_emb(q, k, r, -np.ones((1, 2), np.int64)), ValueError, "position_ids"),
    (lambda q, k, r: vkrope.apply_rotary_pos_emb(q, k, r, [[0, 1]]), TypeError,
     r"^position_ids must be a numpy integer array \[B, S\]; got list \(convert it with np\.asarray\(position_ids\)\)$"),
    (lambda q, k, r: vkrope.apply_rotary_pos_emb(q, k[:, :, :1], r, np.zeros((1, 2), np.int64)), ValueError,
     "share B, S and D"),
    (lambda q, k, r: vkrope.apply_rotary_pos_emb(q, k[..., :64], r, np.zeros((1, 2), np.int64)), ValueError,
     "^k: the ModelRope's head dim is 128 .of which 128 rotate.; this call.s heads have D = 64: pass the heads"),
    (lambda q, k, r: vkrope.apply_rotary_pos_emb(q, k.astype(np.float16), r, np.zeros((1, 2), np.int64)), TypeError,
     "one dtype"),
    (lambda q, k, r: vkrope.apply_rotary_pos_emb(q[0], k, r, np.zeros((1, 2), np.int64)), ValueError, "4D"),
    (lambda q, k, r: vkrope.apply_rotary_pos_emb(q, k, "llama", np.zeros((1, 2), np.int64)), TypeError, "spec"),
    (lambda q, k, r: vkrope.apply_rotary_pos_emb(q, k, r, np.zeros((1, 2), np.int64), out_q=np.zeros(3, np.float32)),
     ValueError,
     "out_q must have shape"),
    (lambda q, k, r: vkrope.apply_rotary_pos_emb(q[..., :64], k[..., :64], r, np.zeros((1, 2), np.int64)), ValueError,
     "head dim is 128 .of which 128 rotate.; this call.s heads have D = 64"),
    (lambda q, k, r: vkrope.apply_rotary_pos_emb(q[..., :64], k[..., :64], vkrope.InvFreqs(r.inv_freq()),
                                                 np.zeros((1, 2), np.int64)), ValueError, "rotary dim 128"),
    # (a mask would be ignored, as every other op's positions refuse it: an adversary's)
    (lambda q, k, r: vkrope.apply_rotary_pos_emb(q, k, r, np.ma.masked_array([[0, 9]], mask=[[0, 1]])), TypeError,
     r"^position_ids must be a plain numpy array, not a masked array \(vkrope would ignore the mask\)"),
    (lambda q, k, r: vkrope.apply_rotary_pos_emb(q, k, vkrope.InvFreqs(r.inv_freq()), np.ma.masked_array([[0, 9]])),
     TypeError, "not a masked array"),
    (lambda q, k, r: vkrope.apply_rotary_pos_emb(q, k, r, np.asarray([[0, 1]]).view(np.matrix)), TypeError,
     r"^position_ids must be a plain numpy array, not np\.matrix"),
])
def test_bad_calls_are_refused_before_gpu_work(call, exc, match):
    rope = vkrope.from_hf(config("llama-3.1-8b"))
    q = np.zeros((1, 2, 2, 128), np.float32)
    k = np.zeros((1, 1, 2, 128), np.float32)
    with pytest.raises(exc, match=match):
        call(q, k, rope)
    y, _ = vkrope.apply_rotary_pos_emb(q + 1, k, rope, np.zeros((1, 2), np.int64))  # still usable
    assert np.array_equal(y, q + 1)


def test_deepseek_full_q_beside_its_rotary_k_pe_gets_the_head_dim_hint():
    """The likeliest DeepSeek mistake, the whole q (192 = qk_nope_head_dim + qk_rope_head_dim) beside k_pe (its
    64 rotary channels only): the ModelRope's head dim is checked first, q's then k's, so the message says which
    heads to pass, not only that q and k differ in D (which an InvFreqs spec, having no head dim, still gets)."""
    rope = vkrope.from_hf(config("deepseek-v3"))
    q, k_pe, pos = np.zeros((1, 128, 4, 192), np.float32), np.zeros((1, 1, 4, 64), np.float32), np.zeros((1, 4), int)
    hint = r"this call's heads have D = 192: pass the heads the model rotates " \
        r"\(the rotated part of each head: q\[\.\.\., qk_nope_head_dim:\]\)$"
    with pytest.raises(ValueError, match=r"^q: the ModelRope's head dim is 64 \(of which 64 rotate\); " + hint):
        vkrope.apply_rotary_pos_emb(q, k_pe, rope, pos)
    with pytest.raises(ValueError, match=r"^k: the ModelRope's head dim is 64 \(of which 64 rotate\); " + hint):
        vkrope.apply_rotary_pos_emb(k_pe, q[:, :1], rope, pos)
    with pytest.raises(ValueError, match=r"^k \(1, 1, 4, 64\) must share B, S and D with q \(1, 128, 4, 192\)"):
        vkrope.apply_rotary_pos_emb(q, k_pe, vkrope.InvFreqs(rope.inv_freq()), pos)
    q_rot, k_rot = vkrope.apply_rotary_pos_emb(q[..., 128:], k_pe, rope, pos)  # the rotary part: as documented
    assert q_rot.shape == (1, 128, 4, 64) and k_rot.shape == (1, 1, 4, 64)
    # ExecuTorch's two ops ([B, S, H, D]) taking the ModelRope give the same hint
    xq, xk = np.zeros((1, 4, 2, 192), np.float32), np.zeros((1, 4, 1, 64), np.float32)
    for op in (vkrope.apply_rotary_emb, vkrope.apply_rotary_emb_hf):
        with pytest.raises(ValueError, match=r"^xq: the ModelRope's head dim is 64 \(of which 64 rotate\); " + hint):
            op(xq, xk, rope, None)


def test_q_and_k_given_tokens_first_get_a_layout_hint():
    """q and k as [B, S, H, D] with equal head counts pass as [B, H, S, D]: position_ids [B, S] (or [1, S]) that
    fit their axis 1 are refused with a hint that the axes look exchanged; a mismatch it does not explain gets none."""
    rope = vkrope.from_hf(config("llama-3.1-8b"))
    q = np.zeros((2, 16, 8, 128), np.float32)  # [B, S = 16, H = 8, D]
    hint = r" \(q and k are read as \[B, H, S, D\]: are they \[B, S, H, D\]\? transpose\(0, 2, 1, 3\)\)$"
    for pos in (np.zeros((2, 16), np.int64), np.zeros((1, 16), np.int64)):
        with pytest.raises(ValueError, match=r"^position_ids must be \[B, S\] = \[2, 8\] \(q's batch and tokens\); "
                                             rf"got \[{pos.shape[0]}, 16\]" + hint):
            vkrope.apply_rotary_pos_emb(q, q, rope, pos)
    with pytest.raises(ValueError, match=r"^position_ids must be \[B, S\] = \[2, 8\] .*; got \[2, 15\]$"):
        vkrope.apply_rotary_pos_emb(q, q, rope, np.zeros((2, 15), np.int64))


def test_mrope_position_ids_checked():
    rope = vkrope.from_hf(config("qwen2-vl-7b"))
    q = np.zeros((1, 1, 2, 128), np.float32)
    with pytest.raises(ValueError, match=r"\[3, B, S\]"):
        vkrope.apply_rotary_pos_emb(q, q, rope, np.zeros((2, 1, 2), np.int64))
    with pytest.raises(ValueError, match=r"\[B, S\]"):
        vkrope.apply_rotary_pos_emb(q, q, rope, np.zeros((3, 1, 3), np.int64))


def test_cli_config(capsys, tmp_path):
    from vkrope.__main__ import main

    assert main(["config", os.path.join(CONFIGS, "gemma-3-4b.json")]) == 0
    text = capsys.readouterr().out
    assert "layer type full_attention" in text and "layer type sliding_attention" in text
    assert "linear" in text and "10000.0" in text
    assert main(["config", os.path.join(CONFIGS, "phi-3.5-mini.json"), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["rope_type"] == "longrope" and got["rotary_dim"] == 96 and len(got["long_factor"]) == 48
    assert abs(got["attention_factor"] - 1.1902380714238083) < 1e-15
    assert main(["config", os.path.join(CONFIGS, "missing.json")]) == 1
    assert "no such file" in capsys.readouterr().err
    # from_hf's like= is the command's --like
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "mymodel", "hidden_size": 256,
                                                      "num_attention_heads": 4}))
    assert main(["config", str(tmp_path / "config.json")]) == 1
    err = capsys.readouterr().err
    assert err.rstrip().endswith("pass --like <that model type>") and "like=" not in err, err
    assert main(["config", str(tmp_path / "config.json"), "--like", "lama"]) == 1
    assert capsys.readouterr().err.startswith("vkrope: error: ValueError: --like: 'lama' is not a model type")


def test_mrope_with_yarn_carries_its_attention_factor():
    """Qwen2.5-VL's long-context setting: M-RoPE sections with YaRN (its model
    card's rope_scaling), whose attention factor the N-D branch must apply."""
    cfg = json.loads(json.dumps(config("qwen2-vl-7b")))
    cfg["rope_scaling"] = {"type": "yarn", "mrope_section": [16, 24, 24], "factor": 4,
                           "original_max_position_embeddings": 32768}
    rope = vkrope.from_hf(cfg)
    assert rope.mrope_section == (16, 24, 24) and rope.rope_type == "yarn"
    ref_rope = oracle_hf.rope_of(cfg)
    assert abs(rope.attention_factor - (0.1 * math.log(4) + 1)) < 1e-12
    rng = np.random.default_rng(7)
    q = rng.standard_normal((1, 2, 9, 128)).astype(np.float32)
    pos = rng.integers(0, 100000, (3, 1, 9))
    yq, _ = vkrope.apply_rotary_pos_emb(q, q[:, :1].copy(), rope, pos)
    c, s = oracle_hf.cos_sin(ref_rope, pos)
    ref = oracle_hf.rotate(q, c, s, 128)
    assert np.abs(yq - ref).max() < 2e-5 * np.abs(ref).max()


def test_models_with_interleaved_pairs():
    """transformers' GLM, Cohere, ERNIE 4.5, Helium and DeepSeek-V2 rotate
    pairs (2i, 2i+1) whatever the config says; MLA configs default
    rope_interleave to true; the rest rotate halves."""
    base = {"hidden_size": 1024, "num_attention_heads": 8, "rope_theta": 10000.0}
    for model, inter in (("glm4", True), ("cohere", True), ("ernie4_5", True),
                         ("helium", True), ("deepseek_v2", True), ("mistral4", True), ("llama", False),
                         ("qwen3", False)):
        assert vkrope.from_hf(dict(base, model_type=model)).interleaved is inter, model
    assert vkrope.from_hf(dict(base, model_type="deepseek_v3", rope_interleave=False)).interleaved is False


def test_pairs_of_the_spec_and_the_op_must_agree():
    """A ModelRope's pairs (DeepSeek's interleaved, Hugging Face's rotate-half)
    against an op's layout: the same result where they agree, a ValueError
    naming the argument where they do not (never silently the other pairs)."""
    ds = vkrope.from_hf(config("deepseek-v3"))
    q = np.random.default_rng(8).standard_normal((1, 2, 3, 64)).astype(np.float32)
    pos = np.array([[0, 7, 100]])
    want, _ = vkrope.apply_rotary_pos_emb(q, q, ds, pos)
    with pytest.raises(ValueError, match="cos_cache: the ModelRope pairs channels interleaved"):
        vkrope.rotary_embedding(q, ds, None, pos)
    assert np.array_equal(vkrope.rotary_embedding(q, ds, None, pos, interleaved=1), want)
    dev = vkrope.default_device()
    kc = dev.asarray(np.zeros((1, 2, 128, 64), np.float32))
    vc = dev.asarray(np.zeros((1, 2, 128, 64), np.float32))
    with pytest.raises(ValueError, match="freqs: the ModelRope pairs channels interleaved"):
        vkrope.rope_and_cache(q, q, q, kc, vc, ds, pos)
    assert not kc.get().any()
    got = vkrope.rope_and_cache(q, q, q, kc, vc, ds, pos, interleaved=True)
    assert np.abs(got - want).max() < 1e-6
    bshd = q.transpose(0, 2, 1, 3).copy()
    with pytest.raises(ValueError, match="freqs_cos: the ModelRope pairs channels interleaved"):
        vkrope.apply_rotary_emb_hf(bshd, bshd, ds, None)
    llama = vkrope.from_hf(config("llama-3.2-1b"))
    with pytest.raises(ValueError, match="freqs_cos: the ModelRope pairs channels rotate-half"):
        vkrope.apply_rotary_emb(bshd, bshd, llama, None)


def test_outputs_that_alias_the_other_input_are_refused():
    rope = vkrope.from_hf(config("llama-3.2-1b"))
    rng = np.random.default_rng(9)
    q = rng.standard_normal((1, 1, 4, 64)).astype(np.float32)
    k = (2 * q).astype(np.float32)
    pos = np.arange(4)[None]
    rq, rk = vkrope.apply_rotary_pos_emb(q, k, rope, pos)
    qq = q.copy()
    with pytest.raises(ValueError, match="out_q and k are the same memory"):
        vkrope.apply_rotary_pos_emb(qq, qq, rope, pos, out_q=qq, out_k=qq)
    assert np.array_equal(qq, q)  # untouched
    kk = k.copy()
    with pytest.raises(ValueError, match="out_q and k"):
        vkrope.apply_rotary_pos_emb(q, kk, rope, pos, out_q=kk)
    o = np.zeros_like(q)
    with pytest.raises(ValueError, match="out_q and out_k"):
        vkrope.apply_rotary_pos_emb(q, k, rope, pos, out_q=o, out_k=o)
    buf = np.concatenate([q, k], 1)
    with pytest.raises(ValueError, match="out_q and k"):
        vkrope.apply_rotary_pos_emb(buf[:, :1], buf[:, 1:], rope, pos, out_q=buf[:, 1:])
    # in place and q, k as disjoint views of one buffer are fine
    b2 = buf.copy()
    a, b = vkrope.apply_rotary_pos_emb(b2[:, :1], b2[:, 1:], rope, pos, out_q=b2[:, :1], out_k=b2[:, 1:])
    assert np.array_equal(b2[:, :1], rq) and np.array_equal(b2[:, 1:], rk)
    same = q.copy()
    x, y = vkrope.apply_rotary_pos_emb(same, same, rope, pos)  # q is k, no outputs: both from the input
    assert np.array_equal(x, rq) and np.array_equal(y, rq)
    dev = vkrope.default_device()
    dq = dev.asarray(q)
    with pytest.raises(ValueError, match="out_q and k"):
        dev.apply_rotary_pos_emb(dq, dq, rope, pos, out_q=dq)
    assert np.array_equal(dq.get(), q)


@pytest.mark.parametrize("edit, match", [
    (lambda c: c["rope_scaling"].update(rope_type="yarn", factor=4.0) or c.update(rope_theta=1), "rope_theta > 1"),
    (lambda c: c.update(rope_scaling={"rope_type": "longrope", "short_factor": [1.0] * 64, "long_factor": [2.0] * 64,
                                      "original_max_position_embeddings": 1}), "original_max_position_embeddings"),
    (lambda c: c.update(hidden_size=8, num_attention_heads=4, rope_scaling={"rope_type": "dynamic", "factor": 2.0}),
     "rotary dim of 4 or more"),
    (lambda c: c.update(max_position_embeddings=0), "max_position_embeddings must be >= 1"),
    (lambda c: c.update(model_type=5), "model_type must be a string .*; got int 5"),
    (lambda c: c.update(rope_theta=10 ** 400), "rope_theta must be a positive finite number; got 1000000000"),
    (lambda c: c.update(rope_theta=int("9" * 4000) * 10 ** 1000), "positive finite number; got an int of 166.. bits"),
    (lambda c: c.update(rope_theta=float("nan")), "rope_theta must be a positive finite number; got nan"),
    (lambda c: c.update(rope_theta="10000"), "^config: rope_theta must be a number; got '10000'"),  # (as given)
])
def test_degenerate_parameters_are_value_errors_at_once(edit, match):
    c = json.loads(json.dumps(config("llama-3.1-8b")))
    edit(c)
    with pytest.raises(ValueError, match=match):
        vkrope.from_hf(c)


@pytest.mark.parametrize("make, match", [
    (lambda: vkrope.from_hf({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 2, "head_dim": 2**28}),
     "config: head_dim must be at most 65536"),
    (lambda: vkrope.ModelRope("default", 2**40, 64, 1e4), "head_dim must be at most 65536"),
    (lambda: vkrope.RopeFreqs(2**28), "dim must be at most 65536"),
    (lambda: vkrope.AxialFreqs(2**28, 4, 4), "dim must be at most 65536"),
    (lambda: vkrope.axial_freqs(2**28, 4, 4), "dim must be at most 65536"),
    (lambda: vkrope.hf_layers({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 2,
                               "num_hidden_layers": 2**40}), "num_hidden_layers must be at most 65536"),
])
def test_a_huge_head_or_layer_count_is_refused_before_anything_is_made(make, match):
    """A head_dim of 2^28 in a config made gigabytes of frequencies (and
    hung) before a check named it, and 2^40 layers made hf_layers loop (an
    adversarial helper's files): refused at once, naming the key."""
    with pytest.raises(ValueError, match=match):
        make()


def test_the_widest_head_is_taken_and_one_pair_more_refused():
    """MAX_HEAD_DIM (65536 channels) is the widest head, not one past it: a spec, a ModelRope, an N-D spec and
    inv_freq of exactly that width are taken (their frequencies are the formula's); a pair more is refused,
    naming the argument."""
    assert vkrope.RopeFreqs(1 << 16).dim == 1 << 16
    rope = vkrope.ModelRope("default", 1 << 16, 1 << 16, 1e4)
    inv = rope.inv_freq().astype(np.float64)
    assert inv.shape == (1 << 15,) and np.allclose(inv, 1e4 ** (-np.arange(0, 1 << 16, 2) / (1 << 16)), rtol=1e-6)
    assert vkrope.NdFreqs((1 << 15, 1 << 15)).dim == 1 << 16
    assert vkrope.InvFreqs(inv_freq=np.ones(1 << 15, np.float32)).dim == 1 << 16
    for make, match in [(lambda: vkrope.RopeFreqs((1 << 16) + 2), "dim must be at most 65536 .*; got 65538"),
                        (lambda: vkrope.ModelRope("default", (1 << 16) + 2, 64, 1e4), "head_dim must be at most 65536"),
                        (lambda: vkrope.NdFreqs((1 << 15, (1 << 15) + 2)),
                         "axes_dim must sum to at most 65536 .*; got 65538"),
                        (lambda: vkrope.InvFreqs(inv_freq=np.ones((1 << 15) + 1, np.float32)),
                         "inv_freq must hold at most 32768 values; got 32769")]:
        with pytest.raises(ValueError, match=match):
            make()


def test_messages_name_the_key_once():
    c = json.loads(json.dumps(config("llama-3.1-8b")))
    c["rope_scaling"]["factor"] = "8"
    with pytest.raises(ValueError) as info:
        vkrope.from_hf(c)
    assert str(info.value).startswith("config: rope_scaling.factor must be a number")
    with pytest.raises(ValueError, match="^angle must be"):
        vkrope.from_hf(config("llama-3.1-8b"), angle="float64")
    with pytest.raises(TypeError, match="layer_type must be a str"):
        vkrope.from_hf(config("gemma-3-4b"), layer_type=["full_attention"])
    with pytest.raises(TypeError, match="path must be a str"):
        vkrope.from_gguf(None)


def test_exact_angle_limits_checked_when_read():
    c = json.loads(json.dumps(config("qwen2-vl-7b")))
    c["rope_scaling"] = {"type": "linear", "factor": 0.1, "mrope_section": [16, 24, 24]}
    vkrope.from_hf(c)  # float32 angles: fine
    with pytest.raises(ValueError, match="angle='exact'"):
        vkrope.from_hf(c, angle="exact")


def test_cos_sin_of_no_tokens_and_neox_base():
    rope = vkrope.from_hf(config("llama-3.1-8b"))
    c, s = rope.cos_sin(np.zeros((2, 0), np.int64))
    assert c.shape == s.shape == (2, 0, 128)
    neox = vkrope.from_hf({"model_type": "gpt_neox", "hidden_size": 64, "num_attention_heads": 4, "rotary_pct": 0.25,
                           "rotary_emb_base": 500})
    assert neox.theta == 500.0 and neox.rotary_dim == 4


def test_transformers_class_defaults_and_model_classes():
    """What transformers' config classes decide where a config.json is silent
    or says otherwise: Gemma 3's minimal 4B config, Phi-3's original length,
    Phi-3's "yarn" (an early name of its longrope), Qwen-VL's M-RoPE kind by
    model class, zero betas as defaults, partial_rotary_factor 1."""
    full = config("gemma-3-4b")
    minimal = {"model_type": "gemma3", "text_config": {"model_type": "gemma3_text", "hidden_size": 2560,
                                                        "num_hidden_layers": 34, "sliding_window": 1024,
                                                        "rope_scaling": {"factor": 8.0, "rope_type": "linear"}}}
    for lt in ("full_attention", "sliding_attention"):
        assert vkrope.from_hf(minimal, layer_type=lt) == vkrope.from_hf(full, layer_type=lt)
    phi = json.loads(json.dumps(config("phi-3.5-mini")))
    del phi["original_max_position_embeddings"]
    phi["rope_scaling"]["original_max_position_embeddings"] = 8192
    assert vkrope.from_hf(phi).original_max_position_embeddings == 4096  # Phi3Config's default wins, as there
    phi["rope_scaling"]["type"] = "yarn"
    assert vkrope.from_hf(phi).rope_type == "longrope"
    vl = json.loads(json.dumps(config("qwen2-vl-7b")))
    vl["rope_scaling"]["mrope_interleaved"] = True
    assert vkrope.from_hf(vl).mrope_layout == "chunked"  # Qwen2-VL's module chunks whatever the flag says
    q3 = json.loads(json.dumps(config("qwen3-vl-8b")))
    q3["text_config"]["rope_scaling"]["mrope_interleaved"] = False
    assert vkrope.from_hf(q3).mrope_layout == "interleaved"
    ds = json.loads(json.dumps(config("deepseek-v3")))
    ds["rope_scaling"].update(beta_fast=0, beta_slow=0, mscale=0)
    a, b = vkrope.from_hf(ds), vkrope.from_hf(config("deepseek-v3"))
    assert np.array_equal(a.inv_freq(), b.inv_freq())  # betas 0: 32 and 1, as transformers' `or`
    p1 = json.loads(json.dumps(config("llama-3.1-8b")))
    p1["partial_rotary_factor"] = 1.0
    assert vkrope.from_hf(p1) == vkrope.from_hf(config("llama-3.1-8b"))


def test_early_rope_type_names_only_where_the_class_renames_them():
    """"su" and "yarn" are Phi-3's early names of its longrope, "mrope"
    Qwen2-VL's of its default: transformers 5.25's Phi3Config,
    Phi4MultimodalConfig, Qwen2VLTextConfig and Qwen2_5_VLTextConfig rename
    them; every other class keeps the name, and its rotary module fails on
    it (ROPE_INIT_FUNCTIONS has neither: KeyError), so vkrope refuses it
    there rather than guess. Phi-3's "su" takes the top-level original
    length (5.25 renames before it standardizes)."""
    phi = json.loads(json.dumps(config("phi-3.5-mini")))
    phi["rope_scaling"]["type"] = "su"
    phi["rope_scaling"]["original_max_position_embeddings"] = 2048
    su = vkrope.from_hf(phi)
    assert (su.rope_type, su.original_max_position_embeddings) == ("longrope", 4096)
    assert vkrope.from_hf(dict(phi, model_type="phi4_multimodal")).rope_type == "longrope"
    vl = config("qwen2-vl-7b")
    assert vl["rope_scaling"]["type"] == "mrope" and vkrope.from_hf(vl).rope_type == "default"
    assert vkrope.from_hf({"model_type": "colqwen2", "vlm_config": vl}).rope_type == "default"
    base = {"hidden_size": 2048, "num_attention_heads": 16, "max_position_embeddings": 8192}
    longrope = {"short_factor": [1.0] * 64, "long_factor": [2.0] * 64, "original_max_position_embeddings": 2048}
    for model_type, rope in (("llama", {"type": "su", **longrope}), ("phimoe", {"rope_type": "su", **longrope}),
                             ("qwen3_vl_text", {"type": "mrope", "mrope_section": [16, 8, 8]}),
                             ("mistral", {"type": "mrope"}), ("phi3", {"type": "mrope"})):
        name = rope.get("rope_type", rope.get("type"))
        key = "rope_type" if "rope_type" in rope else "type"
        with pytest.raises(ValueError, match=f"rope_scaling.{key} '{name}': {model_type}'s config class keeps "
                                             f"this name.*write {key} '(longrope|default)'"):
            vkrope.from_hf({**base, "model_type": model_type, "rope_scaling": rope})
    both = {**base, "model_type": "llama", "rope_scaling": {"type": "su", "rope_type": "longrope", **longrope}}
    assert vkrope.from_hf(both).rope_type == "longrope"  # (rope_type wins, as transformers' setdefault)
    # Phi-3's class renames both keys ("yarn" beside "longrope" is one type to it), another class does not.
    for pair in (("yarn", "longrope"), ("longrope", "yarn"), ("su", "yarn")):
        rope = {**phi["rope_scaling"], "type": pair[0], "rope_type": pair[1]}
        assert vkrope.from_hf(dict(phi, rope_scaling=rope)).rope_type == "longrope", pair
    listed = {**base, "model_type": "llama", "rope_scaling": {"type": ["su"], "rope_type": "longrope", **longrope}}
    with pytest.raises(ValueError, match="contradict"):  # (a ValueError, not a TypeError of hashing a list)
        vkrope.from_hf(listed)
    with pytest.raises(ValueError, match="rope_scaling.type \\('yarn'\\) and rope_type \\('longrope'\\) contradict"):
        vkrope.from_hf({**base, "model_type": "llama", "rope_scaling": {"type": "yarn", "rope_type": "longrope",
                                                                        **longrope}})


def test_mrope_invfreqs_refused_by_one_axis_ops():
    spec = vkrope.from_hf(config("qwen2-vl-7b")).freqs()
    assert spec.mrope
    x = np.zeros((1, 1, 2, 128), np.float32)
    one_axis = "M-RoPE .* turns each pair by one of three position axes; .* one position per token: use "
    with pytest.raises(ValueError, match=one_axis):
        vkrope.apply(x, spec, positions=np.arange(2))
    with pytest.raises(ValueError, match=one_axis):
        vkrope.rotary_embedding(x, spec, None, np.zeros((1, 2), np.int64))
    with pytest.raises(ValueError, match=one_axis):
        vkrope.apply_rotary_emb_hf(x.transpose(0, 2, 1, 3).copy(), x.transpose(0, 2, 1, 3).copy(), spec, None)
    with pytest.raises(ValueError, match=r"position_ids must have shape \(1, 2\); got \(3, 1, 2\): rotary_embedding "
                                         r"turns every M-RoPE axis by one position per token .* apply_rotary_pos_emb$"):
        vkrope.rotary_embedding(x, vkrope.from_hf(config("qwen2-vl-7b")), None, np.zeros((3, 1, 2), np.int64))
    with pytest.raises(ValueError, match=r"got \(3, 1, 2\)$"):  # (a spec of one axis: no M-RoPE words)
        vkrope.rotary_embedding(x, vkrope.RopeFreqs(128), None, np.zeros((3, 1, 2), np.int64))
    with pytest.raises(TypeError, match="ModelRope decides its frequencies per call"):
        vkrope.apply(x, vkrope.from_hf(config("qwen2-vl-7b")), positions=np.arange(2))


def test_float_position_ids_are_read_where_whole():
    """Qwen3-Omni's get_rope_index builds float ids, which its rotary module turns by (`.float()`): float ids
    whose values are whole are read as those integers (bit for bit the integer call's); a fractional one (its
    video time axis at some frame rates) is refused, naming it, as is a NaN: rounding would change the
    rotation."""
    rope = vkrope.from_hf(config("qwen2-vl-7b"))
    q = np.random.default_rng(32).standard_normal((1, 2, 3, 128)).astype(np.float32)
    ids = np.array([[[0, 1, 5]], [[0, 2, 5]], [[0, 3, 5]]])
    want = vkrope.apply_rotary_pos_emb(q, q, rope, ids)
    for dtype in (np.float32, np.float64):
        got = vkrope.apply_rotary_pos_emb(q, q, rope, ids.astype(dtype))
        assert all(np.array_equal(g, w) for g, w in zip(got, want))
        assert np.array_equal(rope.cos_sin(ids.astype(dtype))[0], rope.cos_sin(ids)[0])
    for bad, shown in ((14.5, "14.5"), (np.nan, "nan")):
        frac = ids.astype(np.float32)
        frac[1, 0, 2] = bad
        with pytest.raises(ValueError, match=rf"^position_ids\[1, 0, 2\] is {shown}: vkrope takes whole positions"):
            vkrope.apply_rotary_pos_emb(q, q, rope, frac)
    with pytest.raises(ValueError, match=r"must lie in \[0, 2\^24\)"):
        vkrope.apply_rotary_pos_emb(q, q, rope, np.array([[0.0, 1.0, 1e300]]))


def test_an_mrope_model_in_the_one_position_ops_and_its_decode_step():
    """An M-RoPE ModelRope in an op of one position per token (ONNX's, ExecuTorch HF's, the decode step): that
    position on all three axes, as transformers expands [B, S] ids (text; every decode step's three axes are
    equal, cache_position + rope_deltas): apply_rotary_pos_emb's result for the same ids. The decode step
    takes it only with slots: a contiguous cache's rows are the positions, an M-RoPE model's are not its rows
    (an image's tokens share positions: keys would overwrite keys)."""
    rope = vkrope.from_hf(config("qwen2-vl-7b"))
    rng = np.random.default_rng(31)
    q = rng.standard_normal((2, 4, 3, 128)).astype(np.float32)
    k = rng.standard_normal((2, 2, 3, 128)).astype(np.float32)
    v = rng.standard_normal((2, 2, 3, 128)).astype(np.float32)
    pos = np.array([[40, 41, 42], [7, 8, 9]])
    want_q, want_k = vkrope.apply_rotary_pos_emb(q, k, rope, pos)
    assert np.array_equal(vkrope.rotary_embedding(q, rope, None, pos), want_q)
    start = np.array([[5, 6, 7]])  # (ExecuTorch HF: rows start_pos + s, one batch of positions)
    hq = vkrope.apply_rotary_emb_hf(q[:1].transpose(0, 2, 1, 3).copy(), k[:1].transpose(0, 2, 1, 3).copy(), rope,
                                    None, start_pos=5)[0].transpose(0, 2, 1, 3)
    assert np.array_equal(hq, vkrope.apply_rotary_pos_emb(q[:1], k[:1], rope, start)[0])
    dev = vkrope.default_device()
    pages = (np.full((4, 8, 2, 128), np.nan, np.float32) for _ in range(2))
    kc, vc = (dev.asarray(c) for c in pages)
    slots = np.array([[20, 21, 22], [3, 4, 5]])  # (the cache rows: not the positions)
    y = vkrope.rope_and_cache(q, k, v, kc, vc, rope, pos, slots=slots)
    assert np.array_equal(y, want_q)
    rows = kc.get().reshape(32, 2, 128)
    assert np.array_equal(rows[slots].transpose(0, 2, 1, 3), want_k)
    with pytest.raises(ValueError, match=r"an M-RoPE model's positions \(cache_position \+ rope_deltas\) are not its "
                                         r"cache rows, which a contiguous k_cache takes them as: pass "
                                         r"cache_position \(the cache rows\), or slots"):
        vkrope.rope_and_cache(q, k, v, dev.asarray(np.zeros((2, 2, 64, 128), np.float32)),
                              dev.asarray(np.zeros((2, 2, 64, 128), np.float32)), rope, pos)


SYNTHETIC = {
    "yarn-no-truncate": {"model_type": "llama", "hidden_size": 2880, "num_attention_heads": 64, "head_dim": 64, "rope_theta": 150000,
                         "max_position_embeddings": 131072,
                         "rope_scaling": {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                                          "truncate": False, "original_max_position_embeddings": 4096}},
    "yarn-derived-factor": {"model_type": "llama", "hidden_size": 1024, "num_attention_heads": 8, "rope_theta": 10000.0,
                            "max_position_embeddings": 65536,
                            "rope_scaling": {"rope_type": "yarn", "factor": None,
                                             "original_max_position_embeddings": 4096}},
    "linear-partial": {"model_type": "phi", "hidden_size": 2048, "num_attention_heads": 32, "partial_rotary_factor": 0.5,
                       "rope_theta": 10000.0, "rope_scaling": {"type": "linear", "factor": 4.0}},
    "llama3-v5-style": {"model_type": "llama", "hidden_size": 3072, "num_attention_heads": 24, "max_position_embeddings": 131072,
                        "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0,
                                            "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                            "original_max_position_embeddings": 8192}},
    "yarn-null-truncate": {"model_type": "llama", "hidden_size": 2048, "num_attention_heads": 16, "rope_theta": 1e4,
                           "max_position_embeddings": 8192,
                           "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "truncate": None,
                                            "original_max_position_embeddings": 2048}},
    "longrope-given-attention": {"model_type": "llama", "hidden_size": 512, "num_attention_heads": 8, "max_position_embeddings": 131072,
                                 "original_max_position_embeddings": 4096, "rope_theta": 10000.0,
                                 "rope_scaling": {"type": "longrope", "attention_factor": 1.3,
                                                  "short_factor": [1.0 + i / 64 for i in range(32)],
                                                  "long_factor": [2.0 + i for i in range(32)]}},
}


@pytest.mark.parametrize("name", sorted(SYNTHETIC))
def test_oracle_on_more_parameters(name):
    """Parameters the 13 real configs do not use (gpt-oss's truncate false,
    yarn's derived factor, v5-style rope_parameters, a given longrope
    attention factor): frequencies bit for bit the oracle's, q through the
    kernel against its float64 rotation."""
    cfg = SYNTHETIC[name]
    rope, ref = vkrope.from_hf(cfg), oracle_hf.rope_of(cfg)
    for n in (1, 4096, 4097, 131072):
        assert np.array_equal(rope.inv_freq(n), oracle_hf.inv_freq(ref, n)), n
    assert np.float32(rope.attention_factor) == np.float32(oracle_hf.attention_factor(ref))
    rng = np.random.default_rng(11)
    q = rng.standard_normal((1, 2, 5, rope.head_dim)).astype(np.float32)
    pos = np.array([[0, 3, 4096, 50000, 131071]])
    yq, _ = vkrope.apply_rotary_pos_emb(q, q, rope, pos)
    c, sn = oracle_hf.cos_sin(ref, pos)
    assert np.abs(yq - oracle_hf.rotate(q, c, sn, rope.rotary_dim)).max() < 2e-5 * max(1.0, rope.attention_factor)


@pytest.mark.parametrize("case", CASES)
def test_float32_steps_match_transformers_given_its_power(case, monkeypatch):
    """torch's float32 power is 1 ulp off the correctly rounded one vkrope
    takes on a few columns; given torch's own powers (stored by the golden
    script), vkrope's float32 steps after the power (divisions, llama3's
    smoothing, YaRN's blend, longrope's factors, dynamic's base) give
    transformers' inverse frequencies bit for bit."""
    import vkrope.models.rope_types as configs

    torch_pow, base = GOLD[case + "/torch_pow"], GOLD[case + "/pow_base"][0]
    real = configs.pow32
    used = []

    def torch_power(b, exps):
        if np.float32(b) == base and len(exps) == len(torch_pow):
            used.append(b)
            return torch_pow.copy()
        return real(b, exps)

    _, _, rope = rope_of_case(case)
    monkeypatch.setattr(configs, "pow32", torch_power)
    pos = rope.check_position_ids(GOLD[case + "/pos"])
    inv = rope.inv_freq(rope.seq_len(pos))
    assert used, case
    assert np.array_equal(inv, GOLD[case + "/inv_freq"]), (case, ulps32(inv, GOLD[case + "/inv_freq"]).max())


def test_phimoe_mscale_switches_at_the_original_length():
    """Phi-3.5-MoE's short_mscale / long_mscale: the attention factor of the
    side of the switch the call is on, its frequencies the short factors on
    both (as transformers 5.25's PhimoeRotaryEmbedding; the golden
    phi-3.5-moe-shape proves it on its module's output)."""
    cfg = {"model_type": "phimoe", "hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 131072,
           "original_max_position_embeddings": 4096, "rope_theta": 10000.0,
           "rope_scaling": {"type": "longrope", "short_factor": [1.0] * 64, "long_factor": [2.0] * 64,
                            "short_mscale": 1.1, "long_mscale": 1.25, "original_max_position_embeddings": 4096}}
    rope = vkrope.from_hf(cfg)
    assert rope.freqs(np.array([[4095]])).attention_factor == np.float32(1.1)
    assert rope.freqs(np.array([[4096]])).attention_factor == np.float32(1.25)
    c, _ = rope.cos_sin(np.array([[0, 4096]]))
    assert c[0, 0, 0] == np.float32(1.25)
    short = 1.0 / 10000.0 ** (np.arange(0, 128, 2) / 128)
    for n in (100, 4097, 131072):
        np.testing.assert_allclose(rope.inv_freq(n), short, rtol=2e-7)  # (the short factors, 1.0, at any length)
    other = dict(cfg, model_type="phi3")
    assert "short_mscale" in vkrope.from_hf(other).ignored  # transformers' Phi-3 does not read them
    # PhiMoE's class reads the rope dict's original length, not the top level's (Phi-3's, Llama's: the top's)
    assert vkrope.from_hf(dict(cfg, original_max_position_embeddings=2048)).original_max_position_embeddings == 4096
    top_only = dict(cfg, rope_scaling={k: v for k, v in cfg["rope_scaling"].items()
                                       if k != "original_max_position_embeddings"})
    assert vkrope.from_hf(top_only).original_max_position_embeddings == 131072  # (its max_position_embeddings)
    assert vkrope.from_hf(dict(top_only, model_type="phi3")).original_max_position_embeddings == 4096


def test_phimoe_scales_every_rope_type_by_its_mscales_and_is_refused_there():
    """transformers 5.25's PhimoeRotaryEmbedding multiplies cos and sin by short_mscale or long_mscale (by the
    length) beside every rope type but default, in place of the type's own factor (yarn's), and its config class
    refuses those types without the mscales: vkrope computes that beside longrope only, so it refuses the others
    (given with the mscales or without), naming why; not as a type the class refuses, which it is not."""
    base = {"model_type": "phimoe", "hidden_size": 64, "num_attention_heads": 4, "max_position_embeddings": 4096,
            "rope_theta": 10000.0}
    mscales = {"short_mscale": 1.1, "long_mscale": 1.3, "original_max_position_embeddings": 1024}
    kinds = {"yarn": {"factor": 4.0}, "linear": {"factor": 4.0}, "dynamic": {"factor": 4.0},
             "llama3": {"factor": 4.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0}}
    for kind, params in kinds.items():
        for extra in (mscales, {"original_max_position_embeddings": 1024}):
            cfg = dict(base, rope_scaling={"rope_type": kind, **params, **extra})
            with pytest.raises(ValueError, match=rf"rope_scaling.rope_type '{kind}': phimoe's model scales cos and "
                               "sin by short_mscale or long_mscale in place of"):
                vkrope.from_hf(cfg)
    assert vkrope.from_hf(dict(base, rope_scaling={"rope_type": "default", **mscales})).rope_type == "default"
    with pytest.raises(ValueError, match="rope_type 'llama3': phi3's config class refuses it"):
        vkrope.from_hf(dict(base, model_type="phi3", rope_scaling={"rope_type": "llama3", **kinds["llama3"], **mscales}))


def test_a_shape_refused_says_what_to_give():
    """A file holding both rope_scaling and rope_parameters where the class reads them otherwise than vkrope
    (Cohere 2 MoE's, which ignores the rope_scaling; transformers' own to_dict() of a config built with both
    keeps both, so "as transformers saves them" would lead back to the refusal): the message says to give the
    one the model runs, and what the shape's letters mean; the one given alone is read."""
    cfg = {"model_type": "cohere2_moe", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
           "num_hidden_layers": 2, "sliding_window": 8, "layer_types": ["sliding_attention", "full_attention"],
           "rope_scaling": {"factor": 3.0, "rope_type": "linear"},
           "rope_parameters": {"rope_theta": 10000.0, "rope_type": "default"}, "rope_theta": 10000.0}
    with pytest.raises(ValueError, match=r"shape d\|d\|v\|-\|-, of rope_scaling \| rope_parameters \| rope_theta \| .*: "
                                         r"d a dict, v another value, - absent\): refused rather than guessed; give "
                                         r"only the one of rope_scaling and rope_parameters the model runs$"):
        vkrope.from_hf(cfg)
    with pytest.raises(ValueError, match=r"shape t\|e\|v\|-\|-, .*: t a dict with the legacy type, e an empty dict, v "
                                         r"another value, - absent\)"):  # (every letter of the shape explained)
        vkrope.from_hf(dict(cfg, rope_scaling={"type": "linear", "factor": 3.0}, rope_parameters={}))
    alone = vkrope.from_hf({k: v for k, v in cfg.items() if k != "rope_scaling"}, layer_type="sliding_attention")
    assert alone.rope_type == "default" and alone.theta == 10000.0


def test_keys_a_config_class_needs_beside_its_rope_type():
    """What transformers 5.25's config classes raise on, measured by the rules
    script: PhiMoE's longrope without short_mscale or long_mscale (or with a
    null one); Cosmos 3 Edge's rope dict without mrope_section; Cohere 2
    MoE's yarn without its original length in the rope dict (its top-level
    max_position_embeddings does not stand in); a null original length
    beside llama3; Mixtral's longrope without head_dim; longrope for Cosmos 3
    Edge and proportional for Phi-3. Each is refused, naming the key, and
    the same config with the key given is read."""
    lr = {"type": "longrope", "short_factor": [1.0] * 64, "long_factor": [2.0] * 64}
    moe = {"model_type": "phimoe", "hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 131072,
           "original_max_position_embeddings": 4096, "rope_scaling": dict(lr, short_mscale=1.1, long_mscale=1.25)}
    assert vkrope.from_hf(moe).rope_type == "longrope"
    for key in ("short_mscale", "long_mscale"):
        less = {k: v for k, v in moe["rope_scaling"].items() if k != key}
        with pytest.raises(ValueError, match=f"rope_scaling.{key} is missing: phimoe's config class needs it"):
            vkrope.from_hf(dict(moe, rope_scaling=less))
        with pytest.raises(ValueError, match=f"rope_scaling.{key} is null: phimoe's config class needs a value"):
            vkrope.from_hf(dict(moe, rope_scaling={**moe["rope_scaling"], key: None}))
    edge = {"model_type": "cosmos3_edge_text", "rope_parameters": {"rope_type": "default", "rope_theta": 5e5,
                                                                   "mrope_section": [24, 20, 20]}}
    assert vkrope.from_hf(edge).mrope_section == (24, 20, 20)
    with pytest.raises(ValueError, match="rope_parameters.mrope_section is missing: cosmos3_edge_text's"):
        vkrope.from_hf(dict(edge, rope_parameters={"rope_type": "default", "rope_theta": 5e5}))
    with pytest.raises(ValueError, match="reads rope_theta given this way otherwise"):  # (no dict: not "missing")
        vkrope.from_hf({"model_type": "cosmos3_edge_text", "rope_theta": 1e5})
    with pytest.raises(ValueError, match="rope_type 'longrope': cosmos3_edge_text's config class refuses it"):
        vkrope.from_hf(dict(edge, rope_parameters={**edge["rope_parameters"], **lr, "rope_type": "longrope"}))
    yarn = {"model_type": "cohere2_moe", "hidden_size": 1024, "num_attention_heads": 8, "max_position_embeddings": 8192,
            "rope_parameters": {"rope_type": "yarn", "rope_theta": 1e4, "factor": 4.0,
                                "original_max_position_embeddings": 2048}}
    assert vkrope.from_hf(yarn).original_max_position_embeddings == 2048
    with pytest.raises(ValueError, match="original_max_position_embeddings is missing: cohere2_moe's config class"):
        vkrope.from_hf(dict(yarn, rope_parameters={k: v for k, v in yarn["rope_parameters"].items()
                                                   if k != "original_max_position_embeddings"}))
    llama3 = json.loads(json.dumps(config("llama-3.1-8b")))
    llama3["rope_scaling"]["original_max_position_embeddings"] = None
    with pytest.raises(ValueError, match="rope_scaling.original_max_position_embeddings is null: llama's config"):
        vkrope.from_hf(llama3)
    mixtral = {"model_type": "mixtral", "hidden_size": 4096, "num_attention_heads": 32, "head_dim": 128,
               "rope_scaling": dict(lr, original_max_position_embeddings=4096)}
    assert vkrope.from_hf(mixtral).rope_type == "longrope"
    with pytest.raises(ValueError, match="config: head_dim is missing: mixtral's config class needs it beside "
                                         "rope_type 'longrope'"):
        vkrope.from_hf(dict(mixtral, head_dim=None))
    for kind, extra in (("yarn", {"factor": 4.0, "original_max_position_embeddings": 4096}),
                        ("dynamic", {"factor": 2.0})):  # (their rope functions read head_dim with no fallback)
        with pytest.raises(ValueError, match=f"config: head_dim is missing: mixtral's config class needs it beside "
                                             f"rope_type '{kind}'"):
            vkrope.from_hf(dict(mixtral, head_dim=None, rope_scaling={"rope_type": kind, **extra}))
    # A null original length beside longrope: Llama's model fails on it; Phi-3's class fills its own (4096)
    llama = {"model_type": "llama", "hidden_size": 2048, "num_attention_heads": 16, "max_position_embeddings": 8192,
             "rope_scaling": {**lr, "original_max_position_embeddings": None}}
    with pytest.raises(ValueError, match="rope_scaling.original_max_position_embeddings is null: llama's"):
        vkrope.from_hf(llama)
    phi_null = json.loads(json.dumps(config("phi-3.5-mini")))
    phi_null["rope_scaling"]["original_max_position_embeddings"] = None
    assert vkrope.from_hf(phi_null).original_max_position_embeddings == 4096
    phi = json.loads(json.dumps(config("phi-3.5-mini")))
    phi["rope_scaling"] = {"rope_type": "proportional", "factor": 2.0}
    with pytest.raises(ValueError, match="rope_type 'proportional': phi3's config class refuses it"):
        vkrope.from_hf(phi)


@pytest.mark.parametrize("kind, extra", [("linear", {"beta_fast": 3}), ("default", {"factor": 1.5}),
                                         ("llama3", {"beta_slow": 2, "attention_factor": 0.5}),
                                         ("yarn", {"low_freq_factor": 1.0})])
def test_keys_of_another_rope_type_are_listed_as_ignored(kind, extra):
    """A key of another rope type in a rope dict is not read (as transformers'
    rope functions do not read it): not among the params nor in the
    frequencies, but in `ignored` and the summary; a ModelRope made by hand
    with such a key (a typo too) is a ValueError naming it."""
    base = {"model_type": "llama", "hidden_size": 2048, "num_attention_heads": 16, "max_position_embeddings": 8192}
    own = {"linear": {"factor": 2.0}, "default": {}, "yarn": {"factor": 4.0, "original_max_position_embeddings": 2048},
           "llama3": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                      "original_max_position_embeddings": 2048}}[kind]
    plain = vkrope.from_hf({**base, "rope_scaling": {"rope_type": kind, **own}})
    rope = vkrope.from_hf({**base, "rope_scaling": {"rope_type": kind, **own, **extra}})
    assert rope.params == plain.params and sorted(rope.ignored) == sorted(extra)
    assert rope.summary()["ignored_keys"] == list(rope.ignored)
    assert np.array_equal(rope.inv_freq(), plain.inv_freq()) and rope.attention_factor == plain.attention_factor
    with pytest.raises(ValueError, match=rf"rope_type '{kind}' does not read \['{sorted(extra)[0]}'"):
        vkrope.ModelRope(kind, 128, 128, 10000.0, tuple(sorted({**dict(plain.params), sorted(extra)[0]: 1.0}.items())),
                         8192, plain.original_max_position_embeddings)


def test_position_ids_of_one_row_broadcast_over_the_batch():
    rope = vkrope.from_hf(config("llama-3.2-1b"))
    q = np.random.default_rng(12).standard_normal((3, 2, 4, 64)).astype(np.float32)
    pos = np.arange(100, 104)[None]
    a, _ = vkrope.apply_rotary_pos_emb(q, q, rope, pos)
    b, _ = vkrope.apply_rotary_pos_emb(q, q, rope, np.repeat(pos, 3, 0))
    assert np.array_equal(a, b)


def test_exact_cos_sin_reduced_exactly():
    """angle='exact' cos_sin forms the kernel's angle (reduced exactly), also
    where a frequency is huge (a factor below 1)."""
    cfg = {"model_type": "llama", "hidden_size": 256, "num_attention_heads": 4, "rope_theta": 10000.0,
           "rope_scaling": {"rope_type": "linear", "factor": 3e-7}}  # (a frequency whose products float64 rounds)
    rope = vkrope.from_hf(cfg, angle="exact")
    pos = np.array([[16777215, 9999991]])
    c, s = rope.cos_sin(pos)
    from decimal import Decimal, getcontext
    getcontext().prec = 60
    pi = Decimal("3.14159265358979323846264338327950288419716939937510582097494")
    f = Decimal(float(rope.inv_freq(None, np.float64)[0]))
    for j, p in enumerate(pos[0]):
        r = float((Decimal(int(p)) * f) % (2 * pi))
        assert abs(c[0, j, 0] - math.cos(r)) < 2e-7 and abs(s[0, j, 0] - math.sin(r)) < 2e-7
    q = np.ones((1, 1, 2, 64), np.float32)
    y, _ = vkrope.apply_rotary_pos_emb(q, q, rope, pos)
    assert abs(y[0, 0, 0, 0] - (c[0, 0, 0] - s[0, 0, 0])) < 1e-6


def test_more_transformers_rules():
    """Class default thetas, Gemma 3's nested local base, rope_scaling before
    rope_parameters, yarn's factor key, Phi-4-multimodal as Phi-3, M-RoPE
    layouts only for known models, GPT-J's rotary_dim, Llama 4's pairs."""
    base = {"hidden_size": 1024, "num_attention_heads": 8}
    assert vkrope.from_hf(dict(base, model_type="cohere")).theta == 5e5
    assert vkrope.from_hf(dict(base, model_type="llama")).theta == 10000.0
    g = config("gemma-3-4b")["text_config"]
    nested = {k: v for k, v in g.items() if k not in ("rope_scaling", "rope_theta")}
    nested["rope_parameters"] = {"full_attention": {"rope_type": "linear", "factor": 8.0},
                                 "sliding_attention": {"rope_type": "default"}}
    assert vkrope.from_hf(nested, layer_type="sliding_attention").theta == 10000.0
    assert vkrope.from_hf(nested, layer_type="full_attention").theta == 1e6
    both = dict(base, model_type="llama", rope_scaling={"rope_type": "linear", "factor": 2.0},
                rope_parameters={"rope_type": "default"})
    assert vkrope.from_hf(both).rope_type == "linear"
    with pytest.raises(ValueError, match="factor is missing: llama's config class needs it beside rope_type 'yarn'"):
        vkrope.from_hf(dict(base, model_type="llama", max_position_embeddings=8192,
                            rope_scaling={"rope_type": "yarn", "original_max_position_embeddings": 4096}))
    phi4 = dict(config("phi-3.5-mini"), model_type="phi4_multimodal")
    phi4["rope_scaling"] = dict(phi4["rope_scaling"], type="yarn")
    assert vkrope.from_hf(phi4).rope_type == "longrope"
    # (a flat Hub file's top-level keys reach these classes' language model only inside text_config)
    # (and a text_config naming its own model type: one naming another is read as that type)
    # (Qwen2-VL's "mrope" is its own class's name: GLM-OCR's rotary module fails on it, Cosmos 3 Edge's class
    # raises; both take the default rope type with sections)
    sections = {"rope_type": "default", "mrope_section": [16, 24, 24]}
    vl = {"model_type": "glm_ocr", "text_config": dict(config("qwen2-vl-7b"), model_type="glm_ocr_text")}
    with pytest.raises(ValueError, match="type 'mrope': glm_ocr's config class keeps this name"):
        vkrope.from_hf(vl)
    vl["text_config"]["rope_scaling"] = sections
    glm = vkrope.from_hf(vl)  # (its module's layout: Qwen2-VL's chunks over GLM's adjacent pairs, each pair's cos
    assert glm.mrope_section == (16, 24, 24) and glm.mrope_layout == "chunked" and glm.interleaved  # repeated)
    edge = {"model_type": "cosmos3_edge", "text_config": dict(config("qwen2-vl-7b"), model_type="cosmos3_edge_text")}
    with pytest.raises(ValueError, match="type 'mrope': cosmos3_edge's config class keeps this name"):
        vkrope.from_hf(edge)
    edge["text_config"]["rope_scaling"] = sections
    assert vkrope.from_hf(edge).mrope_layout == "interleaved"  # the table ran it: interleaved
    for scaling in ({"type": "linear", "factor": 2.0}, {"rope_type": "dynamic", "factor": 2.0},
                    {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096}):
        # Cosmos3EdgeTextConfig.validate_architecture takes the default type alone (its rules found so only
        # given its own mrope_section)
        for cfg, name in ((dict(edge, text_config=dict(edge["text_config"], rope_scaling=scaling)), "cosmos3_edge"),
                          (dict(edge["text_config"], rope_scaling=scaling), "cosmos3_edge_text")):
            with pytest.raises(ValueError, match=f"'{scaling.get('type', scaling.get('rope_type'))}': {name}'s "
                                                 "config class refuses it"):
                vkrope.from_hf(cfg)
    anon = {k: v for k, v in config("qwen2-vl-7b").items() if k != "model_type"}
    with pytest.raises(ValueError, match="model_type is missing"):
        vkrope.from_hf(anon)  # no model type: its attention is not guessed
    with pytest.raises(ValueError, match="type 'mrope': qwen3_vl's config class keeps this name"):
        vkrope.from_hf(anon, like="qwen3_vl")  # (Qwen3-VL's rotary module fails on Qwen2-VL's "mrope")
    anon["rope_scaling"] = sections
    assert vkrope.from_hf(anon, like="qwen3_vl").mrope_layout == "interleaved"  # the caller's word: as Qwen3-VL
    gptj = {"model_type": "gptj", "n_embd": 4096, "n_head": 16, "rotary_dim": 64}  # EleutherAI/gpt-j-6b's keys
    r = vkrope.from_hf(gptj)
    assert (r.head_dim, r.rotary_dim, r.interleaved) == (256, 64, True)
    l4 = {"model_type": "llama4", "text_config": {"model_type": "llama4_text", "hidden_size": 5120,
                                                  "num_attention_heads": 40, "head_dim": 128,
                                                  "no_rope_layers": [1, 1, 1, 0] * 12}}
    r = vkrope.from_hf(l4)
    assert r.interleaved and r.theta == 5e5
    ds = json.loads(json.dumps(config("yarn-mscale-ratio")))
    ds["rope_scaling"]["mscale"] = 0  # 0: unset, as transformers' truthiness: the plain 0.1 ln(s) + 1
    assert abs(vkrope.from_hf(ds).attention_factor - (0.1 * math.log(40) + 1)) < 1e-12


def test_llama_cpp_mrope_position_layout():
    """llama.cpp's ggml_rope_multi positions [4 * S] (t | h | w | e) give the
    [3, 1, S] result (its fourth axis unused: transformers has none)."""
    rope = vkrope.from_hf(config("qwen3-vl-8b"))
    rng = np.random.default_rng(13)
    pos3 = rng.integers(0, 5000, (3, 1, 6))
    flat = np.concatenate([pos3.reshape(3, 6), rng.integers(0, 5000, (1, 6))]).reshape(-1).astype(np.int32)
    q = rng.standard_normal((1, 2, 6, 128)).astype(np.float32)
    a, _ = vkrope.apply_rotary_pos_emb(q, q, rope, pos3)
    b, _ = vkrope.apply_rotary_pos_emb(q, q, rope, flat)
    assert np.array_equal(a, b)
    assert np.array_equal(rope.cos_sin(flat)[0], rope.cos_sin(pos3)[0])
    with pytest.raises(ValueError, match=r"\[4 \* S\]"):
        vkrope.apply_rotary_pos_emb(q, q, rope, flat[:-1])


def test_from_hf_reads_regular_files_only(tmp_path):
    """from_hf of /dev/zero read for ever and of a FIFO blocked (the command line's checks were added first,
    at the wrong depth): the library reads a config through vkrope/files.py, refused by type before a byte."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path, kind in ((str(fifo), "a pipe (FIFO)"), ("/dev/zero", "a character device")):
        with pytest.raises(ValueError, match=rf"^config: '{re.escape(path)}' is {re.escape(kind)}, not a config\.json"):
            vkrope.from_hf(path)


@pytest.mark.parametrize("key", ["type", "rope_type"])
def test_sarvam_mlas_original_deepseek_yarn_is_yarn_in_rope_scaling_only(key):
    """SarvamMLAConfig converts its original format, `rope_scaling` naming "deepseek_yarn" under either key, into
    a yarn rope dict (the golden sarvam-mla-deepseek-yarn holds transformers' own numbers); given in
    `rope_parameters` the name is kept and its model fails (KeyError, transformers 5.25): refused there, saying
    to write yarn. No other class renames it (the rules' `scaling_renames`)."""
    cfg = config("sarvam-mla-deepseek-yarn")
    scaling = {k if k != "type" else key: v for k, v in cfg["rope_scaling"].items()}
    rope = vkrope.from_hf(dict(cfg, rope_scaling=scaling))
    assert (rope.rope_type, dict(rope.params)["factor"], rope.ignored) == ("yarn", 40.0, ())
    given = {k: v for k, v in cfg.items() if k != "rope_scaling"}
    with pytest.raises(ValueError, match=rf"^config: rope_parameters\.{key} 'deepseek_yarn': sarvam_mla's config "
                                         rf"class keeps this name.*write {key} 'yarn'"):
        vkrope.from_hf(dict(given, rope_parameters=scaling))
    with pytest.raises(ValueError, match=rf"{key} 'deepseek_yarn': deepseek_v3's config class keeps this name"):
        vkrope.from_hf(dict(cfg, model_type="deepseek_v3", head_dim=64, rope_scaling=scaling))


def test_a_partial_factor_the_models_code_was_not_measured_with_is_refused():
    """Llama's attention rotates whole heads: with a partial factor and a rope type whose library function
    narrows the frequencies (linear here) transformers' forward fails on the widths; Apertus' own default
    frequencies span the head, its table rule "partial" was measured with its own type (llama3) only. Both
    refused, naming the factor; Phi's attention slices, so it reads the factor."""
    llama = {"model_type": "llama", "hidden_size": 2048, "num_attention_heads": 32, "partial_rotary_factor": 0.5,
             "rope_theta": 10000.0, "rope_scaling": {"type": "linear", "factor": 4.0}}
    with pytest.raises(ValueError, match="partial_rotary_factor 0.5 with rope type 'linear': this model type's own"):
        vkrope.from_hf(llama)
    assert vkrope.from_hf({**llama, "rope_scaling": None}).rotary_dim == 64  # (its own default: whole heads)
    apertus = {"model_type": "apertus", "hidden_size": 256, "num_attention_heads": 4, "head_dim": 64,
               "rope_parameters": {"rope_type": "default", "rope_theta": 1e4, "partial_rotary_factor": 0.5}}
    with pytest.raises(ValueError, match="did not run with a partial factor and rope type 'default'"):
        vkrope.from_hf(apertus)
    # (its own llama3, and GPT-OSS's own yarn: the table's "partial" never ran with a factor; their forward
    # fails on one, measured with transformers 5.25)
    own = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
           "original_max_position_embeddings": 8192, "rope_theta": 5e5, "partial_rotary_factor": 0.5}
    with pytest.raises(ValueError, match="did not run with a partial factor and rope type 'llama3'"):
        vkrope.from_hf({**apertus, "rope_parameters": own})
    assert vkrope.from_hf({**apertus, "rope_parameters": {**own, "partial_rotary_factor": 1.0}}).rotary_dim == 64
    assert vkrope.from_hf({**llama, "model_type": "phi"}).rotary_dim == 32
    with pytest.raises(ValueError, match=r"^config: the rotary dim int\(head_dim 64 x the partial factor 0\.33: "
                                         r"partial_rotary_factor, or rotary_pct\) = 21 is odd: transformers' rotary "
                                         r"module then makes 11 frequencies of exponents 2i / 21 \(cos / sin 22 "
                                         r"wide\), which vkrope does not compute"):
        vkrope.from_hf({**llama, "model_type": "phi", "partial_rotary_factor": 0.33, "rope_scaling": None})
    with pytest.raises(ValueError, match=r"^config: the rotary dim int\(head_dim 64 x the partial factor 0\.3: "
                                         r".*\) = 19 is odd"):  # (an adversary's: GPT-NeoX's rotary_pct)
        vkrope.from_hf({"model_type": "gpt_neox", "hidden_size": 256, "num_attention_heads": 4, "rotary_pct": 0.3})
    for rope in ({}, {"rope_scaling": {"rope_type": "linear", "factor": 2.0}}):  # (named as the file holds it, not
        with pytest.raises(ValueError, match=r"^config: rope_theta must be a number; got None$"):  # where its class
            vkrope.from_hf({**llama, "rope_theta": None, **rope})  # moves it, rope_scaling.rope_theta)
    with pytest.raises(ValueError, match=r"^config: rope_parameters\.rope_theta must be a number; got 'x'$"):
        vkrope.from_hf({**llama, "rope_scaling": None, "rope_parameters": {"rope_type": "default", "rope_theta": "x"}})
    with pytest.raises(ValueError, match=r"^config: the head width 63 \(head_dim, else hidden_size // "
                                         r"num_attention_heads\) must be even"):  # (not "rotary_dim", a key it lacks)
        vkrope.from_hf({"model_type": "llama", "hidden_size": 126, "num_attention_heads": 2, "head_dim": 63})
    for mla in ("deepseek_v3", "sarvam_mla"):  # (an adversary's: the width is that key's, never the quotient)
        with pytest.raises(ValueError, match=rf"^config: qk_rope_head_dim 63 must be even: '{mla}' rotates the whole"):
            vkrope.from_hf({"model_type": mla, "qk_rope_head_dim": 63})


@pytest.mark.parametrize("where", ["rope dict", "top level"])
def test_a_partial_factor_the_models_own_default_does_not_read_is_listed_as_ignored(where):
    """Llama's default frequencies span its head whatever the factor (transformers 5.25's LlamaRotaryEmbedding
    makes 64 for a 128-wide head with partial_rotary_factor 0.5, in the rope dict or beside it): read whole,
    and the key named in `ignored` and the summary (it was dropped unsaid), as an unread key is elsewhere."""
    base = {"model_type": "llama", "hidden_size": 512, "num_attention_heads": 4, "rope_theta": 10000.0}
    cfg = {**base, "rope_scaling": {"rope_type": "default", "partial_rotary_factor": 0.5}} if where == "rope dict" \
        else {**base, "partial_rotary_factor": 0.5}
    rope, plain = vkrope.from_hf(cfg), vkrope.from_hf(base)
    assert (rope.rotary_dim, rope.ignored, rope.summary()["ignored_keys"]) == \
        (128, ("partial_rotary_factor",), ["partial_rotary_factor"])
    assert rope == plain and plain.ignored == ()


@pytest.mark.parametrize("kind", ["default", "linear", "dynamic"])
def test_an_original_length_no_function_of_the_type_reads_is_listed_as_ignored(kind):
    """transformers' default, linear and dynamic read max_position_embeddings only (dynamic's rotary module keeps
    config.max_position_embeddings as its original_max_seq_len; its validation warns of the unrecognized key):
    the dict's original length is listed in `ignored`, the spec's None and equal to the one without it (it was
    kept and shown in the summary, read by nothing). Ministral 3's attention reads it whatever the type: kept."""
    cfg = config("internlm3-8b")
    params = {"factor": 6.0} if kind != "default" else {}
    plain = vkrope.from_hf(dict(cfg, rope_scaling={"rope_type": kind, **params}))
    rope = vkrope.from_hf(dict(cfg, rope_scaling={"rope_type": kind, **params, "original_max_position_embeddings": 8192}))
    assert (rope.ignored, rope.original_max_position_embeddings, rope) == \
        (("original_max_position_embeddings",), None, plain)
    assert "original_max_position_embeddings" not in rope.summary()
    ministral = {"model_type": "ministral3", "hidden_size": 512, "num_attention_heads": 4, "head_dim": 128,
                 "rope_parameters": {"rope_type": "default", "rope_theta": 1e6, "llama_4_scaling_beta": 0.1,
                                     "original_max_position_embeddings": 8192}}
    kept = vkrope.from_hf(ministral)
    assert (kept.original_max_position_embeddings, kept.ignored) == (8192, ())


def test_yarn_truncate_is_read_by_its_truth_and_refused_otherwise():
    """transformers' yarn tests `truncate` by its truth (the golden yarn-truncate-zero: 0 does not truncate);
    a number is read so, a str or a list is refused, naming the key, rather than read by a truth nobody meant."""
    yarn = {"model_type": "llama", "hidden_size": 512, "num_attention_heads": 4,
            "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8192}}
    for given, same in ((0, False), (1, True), (0.0, False), (2.5, True)):
        rope = vkrope.from_hf({**yarn, "rope_scaling": {**yarn["rope_scaling"], "truncate": given}})
        want = vkrope.from_hf({**yarn, "rope_scaling": {**yarn["rope_scaling"], "truncate": same}})
        assert np.array_equal(rope.inv_freq(), want.inv_freq()), given
    for bad in ("no", [0], {}):
        with pytest.raises(ValueError, match=r"rope_scaling.truncate must be true or false \(or a number, read by"):
            vkrope.from_hf({**yarn, "rope_scaling": {**yarn["rope_scaling"], "truncate": bad}})


def test_yarn_truncate_of_a_layer_type_is_not_read():
    """transformers' yarn reads `truncate` from the config's rope_parameters, which a class with RoPE per
    layer type (Olmo 3, Gemma 3) keys by layer type: a layer type's own truncate is never seen, so it
    truncates (measured: its frequencies are those of a yarn without the key). An outer truncate beside the
    layer types is refused (Gemma 3's class reads it, ModernBERT's refuses it)."""
    yarn = {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 8192}
    olmo3 = {"model_type": "olmo3", "hidden_size": 512, "num_attention_heads": 8, "num_hidden_layers": 4,
             "layer_types": ["sliding_attention"] * 3 + ["full_attention"], "max_position_embeddings": 65536,
             "rope_theta": 500000.0}
    plain = vkrope.from_hf({**olmo3, "rope_scaling": yarn}, layer_type="full_attention")
    for given in (False, None, True):
        rope = vkrope.from_hf({**olmo3, "rope_scaling": {**yarn, "truncate": given}}, layer_type="full_attention")
        assert np.array_equal(rope.inv_freq(), plain.inv_freq()), given
        assert "truncate" in rope.ignored
    llama = {k: v for k, v in olmo3.items() if k not in ("model_type", "layer_types")}
    assert not np.array_equal(  # (where the dict is the model's own, truncate false is read)
        vkrope.from_hf({**llama, "model_type": "llama", "rope_scaling": {**yarn, "truncate": False}}).inv_freq(),
        plain.inv_freq())
    nested = {"full_attention": {**yarn, "rope_theta": 1e6}, "sliding_attention": {"rope_type": "default",
                                                                                  "rope_theta": 1e4}}
    with pytest.raises(ValueError, match="rope_parameters holds 'truncate' beside the layer types"):
        vkrope.from_hf({**olmo3, "rope_parameters": {**nested, "truncate": False}}, layer_type="full_attention")


def test_unlimited_ocrs_original_language_config_is_its_text_config():
    """UnlimitedOcrConfig builds its text config from `language_config` where a file has no (or a null)
    text_config (its original checkpoints'; the golden unlimited-ocr-language-config holds transformers' own
    numbers): read from there, not silently from the text class's defaults (theta 1e4, head 128, as it was);
    beside a text_config the class reads that one. The rules' `outer.text_aliases`, measured."""
    cfg = config("unlimited-ocr-language-config")
    for given in (cfg, {**cfg, "text_config": None}):
        rope = vkrope.from_hf(given)
        assert (rope.theta, rope.head_dim, rope.max_position_embeddings) == (500000.0, 96, 8192)
    assert vkrope.from_hf({**cfg, "text_config": {}}).theta == 10000.0  # (an empty one is the class's defaults)
    for bad in ("x", [1]):  # (a reviewer's: the class fails on it)
        with pytest.raises(ValueError, match=r"^config: language_config must be a dict or null \(unlimited_ocr's "):
            vkrope.from_hf({**cfg, "language_config": bad})
    bare = {k: v for k, v in cfg.items() if k != "sliding_window"}  # (beside a null one transformers fails)
    assert vkrope.from_hf({**bare, "language_config": None}).theta == 10000.0  # (nothing given: its defaults)


def test_a_flat_composite_files_original_length_is_refused_where_its_classes_drop_it():
    """Qwen2.5-VL's classes carry a flat Hub file's RoPE keys into the language model's config, but not
    original_max_position_embeddings (measured by scripts/hf_config_rules.py: transformers then takes
    max_position_embeddings, or the dict's own): refused, naming it; inside text_config it is read."""
    text = {"hidden_size": 3584, "num_attention_heads": 28, "max_position_embeddings": 128000, "rope_theta": 1e6,
            "original_max_position_embeddings": 32768,
            "rope_scaling": {"type": "yarn", "factor": 4.0, "mrope_section": [16, 24, 24]}}
    with pytest.raises(ValueError, match="the top level gives original_max_position_embeddings, which qwen2_5_vl's"):
        vkrope.from_hf({**text, "model_type": "qwen2_5_vl"})
    rope = vkrope.from_hf({"model_type": "qwen2_5_vl", "text_config": text})
    assert rope.summary()["original_max_position_embeddings"] == 32768


@pytest.mark.parametrize("key", ["head_dim", "hidden_size", "num_attention_heads", "max_position_embeddings"])
def test_a_whole_float_for_an_int_key_is_refused(key):
    """transformers 5's config classes keep these keys as strict ints and refuse `head_dim: 128.0` on loading:
    vkrope refuses it too (the rules' `strict`), where it read the int; the int itself reads as before."""
    c = json.loads(json.dumps(config("llama-3.1-8b")))
    c.setdefault("head_dim", 128)
    want = vkrope.from_hf(c)
    with pytest.raises(ValueError, match=rf"^config: {key} is {float(c[key])!r} \(a float\): llama's config class "
                                         r"takes (null or )?an integer there, or its model does \(transformers "
                                         r"raises on loading the config, or building the model\)"):
        vkrope.from_hf({**c, key: float(c[key])})
    assert vkrope.from_hf(dict(c)) == want


def test_a_head_dim_of_a_composite_not_measured_is_refused():
    """EXAONE 4.5's class is not built of a file without RoPE keys, so its rules are not measured: a null or
    float head_dim was read (64) where transformers cannot build EXAONE 4's attention. The text config's own
    model type's rules apply where it names a measured one, else a null or float head_dim is refused."""
    base = {"hidden_size": 512, "num_attention_heads": 8, "num_key_value_heads": 8, "num_hidden_layers": 4}
    for inner in ("exaone4", "exaone4_5_text"):  # (the measured text type, and the early name its class renames)
        for value, said in ((None, "is null"), (64.0, "is 64.0 \\(a float\\)")):
            with pytest.raises(ValueError, match=f"^config: head_dim {said}: exaone4_5's config class"):
                vkrope.from_hf({"model_type": "exaone4_5", "text_config": {"model_type": inner, **base,
                                                                            "head_dim": value}})
        assert vkrope.from_hf({"model_type": "exaone4_5", "text_config": {"model_type": inner, **base,
                                                                           "head_dim": 64}}).head_dim == 64


@pytest.mark.parametrize("model_type", ["qwen2", "ernie4_5_vl_moe_text"])
def test_a_head_dim_the_model_cannot_build_with_is_refused(model_type):
    """Qwen2's and ERNIE 4.5 VL's config classes have no head_dim field and take a file's null or 64.0, but
    their attention takes getattr(config, "head_dim", quotient): None, whose ** -0.5 raises, or a float
    nn.Linear refuses, so transformers cannot build the model; vkrope read the quotient, 64. The config rules
    measure the model now (hf_config_rules.model_refused), and vkrope refuses both; the int reads as before."""
    cfg = {"model_type": model_type, "hidden_size": 512, "num_attention_heads": 8, "num_key_value_heads": 8}
    if model_type.startswith("ernie"):
        cfg["rope_parameters"] = {"rope_type": "default", "rope_theta": 1e4, "mrope_section": [12, 12, 8]}
    assert vkrope.from_hf({**cfg, "head_dim": 64}).head_dim == 64
    with pytest.raises(ValueError, match=rf"^config: head_dim is null: {model_type}'s config class refuses a null "
                                         r"head_dim, or its model fails on one"):
        vkrope.from_hf({**cfg, "head_dim": None})
    with pytest.raises(ValueError, match=rf"^config: head_dim is 64\.0 \(a float\): {model_type}'s config class "
                                         r"refuses a float there, or its model does"):
        vkrope.from_hf({**cfg, "head_dim": 64.0})


QWEN3 = {"model_type": "qwen3", "hidden_size": 512, "num_attention_heads": 8, "num_hidden_layers": 4}


@pytest.mark.parametrize("cfg, key", [
    ({"model_type": "gptj", "n_embd": 4096.0, "n_head": 16, "rotary_dim": 64}, "n_embd"),  # (its stored name)
    ({"model_type": "gptj", "n_embd": 4096, "n_head": 16.0, "rotary_dim": 64}, "n_head"),
    ({"model_type": "qwen2", "hidden_size": 512, "num_attention_heads": 8, "sliding_window": 4096.0}, "sliding_window"),
    ({"model_type": "qwen2", "hidden_size": 512, "num_attention_heads": 8, "sliding_window": True}, "sliding_window"),
    ({"model_type": "mixtral", "hidden_size": 512, "num_attention_heads": 8, "head_dim": 64.0}, "head_dim"),
    ({**QWEN3, "num_hidden_layers": True}, "num_hidden_layers"),
    # (a class the rules could not build bare: any key its defaults hold as an int, refused rather than guessed)
    ({"model_type": "fun_asr_nano", "text_config": {"hidden_size": 1024.0}}, "hidden_size"),
    # (... and where its text config names its model type, that type's rules: Qwen3's sliding_window)
    ({"model_type": "fun_asr_nano", "text_config": {"model_type": "qwen3", "sliding_window": 64.0}}, "sliding_window"),
])
def test_a_float_or_bool_for_an_int_key_is_refused(cfg, key):
    """Found by an adversary against transformers 5.25, whose classes refuse each on loading: keys stored under
    another name (GPT-J's n_embd), keys whose class default is None (sliding_window, Mixtral's head_dim), bools,
    and a class whose keys the rules could not measure."""
    with pytest.raises(ValueError, match=rf"^config: {key} is .*: {cfg['model_type']}'s config class (takes (null "
                                         rf"or )?an integer there|was not measured .* defaults {key} as an integer)"):
        vkrope.from_hf(cfg)


@pytest.mark.parametrize("cfg, key", [
    ({"model_type": "gptj", "n_embd": 512, "n_head": 8, "rotary_dim": 32, "n_positions": None}, "n_positions"),
    ({"model_type": "codegen", "n_embd": 512, "n_head": 8, "rotary_dim": 32, "n_positions": None}, "n_positions"),
    ({"model_type": "gptj", "n_embd": 512, "n_head": None, "rotary_dim": 32}, "n_head"),
    ({"model_type": "glm4_moe_lite", "qk_rope_head_dim": None}, "qk_rope_head_dim"),
])
def test_a_null_under_the_name_the_class_stores_a_key_by_is_refused(cfg, key):
    """GPT-J's n_positions (max_position_embeddings in its attribute_map) is a strict int field: transformers
    5.25 refuses a null one on loading, where vkrope read the class's 2048 rows (the rules had measured the null
    under the key's other name only). The rules now measure both names (hf_config_rules.null_refused)."""
    assert vkrope.from_hf({**cfg, key: {"n_positions": 2048, "n_head": 8}.get(key, 64)}) is not None
    with pytest.raises(ValueError, match=rf"^config: {key} is null: {cfg['model_type']}'s config class refuses a "
                                         rf"null {key}"):
        vkrope.from_hf(cfg)


@pytest.mark.parametrize("model_type, kind, reads", [
    ("llama", "default", True),  # (its own default frequencies read no factor)
    ("llama", "linear", False), ("llama", "yarn", False),  # (the library's functions multiply by it)
    ("stablelm", "default", False), ("gpt_neox", "default", False),  # (their own default reads it)
    ("deepseek_v3", "default", True), ("deepseek_v3", "linear", False),  # (a reviewer's: the null is then no
])  # factor wherever read, its width check too)
def test_a_null_partial_factor_in_the_rope_dict_is_read_only_where_the_model_reads_it_as_none(model_type, kind,
                                                                                               reads):
    """Found against transformers 5.25: a rope dict's `partial_rotary_factor: null` reached the rotary module,
    whose `.get("partial_rotary_factor", 1.0)` returns the null and raises (TypeError) for every library rope
    type and for the models whose own default reads the factor; vkrope read it as 1.0. The rules measure, per
    model type and layer type, the rope types that read a null as no factor (`partial_null_reads`)."""
    params = {"linear": {"factor": 2.0}, "yarn": {"factor": 2.0, "original_max_position_embeddings": 1024}}
    rope = {"rope_type": kind, "rope_theta": 10000.0, **params.get(kind, {})}
    cfg = {"model_type": model_type, "hidden_size": 512, "num_attention_heads": 8, "max_position_embeddings": 4096}
    whole = vkrope.from_hf({**cfg, "rope_parameters": rope})
    null = {**cfg, "rope_parameters": {**rope, "partial_rotary_factor": None}}
    if reads:
        assert vkrope.from_hf(null) == whole
    else:
        with pytest.raises(ValueError, match=rf"^config: rope_parameters\.partial_rotary_factor is null: "
                                             rf"transformers [\d.]+ fails on it with {model_type}'s rope type "
                                             rf"'{kind}'"):
            vkrope.from_hf(null)
        with pytest.raises(ValueError, match=r"rope_scaling\.partial_rotary_factor is null"):
            vkrope.from_hf({**cfg, "rope_scaling": {**rope, "partial_rotary_factor": None}})


@pytest.mark.parametrize("sliding, said", [
    ({"rope_type": None, "rope_theta": 1e4}, r"rope_type must be a string; got None"),
    ({"rope_type": "default", "rope_theta": None}, r"rope_theta must be a number; got None"),
    ({"rope_type": "yarn", "rope_theta": 1e4, "factor": 4.0, "original_max_position_embeddings": None},
     r"original_max_position_embeddings is null: gemma3_text's config class needs a value beside rope_type 'yarn'"),
    ({"rope_type": "linear", "rope_theta": 1e4, "factor": 2.0, "partial_rotary_factor": None},
     r"partial_rotary_factor is null: transformers [\d.]+ fails on it"),
    ({"rope_type": "default", "rope_theta": 1e4, "partial_rotary_factor": None}, None),  # (its own default: none)
    ({"rope_type": "longrope", "rope_theta": 1e4, "short_factor": [1.0] * 128, "long_factor": [2.0] * 128,
      "original_max_position_embeddings": None},
     r"original_max_position_embeddings is null, which rope_type 'longrope' cannot take: gemma3_text's config class "
     "keeps the null in a layer type's dict"),
])
def test_a_layer_type_is_refused_where_another_layer_types_dict_fails_transformers(sliding, said):
    """An adversary's differential fuzz against transformers 5.25: Gemma 3's config class (validate_rope) and
    rotary module set up every layer type's RoPE, so a sliding dict they fail on fails the model whichever layer
    is read; vkrope read the full layers. The other dicts get transformers' own checks (not vkrope's stricter
    reading: a dict it refuses and transformers runs still leaves the other layer types read)."""
    full = {"rope_type": "default", "rope_theta": 1e6}
    cfg = {"model_type": "gemma3_text", "rope_parameters": {"sliding_attention": sliding, "full_attention": full}}
    if said is None:
        assert vkrope.from_hf(cfg, layer_type="full_attention").theta == 1e6
        return
    with pytest.raises(ValueError, match=rf"^config: rope_parameters\['sliding_attention'\]\.{said}.* \(of layer "
                                         r"type 'sliding_attention': transformers sets up every layer type's RoPE, "
                                         r"so the model fails whichever layer is read, 'full_attention' too\)$"):
        vkrope.from_hf(cfg, layer_type="full_attention")


@pytest.mark.parametrize("model_type", ["gemma3_text", "olmo3", "laguna"])
def test_a_null_original_length_in_a_layer_types_longrope_dict_is_refused(model_type):
    """An adversary's differential fuzz against transformers 5.25: a layer type's longrope dict with
    original_max_position_embeddings null was read as if the key were absent (the model's length); transformers'
    class keeps the null and _compute_longrope_parameters fails dividing by it. With a number it is read."""
    rope = copy.deepcopy(_default_rope(model_type))
    kind = sorted(rope)[-1]
    head = vkrope.from_hf({"model_type": model_type}, layer_type=kind).rotary_dim // 2
    longrope = {"rope_type": "longrope", "rope_theta": 1e4, "short_factor": [1.0] * head, "long_factor": [2.0] * head}
    read = vkrope.from_hf({"model_type": model_type, "rope_parameters": {
        **rope, kind: {**longrope, "original_max_position_embeddings": 1024}}}, layer_type=kind)
    assert (read.rope_type, read.original_max_position_embeddings) == ("longrope", 1024)
    rope[kind] = {**longrope, "original_max_position_embeddings": None}
    with pytest.raises(ValueError, match=rf"^config: rope_parameters\['{kind}'\]\.original_max_position_embeddings "
                                         rf"is null, which rope_type 'longrope' cannot take: {model_type}'s config"):
        vkrope.from_hf({"model_type": model_type, "rope_parameters": rope}, layer_type=kind)


def _default_rope(model_type: str) -> dict:
    """The class's default per-layer-type rope dicts, as the model table keeps them."""
    from vkrope.models import model_table

    return model_table.table()["models"][model_type]["defaults"]["rope_parameters"]


@pytest.mark.parametrize("model_type, layer_type, reads", [
    ("gemma3_text", "sliding_attention", True), ("gemma3_text", "full_attention", True),  # (its own default)
    ("laguna", "sliding_attention", False), ("laguna", "full_attention", False),
    ("mellum", "sliding_attention", False), ("zaya", "hybrid_sliding", False),
])
def test_a_null_partial_factor_is_measured_per_layer_type(model_type, layer_type, reads):
    """Per layer type, as each module reads that type's dict (transformers 5.25): Gemma 3's own default
    frequencies read no factor; Laguna's, Mellum's and ZAYA's multiply the head by it on every layer type (a
    reviewer's finding: the first measure built their classes' default layer_types, which name no sliding layer,
    so their sliding dicts were never read and a null there was taken for none)."""
    rope = copy.deepcopy(_default_rope(model_type))
    layer_types = sorted(rope)
    cfg = {"model_type": model_type, "num_hidden_layers": len(layer_types), "layer_types": layer_types,
           "sliding_window": 128, "rope_parameters": rope}
    nulled = copy.deepcopy(cfg)
    nulled["rope_parameters"][layer_type]["partial_rotary_factor"] = None
    if reads:
        want = copy.deepcopy(cfg)
        want["rope_parameters"][layer_type].pop("partial_rotary_factor", None)
        assert vkrope.from_hf(nulled, layer_type=layer_type) == vkrope.from_hf(want, layer_type=layer_type)
    else:
        with pytest.raises(ValueError, match=rf"^config: rope_parameters\[{layer_type!r}\]\.partial_rotary_factor "
                                             rf"is null: transformers [\d.]+ fails on it with {model_type}'s"):
            vkrope.from_hf(nulled, layer_type=layer_type)


@pytest.mark.parametrize("types", [("full_attention",) * 4, "full_attention"], ids=["tuple", "str"])
def test_layer_types_that_are_no_list_are_refused(types):
    """A Python dict's layer_types tuple (or a string) skipped the layer_types checks; the classes refuse it
    (a strict list field)."""
    with pytest.raises(ValueError, match=r"^config: layer_types must be a list of layer type names; got "):
        vkrope.hf_layers({**QWEN3, "layer_types": types})
    if isinstance(types, str):  # (Llama's class takes a tuple, but validates a string's letters as names)
        with pytest.raises(ValueError, match=r"^config: layer_types must be a list of layer type names; got "):
            vkrope.hf_layers({**QWEN3, "model_type": "llama", "layer_types": types})
    assert len(vkrope.hf_layers({**QWEN3, "layer_types": list(types) if isinstance(types, tuple) else [types] * 4})) == 4


def test_layer_types_of_another_count_than_the_layers_are_refused():
    """Gemma 3 with 8 layers and 6 layer types (or 10): transformers' validate_layer_type refuses the config on
    loading; vkrope read a layer's RoPE, or said the config had no layer_types. Now each reading refuses it,
    as it refuses a type name transformers does not know; the list of the layers' count reads as before."""
    c = json.loads(json.dumps(config("gemma-3-4b")))
    n = 8
    types = (["sliding_attention"] * 5 + ["full_attention"]) * 2

    def text(**keys: Any) -> dict:
        return {**c, "text_config": {**c["text_config"], "num_hidden_layers": n, **keys}}

    good = text(layer_types=types[:n])
    assert len(vkrope.hf_layers(good)) == n
    for count in (6, 10):
        bad = text(layer_types=types[:count])
        for read in (lambda: vkrope.from_hf(bad, layer_type="full_attention"), lambda: vkrope.from_hf(bad, layer=2),
                     lambda: vkrope.hf_layers(bad), lambda: vkrope.hf_layer_types(bad)):
            with pytest.raises(ValueError, match=rf"^config: layer_types has {count} entries for num_hidden_layers "
                                                 rf"= {n}: gemma3's config class refuses that"):
                read()
    odd = text(layer_types=types[:n - 1] + ["global_attention"])
    with pytest.raises(ValueError, match=r"^config: layer_types names 'global_attention', which is none of "
                                         r"transformers' layer types"):
        vkrope.from_hf(odd, layer_type="full_attention")
    legacy = text(layer_types=types[:n - 1] + ["attention"])  # (renamed full_attention on loading)
    assert len(vkrope.hf_layers(legacy)) == n


def test_layer_types_of_a_class_the_rules_could_not_build_are_checked_all_the_same():
    """FunASR-Nano's class is not built of a file without RoPE keys, so its layer_types rule was not measured:
    a list of another length, as every measured class refuses, is refused rather than read."""
    cfg = {"model_type": "fun_asr_nano", "text_config": {"num_hidden_layers": 4}}
    assert "layer_types" not in vkrope.models.config_rules.rules_of("fun_asr_nano")
    with pytest.raises(ValueError, match=r"^config: layer_types has 3 entries for num_hidden_layers = 4: "
                                         r"fun_asr_nano's config class refuses that"):
        vkrope.from_hf({**cfg, "text_config": {**cfg["text_config"], "layer_types": ["full_attention"] * 3}})
    vkrope.from_hf({**cfg, "text_config": {**cfg["text_config"], "layer_types": ["full_attention"] * 4}})


def test_layer_types_of_a_class_that_raises_on_any_are_refused():
    """Falcon-H1's class derives its layer types (a property without a setter): transformers fails on loading a
    file that gives any, of the layers' count included; vkrope read them."""
    assert vkrope.models.config_rules.rules_of("falcon_h1")["layer_types"]["any"]
    cfg = {"model_type": "falcon_h1", "num_hidden_layers": 2}
    for key, types in (("layer_types", ["attention"] * 2), ("layer_types", ["full_attention"] * 2),
                       ("layer_types", []), ("layers_block_type", ["attention"] * 2)):  # (its attribute_map name)
        with pytest.raises(ValueError, match=rf"^config: {key} is \[.*\]: falcon_h1's config class derives the "
                                             rf"layer types itself .* leave {key} out$"):
            vkrope.from_hf({**cfg, key: types})
    assert vkrope.from_hf(cfg).theta == 10000.0


def test_list_fields_and_sub_config_keys_are_held_to_the_classes_kinds():
    """A list field given as another kind (Qwen2.5-VL's vision fullatt_block_indexes: 7, Gemma 3's and Gemma 4's
    layer_types: 5), a key of a vision tower measured beside the outer preset (CLIP's hidden_size under LLaVA's 16 heads,
    which its own 12 do not divide) and a key under an attribute_map name whose stored field is null (ERNIE
    4.5 MoE's num_mtp_layers), a sub-config without the model_type its class is chosen by (Music Flamingo's
    audio_config; LLaVA's fills in CLIP's): transformers raises on loading each; vkrope read them."""
    qwen = {"model_type": "qwen2_5_vl", "vision_config": {"depth": 4}}
    for bad in (7, [0.5], None):
        with pytest.raises(ValueError, match=r"vision_config\.fullatt_block_indexes"):
            vkrope.from_hf({**qwen, "vision_config": {"depth": 4, "fullatt_block_indexes": bad}})
    for good in ([], [1, 3], (1, 3)):  # (a tuple, which only Python gives: its class takes one)
        vkrope.from_hf({**qwen, "vision_config": {"depth": 4, "fullatt_block_indexes": good}})
    with pytest.raises(ValueError, match=r"^config: hidden_size is \(4096,\) \(of type tuple, which no JSON file "
                                         r"holds\): llama's config class takes an integer there"):
        vkrope.from_hf({"model_type": "llama", "hidden_size": (4096,)})  # (a scalar's field refuses any list)
    gemma = config("gemma-3-4b")
    for bad in (5, "sliding_attention"):  # (layer_types: check_layer_types', its own rule)
        with pytest.raises(ValueError, match=r"^config: layer_types must be a list of layer type names; got "):
            vkrope.from_hf({**gemma, "text_config": {**gemma["text_config"], "layer_types": bad}}, layer=0)
    # Gemma 4's class does not check the names in a list, but its strict field refuses what is no list
    assert not vkrope.models.config_rules.rules_of("gemma4_text")["layer_types"]["names"]
    for bad in (5, ("full_attention",) * 2):  # (a tuple too, which Llama's class takes: read there)
        with pytest.raises(ValueError, match=r"^config: layer_types must be a list of layer type names; got "):
            vkrope.from_hf({"model_type": "gemma4_text", "num_hidden_layers": 2, "layer_types": bad}, layer=0)
    assert not vkrope.models.config_rules.rules_of("llama")["layer_types"]["not_list"]
    assert len(vkrope.hf_layers({"model_type": "llama", "num_hidden_layers": 2,
                                 "layer_types": ("full_attention",) * 2})) == 2
    falcon = {"model_type": "falcon_h1", "mlp_multipliers": [1.0, 1.0]}  # (a float list's field)
    for good in ([1.0, 1.0], [1.0], []):
        vkrope.from_hf({**falcon, "mlp_multipliers": good})
    for bad in ([1, 1], 5):
        with pytest.raises(ValueError, match=r"^config: mlp_multipliers is "):
            vkrope.from_hf({**falcon, "mlp_multipliers": bad})
    with pytest.raises(ValueError, match=r"vision_config\.hidden_size is 1024\.0 \(a float\)"):
        vkrope.from_hf({"model_type": "llava", "vision_config": {"model_type": "clip_vision_model",
                                                                 "hidden_size": 1024.0}})
    with pytest.raises(ValueError, match=r"^config: audio_config has no model_type: musicflamingo's config class "
                                         r"chooses its audio_config class by it and raises without it"):
        vkrope.from_hf({"model_type": "musicflamingo", "audio_config": {"activation_dropout": 0.0}})
    vkrope.from_hf({"model_type": "musicflamingo", "audio_config": {"model_type": "audioflamingo3_encoder"}})
    vkrope.from_hf({"model_type": "llava", "vision_config": {"hidden_size": 1024, "num_attention_heads": 16}})
    with pytest.raises(ValueError, match=r"num_mtp_layers is 1\.5 \(a float\)"):
        vkrope.from_hf({"model_type": "ernie4_5_moe", "num_mtp_layers": 1.5})
    assert vkrope.from_hf({"model_type": "ernie4_5_moe", "num_mtp_layers": 1}).theta == 500000.0


def test_position_ids_of_another_layout_are_named_with_theirs():
    """Qwen3-VL's [4, B, S] of transformers 5 (text, then the three axes: its rotary module gets [1:]) and
    positions per axis for a one-axis RoPE are refused with what they are."""
    q = np.zeros((1, 2, 3, 128), np.float32)
    with pytest.raises(ValueError, match=r"got \[4, 1, 3\] \(transformers 5's M-RoPE text models, .* position_ids\[1:\]"):
        vkrope.apply_rotary_pos_emb(q, q, vkrope.from_hf(config("qwen2-vl-7b")), np.zeros((4, 1, 3), np.int64))
    with pytest.raises(ValueError, match=r"must be \[B, S\]; got \[3, 1, 3\] \(positions per axis are M-RoPE's; "
                                         r"this spec, read without M-RoPE sections, turns every pair by one position per token"):
        vkrope.apply_rotary_pos_emb(q, q, vkrope.from_hf(config("llama-3.1-8b")), np.zeros((3, 1, 3), np.int64))


def test_one_axis_of_m_rope_positions_is_expanded_as_the_modules_do():
    """[1, B, S] for an M-RoPE model: its rotary module's position_ids.expand(3, -1, -1) gives every axis the
    same positions (an adversary found it refused); read as [B, S] text positions are."""
    rope = vkrope.from_hf(config("qwen2-vl-7b"))
    rng = np.random.default_rng(5)
    q = rng.standard_normal((2, 2, 5, 128)).astype(np.float32)
    pos = rng.integers(0, 5000, (2, 5))
    want = vkrope.apply_rotary_pos_emb(q, q, rope, pos)[0]
    got = vkrope.apply_rotary_pos_emb(q, q, rope, pos[None])[0]
    assert np.array_equal(got, want) and np.array_equal(rope.cos_sin(pos[None])[0], rope.cos_sin(pos)[0])
    with pytest.raises(ValueError, match=r"must be \[3, B, S\] \(temporal, height, width\), \[1, B, S\] or \[B, S\] for M-RoPE; "
                                         r"got \[2, 2, 5\]"):
        vkrope.apply_rotary_pos_emb(q, q, rope, np.stack([pos, pos]))


def test_ernie_sections_its_module_fails_on_are_refused():
    """ERNIE 4.5 VL's module stacks its height and width pairs (equal counts) and fills its time pairs from the
    end of the head's frequencies (at least one, all sections spanning the pairs): transformers fails on other
    sections, so from_hf refuses them, naming the key; a ModelRope of the layout checks its own."""
    for sec in ([24, 20, 20], [32, 32, 0], [20, 20, 20], [22, 22, 20, 0]):
        cfg = config("ernie-4.5-vl-28b-a3b")
        cfg["text_config"]["rope_parameters"]["mrope_section"] = sec
        with pytest.raises(ValueError, match=r"mrope_section"):
            vkrope.from_hf(cfg)
    cfg = config("ernie-4.5-vl-28b-a3b")
    cfg["text_config"]["rope_parameters"]["mrope_section"] = [21, 21, 22]  # (transformers runs it)
    assert vkrope.from_hf(cfg).pair_axis == (1, 2) * 21 + (0,) * 22
    del cfg["text_config"]["rope_parameters"]["mrope_section"]  # (the module's own [22, 22, 20])
    assert vkrope.from_hf(cfg).mrope_section == (20, 22, 22)
    with pytest.raises(ValueError, match="as many height pairs as width pairs"):
        vkrope.ModelRope("default", 16, 16, 1e4, mrope_section=(2, 4, 2), mrope_layout="alternating")
    with pytest.raises(ValueError, match=r"mrope_layout must be one of \['chunked', 'interleaved', 'alternating'\]"):
        vkrope.ModelRope("default", 16, 16, 1e4, mrope_section=(2, 3, 3), mrope_layout="spiral")
    for wrong in (True, ["chunked"], None):  # (a type, not a value: TypeError, as interleaved's)
        with pytest.raises(TypeError, match="mrope_layout must be a str"):
            vkrope.ModelRope("default", 16, 16, 1e4, mrope_section=(2, 3, 3), mrope_layout=wrong)
    two_axis = vkrope.ModelRope("default", 16, 16, 1e4, mrope_section=(0, 4, 4), mrope_layout=np.str_("alternating"))
    assert type(two_axis.mrope_layout) is str and two_axis.pair_axis == (1, 2) * 4  # (no time pair: two axes)
    with pytest.raises(ValueError, match="mrope_layout 'alternating' needs mrope_section"):
        vkrope.ModelRope("default", 16, 16, 1e4, mrope_layout="alternating")


@pytest.mark.parametrize("rope_type, params", [
    ("linear", {}), ("dynamic", {}), ("llama3", {"low_freq_factor": 1.0, "high_freq_factor": 4.0}),
])
def test_a_model_rope_of_a_type_that_scales_by_its_factor_needs_one(rope_type, params):
    """Linear, dynamic NTK and Llama 3 divide by their factor: a ModelRope without one is refused by name
    (transformers' config raises "Missing required keys ... {'factor'}"), and with one it is taken; yarn and
    longrope derive theirs from the lengths instead."""
    args = (rope_type, 16, 16, 1e4)
    with pytest.raises(ValueError, match=f"rope_type '{rope_type}' needs factor"):
        vkrope.ModelRope(*args, tuple(params.items()), 128, 64)
    assert vkrope.ModelRope(*args, tuple({**params, "factor": 2.0}.items()), 128, 64).factor == 2.0
    for derives in ("yarn", "longrope"):
        lists = {"short_factor": (1.0,) * 8, "long_factor": (2.0,) * 8} if derives == "longrope" else {}
        assert vkrope.ModelRope(derives, 16, 16, 1e4, tuple(lists.items()), 256, 64).factor == 4.0


def test_a_type_a_per_layer_type_class_merged_into_its_dicts_is_named_so():
    """Gemma 3n's class puts a file's rope_scaling {"type": "linear"} into each layer type's dict beside that
    type's own rope_type "default" (transformers then runs the default, the factor unread): refused, saying
    where the keys came from, as the file holds neither there."""
    text = {"model_type": "gemma3n_text", "hidden_size": 2048, "num_attention_heads": 8, "num_key_value_heads": 2,
            "head_dim": 256, "num_hidden_layers": 5, "layer_types": ["sliding_attention"] * 4 + ["full_attention"],
            "rope_theta": 1e6, "rope_local_base_freq": 1e4, "sliding_window": 512,
            "rope_scaling": {"type": "linear", "factor": 2.0}}
    with pytest.raises(ValueError, match=r"^config: rope_parameters\['full_attention'\]\.type \('linear'\) and "
                                         r"rope_type \('default'\) contradict each other \(its config class puts a "
                                         r"file's rope_scaling into each layer type's dict"):
        vkrope.from_hf(text, layer=4)


def test_a_layer_types_partial_factor_is_read_as_its_rotary_module_reads_it():
    """MiMo-V2-Flash's and ZAYA's rotary modules read a layer type's partial factor from that type's dict, else a
    fallback of their own (the model table's partial_absent, found in their code and checked by building the
    module: 0.334, 1.0; the golden config mimo-v2-flash-no-partial holds MiMo's module output). A top-level factor
    beside such dicts is refused: ZAYA's module takes it for a layer type only where transformers'
    standardization ran for another type first (its hybrid layers rotate whole heads, its sliding ones half)."""
    mimo = config("mimo-v2-flash-no-partial")  # (its sliding layers linear: the library's function, 1.0)
    assert [vkrope.from_hf(mimo, layer_type=t).rotary_dim for t in ("full_attention", "sliding_attention")] == [64, 192]
    assert vkrope.from_hf(mimo, layer=1).rotary_dim == 64
    assert vkrope.from_hf(dict(mimo, partial_rotary_factor=None), layer=1).rotary_dim == 64  # (null: none given)
    nulled = json.loads(json.dumps(mimo))
    nulled["rope_parameters"]["full_attention"]["partial_rotary_factor"] = None  # (its module's .get gives None)
    with pytest.raises(ValueError, match=r"^config: rope_parameters\['full_attention'\]\.partial_rotary_factor is "
                                         r"null: transformers [\d.]+ fails on it with mimo_v2_flash's rope type "
                                         r"'default'"):
        vkrope.from_hf(nulled, layer_type="full_attention")
    zaya = {"model_type": "zaya", "num_hidden_layers": 2, "layer_types": ["hybrid", "hybrid_sliding"],
            "sliding_window": 128, "rope_parameters": {"hybrid": {"rope_type": "default", "rope_theta": 5e6},
                                                       "hybrid_sliding": {"rope_type": "linear", "factor": 2.0,
                                                                          "rope_theta": 1e4}}}
    head = vkrope.from_hf(zaya, layer_type="hybrid").head_dim
    assert vkrope.from_hf(zaya, layer_type="hybrid").rotary_dim == head  # (its fallback 1.0)
    for key in ("partial_rotary_factor", "rotary_pct"):
        with pytest.raises(ValueError, match=rf"^config: {key} at the top level, and rope_parameters\['hybrid'\]\."
                                             r"partial_rotary_factor is missing: this model's rotary module reads"):
            vkrope.from_hf(dict(zaya, **{key: 0.5}), layer_type="hybrid")
    bare = {"model_type": "zaya"}  # (its class's own layer types, hybrid and hybrid_sliding, half of each head)
    with pytest.raises(ValueError, match=r"pass one of \['hybrid', 'hybrid_sliding'\]"):
        vkrope.from_hf(bare)
    assert vkrope.from_hf(bare, layer_type="hybrid_sliding").rotary_dim == 64
    both = {t: dict(d, partial_rotary_factor=0.5) for t, d in zaya["rope_parameters"].items()}
    assert vkrope.from_hf(dict(zaya, partial_rotary_factor=0.5, rope_parameters=both),
                          layer_type="hybrid").rotary_dim == head // 2
    # (ZAYA's hub config keeps a stray rope_type beside its layer types' dicts, which ZayaConfig's
    # convert_rope_params_to_dict deletes, a null one kept: the rules' per_type_drops, measured)
    for value in ("default", "yarn"):
        stray = dict(zaya, rope_parameters={**zaya["rope_parameters"], "rope_type": value})
        for lt in ("hybrid", "hybrid_sliding"):
            assert vkrope.from_hf(stray, layer_type=lt) == vkrope.from_hf(zaya, layer_type=lt)
    with pytest.raises(ValueError, match="rope_parameters holds 'rope_type' beside the layer types"):
        vkrope.from_hf(dict(zaya, rope_parameters={**zaya["rope_parameters"], "rope_type": None}), layer_type="hybrid")
    # (a file giving only the dict its layers use: ZayaConfig keeps no other, and transformers' ZayaRotaryEmbedding
    # builds hybrid_inv_freq alone, 32 frequencies of theta 5e6; a layer of the missing type is refused)
    only = dict(zaya, layer_types=["hybrid"] * 2, rope_parameters={"hybrid": {**zaya["rope_parameters"]["hybrid"],
                                                                              "partial_rotary_factor": 0.5}})
    assert (vkrope.hf_layer_types(only), vkrope.from_hf(only, layer_type="hybrid").rotary_dim) == (("hybrid",), head // 2)
    with pytest.raises(ValueError, match=r"rope_parameters\['hybrid_sliding'\] is missing, and zaya's config class "
                                         "does not fill it in"):
        vkrope.from_hf(dict(only, rope_parameters=only["rope_parameters"], layer_types=zaya["layer_types"]),
                       layer_type="hybrid")
    with pytest.raises(ValueError, match="rope_parameters holds 'rope_theta' beside the layer types"):  # (kept by
        vkrope.from_hf(dict(zaya, rope_parameters={**zaya["rope_parameters"], "rope_theta": 1.0}),  # its class:
                       layer_type="hybrid")  # not dropped, not measured)


@pytest.mark.parametrize("cfg, said", [
    ({"model_type": "llama", "rope_theta": 2 ** 70}, r"rope_theta is an integer past int64"),
    ({"model_type": "llama", "rope_parameters": {"rope_type": "linear", "rope_theta": 1e4, "factor": 2 ** 64}},
     r"factor is an integer past int64"),
    ({"model_type": "llama", "max_position_embeddings": 2 ** 64}, r"max_position_embeddings is an integer past int64"),
    ({"model_type": "qwen3", "num_attention_heads": -1, "head_dim": 128}, r"num_attention_heads must be >= 1; got -1"),
    ({"model_type": "cohere2", "num_attention_heads": 0, "head_dim": 128}, r"num_attention_heads must be >= 1; got 0"),
    ({"model_type": "mistral", "hidden_size": 2 ** 70, "head_dim": 128}, r"hidden_size is an integer past int64"),
])
def test_counts_and_numbers_transformers_cannot_build_are_refused(cfg, said):
    """An adversary's differential fuzz against transformers 5.25: an integer past int64 (torch's OverflowError
    where it computes with it: theta, a linear factor; refused wherever, not read as the nearest float), and a
    head count or hidden size below 1 beside a head_dim (Cohere 2's class divides by the heads, most models
    cannot be built on a negative count) were read as numbers."""
    with pytest.raises(ValueError, match=rf"^config: (rope_parameters\.)?{said}"):
        vkrope.from_hf(cfg)


@pytest.mark.parametrize("head_dim", [-1, 0])
def test_a_head_width_below_one_of_another_layer_type_refuses_the_model(head_dim):
    """The hostile-value adversary: Gemma 4's sliding layers rotate head_dim, its full layers global_head_dim;
    transformers' rotary module sets up both types, and fails on a head_dim of -1 or 0 (modeling_gemma4.py:
    torch.arange with an inconsistent bound), so the full layers were read from a model that cannot be built."""
    cfg = {"model_type": "gemma4_text", "head_dim": head_dim}
    with pytest.raises(ValueError, match=rf"^config: head_dim must be >= 1; got {head_dim} \(of layer type "
                                         r"'sliding_attention': transformers sets up every layer type's RoPE"):
        vkrope.from_hf(cfg, layer_type="full_attention")
    assert vkrope.from_hf({**cfg, "head_dim": 256}, layer_type="full_attention").head_dim == 512


def test_a_key_the_config_class_derives_is_refused_where_a_file_gives_it():
    """The hostile-value adversary: FalconConfig.head_dim is a property with no setter, so transformers'
    from_dict raises (AttributeError) on a file giving head_dim, even the width it derives; vkrope read it. The
    model table measures such keys (`readonly_keys`)."""
    from vkrope.models import model_table

    assert model_table.table()["models"]["falcon"]["readonly_keys"] == ["head_dim", "rotary"]
    for head_dim in (64, 64.0):
        with pytest.raises(ValueError, match=r"^config: head_dim: falcon's config class derives it \(a property with "
                                             r"no setter"):
            vkrope.from_hf({"model_type": "falcon", "head_dim": head_dim})
    assert vkrope.from_hf({"model_type": "falcon"}).head_dim == 64
    with pytest.raises(ValueError, match=r"^config: rotary: falcon's config class derives it"):  # (from alibi)
        vkrope.from_hf({"model_type": "falcon", "rotary": True})
    assert vkrope.from_hf({"model_type": "falcon", "head_dim": 64}, like="llama").head_dim == 64


def test_a_dynamic_factor_whose_initial_base_is_none_is_refused():
    """The hostile-value adversary: transformers' dynamic function computes its initial base as theta *
    (factor * L / L - (factor - 1)) ** (dim / (dim - 2)) in Python floats; past 2^53 factor - 1 rounds to factor,
    the ratio is 0 and its cos / sin NaN, where vkrope gave the plain frequencies."""
    cfg = {"model_type": "mistral", "max_position_embeddings": 32768}
    with pytest.raises(ValueError, match=r"rope_type 'dynamic': factor 1e\+17 makes the ratio of transformers' "
                                         r"initial base, factor \* L / L - \(factor - 1\) in float64, 0,"):
        vkrope.from_hf({**cfg, "rope_parameters": {"rope_type": "dynamic", "rope_theta": 1e4, "factor": 1e17}})
    rope = vkrope.from_hf({**cfg, "rope_parameters": {"rope_type": "dynamic", "rope_theta": 1e4, "factor": 1e15}})
    assert np.array_equal(rope.inv_freq(), vkrope.from_hf(cfg).inv_freq())  # (ratio 1: the base itself)


@pytest.mark.parametrize("config", [{"model_type": "bamba", "attn_layer_indices": [1]},
                                    {"model_type": "zamba2", "use_mem_rope": True}])
def test_a_type_not_verified_says_its_default_config_was_probed(config):
    """Hybrid types whose default config turns their attention or RoPE off (Bamba's attn_layer_indices,
    Zamba2's use_mem_rope) are not verified: refused, the message saying the table probed the class's
    default config, not that the user's file has no attention (an adversary read it so)."""
    with pytest.raises(ValueError, match=r"is refused: not verified: .* \(the model table runs each type's class "
                                         r"on its default config; where a file turns on attention layers"):
        vkrope.from_hf(config)


def test_a_null_legacy_type_beside_rope_type_is_no_contradiction():
    """`rope_scaling: {"type": null, "rope_type": "linear"}`: transformers reads rope_type and runs linear
    (inverse frequencies 0.5, 0.433, 0.375 at factor 2 over 10000's 1, 0.866, 0.750); vkrope refused it as
    a contradiction (an adversary's). A type that names another rope type still contradicts."""
    cfg = {"model_type": "llama", "hidden_size": 256, "num_attention_heads": 4, "head_dim": 64, "rope_theta": 10000.0,
           "rope_scaling": {"type": None, "rope_type": "linear", "factor": 2.0}}
    rope = vkrope.from_hf(cfg)
    assert (rope.rope_type, rope.factor) == ("linear", 2.0)
    np.testing.assert_allclose(rope.inv_freq()[:3], [0.5, 0.5 * 10000 ** (-2 / 64), 0.5 * 10000 ** (-4 / 64)],
                               rtol=2e-7)
    cfg["rope_scaling"]["type"] = "dynamic"
    with pytest.raises(ValueError, match=r"type \('dynamic'\) and rope_type \('linear'\) contradict each other"):
        vkrope.from_hf(cfg)
