"""Code ported from SAM2, transformers and ExecuTorch: the calls their own
code makes that vkrope takes (SAM2's grid sides as floats, its keys all
excluded), and the hints of the calls it refuses, each followed to the
result the framework's float64 oracle gives."""

from __future__ import annotations

import math

import numpy as np
import pytest

import vkrope
from oracle import oracle, poisoned_like
from oracle_family import et_apply_rotary_emb, hf_apply_rotary_emb

RNG = np.random.default_rng(37)


def _hf_tables(b: int, s: int, rot: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """transformers' rotary module's (cos, sin) [B, S, rot] (cat(f, f)) of per-item positions."""
    pos = np.random.default_rng(seed).integers(0, 900, (b, s))
    f = pos[..., None] / 10000.0 ** (np.arange(0, rot, 2) / rot)
    emb = np.concatenate([f, f], -1)
    return np.cos(emb), np.sin(emb)


def _follow(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """The call the hints name: vkrope.rotary_embedding(x, cos[..., :rot // 2], sin[..., :rot // 2],
    rotary_embedding_dim=rot)."""
    rot = cos.shape[-1]
    return vkrope.rotary_embedding(x, cos[..., :rot // 2].astype(np.float32),
                                   sin[..., :rot // 2].astype(np.float32), rotary_embedding_dim=rot,
                                   out=poisoned_like(x))


@pytest.mark.parametrize("rot", [64, 32])
def test_transformers_tables_follow_the_hint(rot):
    """apply(x, (cos, sin)) and apply_rotary_pos_emb(q, k, cos, sin) with transformers' tables are refused, naming
    rotary_embedding with the half tables; that call gives transformers' result (items at different positions)."""
    q = RNG.standard_normal((2, 3, 5, 64)).astype(np.float32)
    k = RNG.standard_normal((2, 1, 5, 64)).astype(np.float32)
    cos, sin = _hf_tables(2, 5, rot, rot)
    call = r"vkrope\.rotary_embedding\(x, cos\[\.\.\., :rot // 2\], sin\[\.\.\., :rot // 2\], rotary_embedding_dim=rot\)"
    with pytest.raises(TypeError, match=r"rotate-half tables, transformers' cat\(f, f\) \[B, S, rot\] .*" + call):
        vkrope.apply(q, (cos.astype(np.float32), sin.astype(np.float32)))
    with pytest.raises(TypeError, match=r"^spec must be .* got an array of shape \(2, 5, " + str(rot) +
                       r"\) .*\(transformers' apply_rotary_pos_emb\(q, k, cos, sin\) .*" + call + ", once for q"):
        vkrope.apply_rotary_pos_emb(q, k, cos.astype(np.float32), sin.astype(np.float32))
    ref_q, ref_k = hf_apply_rotary_emb(q, k, cos, sin)
    for x, ref in ((q, ref_q), (k, ref_k)):
        bound = np.abs(x).max() * 2 * 2.0**-24 * 4
        np.testing.assert_allclose(_follow(x, cos, sin), ref, rtol=0, atol=bound)


def test_spec_refusal_has_no_table_hint_for_other_values():
    """The tables hint is only for tables: a spec of the wrong kind is told what spec it takes."""
    q = np.zeros((1, 1, 2, 8), np.float32)
    with pytest.raises(TypeError, match=r"^spec must be a vkrope\.ModelRope .* got str 'llama'$"):
        vkrope.apply_rotary_pos_emb(q, q, "llama", np.zeros((1, 2), np.int64))


def test_onnx_full_width_caches_hint():
    """rotary_embedding given Hugging Face's full-width caches says they hold each value twice and what to pass;
    a width that is not twice the expected one gets no such hint."""
    x = np.zeros((1, 2, 5, 64), np.float32)
    full = np.ones((1, 5, 64), np.float32)
    with pytest.raises(ValueError, match=r"^cos_cache must have shape \[B, S, rot/2\] \(no position_ids\) "
                                         r"\(Hugging Face's cat\(f, f\) tables hold each value twice: pass "
                                         r"\[\.\.\., :rot // 2\] of them\) = \(1, 5, 32\); got \(1, 5, 64\)$"):
        vkrope.rotary_embedding(x, full, full)
    with pytest.raises(ValueError, match=r"^cos_cache must have shape \[B, S, rot/2\] \(no position_ids\) = "
                                         r"\(1, 5, 32\); got \(1, 5, 48\)$"):
        vkrope.rotary_embedding(x, full[..., :48], full[..., :48])


def test_executorch_whole_tables_hint():
    """apply_rotary_emb given ExecuTorch's Rope.freqs_cos of every position is told to slice the call's rows,
    which then gives ExecuTorch's result; a Hugging Face width is pointed to apply_rotary_emb_hf."""
    s, d = 4, 16
    q = RNG.standard_normal((1, s, 2, d)).astype(np.float32)
    k = RNG.standard_normal((1, s, 1, d)).astype(np.float32)
    ang = np.outer(np.arange(64), 1.0 / 10000.0 ** (np.arange(0, d, 2) / d))
    fc, fs = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    with pytest.raises(ValueError, match=r"^freqs_cos must have shape \[S, D/2\] = \(4, 8\); got \(64, 8\) \(a table "
                                         r"of every position, as ExecuTorch's Rope\.freqs_cos: pass the rows of "
                                         r"these S = 4 tokens, freqs_cos\[input_pos\], as its Rope\.forward does\)$"):
        vkrope.apply_rotary_emb(q, k, fc, fs)
    input_pos = np.arange(30, 30 + s)
    yq, yk = vkrope.apply_rotary_emb(q, k, fc[input_pos], fs[input_pos])
    rq, rk = et_apply_rotary_emb(q, k, fc[input_pos], fs[input_pos])
    np.testing.assert_allclose(yq, rq, rtol=0, atol=4 * 2.0**-24 * 2 * np.abs(q).max())
    np.testing.assert_allclose(yk, rk, rtol=0, atol=4 * 2.0**-24 * 2 * np.abs(k).max())
    twice = np.concatenate([fc[:s], fc[:s]], 1)
    with pytest.raises(ValueError, match=r"^freqs_cos must have shape \[S, D/2\] = \(4, 8\); got \(4, 16\) \(D "
                                         r"values a row, Hugging Face's cat\(f, f\) holding each twice: "
                                         r"vkrope\.apply_rotary_emb_hf takes those\)$"):
        vkrope.apply_rotary_emb(q, k, twice, twice)
    with pytest.raises(ValueError, match=r"^freqs_cos must have shape \[S, D/2\] = \(4, 8\); got \(3, 8\)$"):
        vkrope.apply_rotary_emb(q, k, fc[:3], fs[:3])


@pytest.mark.parametrize("side", [4.0, np.float32(4.0), np.float64(4.0), math.sqrt(16)])
def test_sam2_float_grid_sides(side):
    """SAM2's RoPEAttention passes math.sqrt(N) as end_x / end_y: a float of whole value is the grid of that int,
    for the spec and the table alike."""
    spec = vkrope.AxialFreqs(16, side, side)
    assert spec == vkrope.AxialFreqs(16, 4, 4) and type(spec.end_x) is int and type(spec.end_y) is int
    assert hash(spec) == hash(vkrope.AxialFreqs(16, 4, 4))
    np.testing.assert_array_equal(vkrope.axial_freqs(16, side, side), vkrope.axial_freqs(16, 4, 4))


@pytest.mark.parametrize("side", [4.5, float("inf"), float("nan"), np.float32(2.5)])
def test_sam2_grid_side_not_whole_refused(side):
    """A float grid side that is no whole number (SAM2's math.sqrt of a token count that is not a square) is
    refused, naming the argument."""
    for make in (vkrope.AxialFreqs, vkrope.axial_freqs):
        with pytest.raises(TypeError, match=r"^end_x must be an int \(or a float of whole value, as SAM2's "
                                            r"math\.sqrt\(N\) of a square N\); got "):
            make(16, side, 4)
        with pytest.raises(TypeError, match=r"^end_y must be an int"):
            make(16, 4, side)


@pytest.mark.parametrize("repeat", [1, 2, 5])
@pytest.mark.parametrize("freqs", ["table", "spec"])
def test_sam2_all_keys_excluded(repeat, freqs):
    """SAM2 rotates no key when every one is excluded ("no keys to rotate, due to dropout"), whatever its
    frequencies' rows: k comes back unchanged (the oracle: every token passes through)."""
    k = RNG.standard_normal((1, 2, 3, 16)).astype(np.float32)
    f = vkrope.axial_freqs(16, 2, 2) if freqs == "table" else vkrope.AxialFreqs(16, 2, 2)
    y = vkrope.apply(k, f, repeat=repeat, exclude_last=3, out=poisoned_like(k))
    np.testing.assert_array_equal(y, oracle(k, vkrope.axial_freqs(16, 2, 2, dtype=np.float64), repeat=repeat,
                                            exclude_last=3))
    np.testing.assert_array_equal(y, k)
    with pytest.raises(ValueError, match=r"^freqs has 4 rows .* expected \(N - exclude_last\) / repeat = "
                                         r"\(3 - 2\) / 1 rows"):
        vkrope.apply(k, f, exclude_last=2)
