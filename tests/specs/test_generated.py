"""Frequencies computed in the shader (`vkrope.RopeFreqs` in place of the
cos / sin caches): the results equal the table the spec stands for, and the
shader's cos / sin are within 2 ulp of float64 for every angle the specs
produce (positions up to 2^24), in both angle modes. The references here
share no code with vkrope: angles are formed in numpy float32 (the
frameworks' way) or in extended precision (exact mode)."""

from __future__ import annotations

import copy
import decimal
import math
import pickle
import re

import numpy as np
import pytest

import vkrope
from oracle_family import et_apply_rotary_emb, et_apply_rotary_emb_hf, onnx_rotary_embedding

STORAGES = ["buffer", "texture3d"]


def pow32(base, e):
    """float32(base) ** e (float32 exponents) correctly rounded to float32
    (a double power of the float32 operands, rounded once): what vkrope
    documents; torch's float32 power agrees on ~99% of pairs (test_yarn.py
    holds torch's own bits)."""
    b = float(np.float32(base))
    return np.array([math.pow(b, float(v)) for v in np.asarray(e, np.float32)]).astype(np.float32)


def inv64(base, dim, step=2):
    """1 / base ** (arange(0, dim, step) / dim) in float64 (libm's power, per element)."""
    return np.array([1.0 / math.pow(float(base), i / dim) for i in range(0, dim, step)])


def inv_freq32(dim, base, factors=None):
    """1 / base ** (arange(0, dim, 2) / dim) in float32 steps, as torch does."""
    e = np.arange(0, dim, 2, dtype=np.float32) / np.float32(dim)
    inv = np.float32(1.0) / pow32(base, e)
    return (inv / np.asarray(factors, np.float32)).astype(np.float32) if factors is not None else inv


def angles(positions, dim, base, scale=1.0, factors=None, exact=False):
    """[len(positions), dim/2] angles: float32 (framework) or extended precision (exact)."""
    p = np.asarray(positions).reshape(-1)
    if exact:
        # The exact mode's frequency is the float64 inverse frequency; the
        # angle is its product with the integer position, formed here in
        # 64-bit-mantissa long double (error 2^-64 relative).
        inv = inv64(base, dim)
        if factors is not None:
            inv = inv / np.asarray(factors, np.float64)
        inv = inv / float(scale)
        return np.outer(p.astype(np.longdouble), inv.astype(np.longdouble))
    t = p.astype(np.float32) / np.float32(scale)
    return (t[:, None] * inv_freq32(dim, base, factors)[None, :]).astype(np.float32).astype(np.longdouble)


def unit_x(b, h, s, d):
    """x whose interleaved pairs are (1, 0): the result is (cos, sin) itself."""
    x = np.zeros((b, h, s, d), np.float32)
    x[..., 0::2] = 1.0
    return x


def ulps(got, want):
    """|got - want| in float32 ulps of the true value."""
    want32 = np.abs(want).astype(np.float32)
    return np.abs(got.astype(np.longdouble) - want) / np.spacing(np.maximum(want32, np.float32(2.0**-149)))


@pytest.mark.parametrize("angle", ["float32", "exact"])
@pytest.mark.parametrize("base", [10000.0, 500000.0])
def test_cos_sin_within_two_ulp_up_to_2_pow_24(device, angle, base):
    """Dense positions [0, 2^14) and random ones up to 2^24, every column of
    a 128-wide head: the shader's cos and sin against float64 / extended
    precision of the same angle."""
    rng = np.random.default_rng(int(base))
    pos = np.concatenate([np.arange(1 << 14), rng.integers(0, 1 << 24, 1 << 12), [(1 << 24) - 1]])
    spec = vkrope.RopeFreqs(128, base=base, angle=angle)
    x = unit_x(1, 1, len(pos), 128)
    y = device.rotary_embedding(x, spec, None, pos[None, :], interleaved=1)[0, 0]
    a = angles(pos, 128, base, exact=angle == "exact")
    err_c, err_s = ulps(y[:, 0::2], np.cos(a)), ulps(y[:, 1::2], np.sin(a))
    assert err_c.max() <= 2 and err_s.max() <= 2, (float(err_c.max()), float(err_s.max()))


def test_the_float32_angle_drifts_and_the_exact_one_does_not(device):
    """Why angle="exact" exists: near position 131072 the float32 angle of a
    column whose inverse frequency is just under 1 is off by up to ~0.01 rad."""
    pos = np.arange(131072 - 512, 131072 + 512)
    f32 = vkrope.RopeFreqs(128, base=10000.0)
    ex = vkrope.RopeFreqs(128, base=10000.0, angle="exact")
    x = unit_x(1, 1, len(pos), 128)
    truth = angles(pos, 128, 10000.0, exact=True)
    y32 = device.rotary_embedding(x, f32, None, pos[None, :], interleaved=1)[0, 0]
    yex = device.rotary_embedding(x, ex, None, pos[None, :], interleaved=1)[0, 0]
    assert np.abs(y32[:, 0::2] - np.cos(truth)).max() > 1e-4  # float32 angle: visibly off
    assert ulps(yex[:, 0::2], np.cos(truth)).max() <= 2


@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("layout", ["4d", "3d"])
@pytest.mark.parametrize("interleaved", [0, 1])
def test_rotary_embedding_with_a_spec_matches_its_table(device, storage, dtype, layout, interleaved):
    """The spec's result equals ONNX RotaryEmbedding with the table it
    stands for (float64 cos / sin of the same angles), partial rotary,
    scale and freq_factors, numpy and resident x."""
    rng = np.random.default_rng(interleaved)
    b, h, s, d, rot = 2, 3, 9, 24, 16
    factors = rng.uniform(1, 8, rot // 2)
    spec = vkrope.RopeFreqs(rot, base=10000.0, scale=2.5, freq_factors=factors)
    pos = rng.integers(0, 5000, (b, s))
    a = angles(pos, rot, 10000.0, scale=2.5, factors=factors).astype(np.float64).reshape(b, s, rot // 2)
    x = rng.standard_normal((b, h, s, d)).astype(dtype)
    kw = dict(interleaved=interleaved, rotary_embedding_dim=rot)
    if layout == "3d":
        x = x.transpose(0, 2, 1, 3).reshape(b, s, h * d).copy()
        kw["num_heads"] = h
    ref = onnx_rotary_embedding(x, np.cos(a), np.sin(a), **kw)
    tol = 1e-5 if dtype == np.float32 else 2e-3
    y = device.rotary_embedding(x, spec, None, pos, storage=storage, **kw)
    assert np.abs(y - ref).max() < tol * max(1.0, np.abs(ref).max())
    yd = device.rotary_embedding(device.asarray(x, storage=storage), spec, None, pos, **kw).get()
    assert np.abs(yd - ref).max() < tol * max(1.0, np.abs(ref).max())


def test_executorch_ops_with_a_spec(device):
    rng = np.random.default_rng(5)
    xq = rng.standard_normal((2, 7, 4, 16)).astype(np.float32)
    xk = rng.standard_normal((2, 7, 2, 16)).astype(np.float32)
    spec = vkrope.RopeFreqs(16, base=500000.0)
    a = angles(np.arange(7), 16, 500000.0).astype(np.float64)
    for y, r in zip(device.apply_rotary_emb(xq, xk, spec, None), et_apply_rotary_emb(xq, xk, np.cos(a), np.sin(a))):
        assert np.abs(y - r).max() < 1e-5
    spec = vkrope.RopeFreqs(12)
    a = angles(np.arange(3, 10), 12, 10000.0).astype(np.float64)
    full_c, full_s = np.concatenate([np.cos(a)] * 2, 1), np.concatenate([np.sin(a)] * 2, 1)
    full_c = np.concatenate([np.zeros((3, 12)), full_c])
    full_s = np.concatenate([np.zeros((3, 12)), full_s])
    for y, r in zip(device.apply_rotary_emb_hf(xq, xk, spec, None, start_pos=3),
                    et_apply_rotary_emb_hf(xq, xk, full_c, full_s, 3)):
        assert np.abs(y - r).max() < 1e-5


def test_a_start_pos_past_int64_is_refused_by_name(device):
    """apply_rotary_emb_hf with a spec and start_pos >= 2^63 raised numpy's OverflowError (its np.arange) that
    named nothing; every start_pos whose positions pass 2^24 is a ValueError naming it, the last that fits runs."""
    xq, xk = np.zeros((1, 4, 2, 16), np.float32), np.zeros((1, 4, 1, 16), np.float32)
    plain = vkrope.from_hf({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4})
    for spec in (vkrope.RopeFreqs(16), plain):
        for start in (2**63, np.uint64(2**64 - 1), 2**24 - 3):
            with pytest.raises(ValueError, match=r"^start_pos \+ s must lie in \[0, 2\^24\) .* got start_pos "
                                                 rf"{int(start)} with S = 4$"):
                device.apply_rotary_emb_hf(xq, xk, spec, None, start_pos=start)
        yq, _ = device.apply_rotary_emb_hf(xq + 1, xk, spec, None, start_pos=2**24 - 4)
        assert np.isfinite(yq).all() and not np.array_equal(yq, xq + 1)


def test_table_is_what_the_spec_stands_for():
    spec = vkrope.RopeFreqs(8, base=10000.0, scale=2.0)
    cos, sin = spec.table(np.arange(5))
    a = angles(np.arange(5), 8, 10000.0, scale=2.0).astype(np.float64)
    assert np.array_equal(cos, np.cos(a).astype(np.float32)) and np.array_equal(sin, np.sin(a).astype(np.float32))


@pytest.mark.parametrize("kw,word", [
    (dict(dim=7), "dim"), (dict(dim=0), "dim"), (dict(dim=8.0), "dim"), (dict(dim=8, base=0.0), "base"),
    (dict(dim=8, base=-1), "base"), (dict(dim=8, scale=float("nan")), "scale"), (dict(dim=8, scale=0), "scale"),
    (dict(dim=8, freq_factors=[1, 2, 3]), "freq_factors"), (dict(dim=8, freq_factors=[1, 2, 3, -4]), "freq_factors"),
    (dict(dim=8, angle="double"), "angle"),
])
def test_bad_specs_name_the_argument(kw, word):
    with pytest.raises((TypeError, ValueError), match=word):
        vkrope.RopeFreqs(**kw)


@pytest.mark.parametrize("inv", [np.array([1 + 1j, 0.5]), [1j, 0.5], [np.complex64(1), 2.0]])
def test_complex_inverse_frequencies_are_refused(inv):
    """Not read as their real parts (a float64 conversion drops the imaginary ones with only a warning)."""
    with pytest.raises(TypeError, match="inv_freq must hold real numbers"):
        vkrope.InvFreqs(inv)


def test_inverse_frequencies_of_the_wrong_shape_or_type_say_which():
    """A sequence of another rank is the wrong value (ValueError), a scalar or text the wrong type."""
    for inv in (np.ones((2, 16)), [[1.0, 0.5]], [[1.0], [1.0, 2.0]]):  # (the last ragged)
        with pytest.raises(ValueError, match=r"^inv_freq must be 1-D \(dim/2 numbers\); got (2-D|a ragged) "):
            vkrope.InvFreqs(inv)
    for inv in (3.0, "ab"):
        with pytest.raises(TypeError, match="^inv_freq must be a 1-D sequence of numbers"):
            vkrope.InvFreqs(inv)


def test_bad_spec_use_is_a_clear_error(device):
    x = np.zeros((1, 2, 3, 8), np.float32)
    pos = np.zeros((1, 3), np.int64)
    with pytest.raises(ValueError, match="sin_cache must be None"):
        device.rotary_embedding(x, vkrope.RopeFreqs(8), np.zeros((3, 4), np.float32), pos)
    with pytest.raises(ValueError, match="dim = 6"):
        device.rotary_embedding(x, vkrope.RopeFreqs(6), None, pos)
    with pytest.raises(ValueError, match="2\\^24"):
        device.rotary_embedding(x, vkrope.RopeFreqs(8), None, np.full((1, 3), 1 << 24))
    with pytest.raises(ValueError, match="2\\^24"):
        device.rotary_embedding(x, vkrope.RopeFreqs(8), None, np.full((1, 3), -1))


# --- vkrope.apply with AxialFreqs / RopeFreqs ------------------------------------------
def axial_angles(rows, dim, end_x, theta=10000.0, exact=False):
    """SAM2's axial angles of table rows, float32 product or long double exact."""
    r = np.asarray(rows).reshape(-1)
    x, y = r % end_x, r // end_x
    if exact:
        fl = inv64(theta, dim, 4)[: dim // 4].astype(np.longdouble)
        return np.concatenate([np.outer(x.astype(np.longdouble), fl), np.outer(y.astype(np.longdouble), fl)], 1)
    e = np.arange(0, dim, 4, dtype=np.float32)[: dim // 4] / np.float32(dim)
    f = np.float32(1.0) / pow32(theta, e)
    a = np.concatenate([x.astype(np.float32)[:, None] * f[None, :], y.astype(np.float32)[:, None] * f[None, :]], 1)
    return a.astype(np.float32).astype(np.longdouble)


@pytest.mark.parametrize("angle", ["float32", "exact"])
@pytest.mark.parametrize("grid", [64, 128])
@pytest.mark.parametrize("storage", STORAGES)
def test_axial_cos_sin_within_two_ulp(device, angle, grid, storage):
    """x of (1, 0) pairs: the result is the shader's (cos, sin) of every
    token's axial angle, on SAM2's 64x64 and 128x128 grids."""
    dim = 256
    spec = vkrope.AxialFreqs(dim, grid, grid, angle=angle)
    x = np.zeros((1, grid * grid, dim), np.float32)
    x[..., 0::2] = 1.0
    y = device.apply(x, spec, storage=storage)[0]
    a = axial_angles(np.arange(grid * grid), dim, grid, exact=angle == "exact")
    err_c, err_s = ulps(y[:, 0::2], np.cos(a)), ulps(y[:, 1::2], np.sin(a))
    assert err_c.max() <= 2 and err_s.max() <= 2, (float(err_c.max()), float(err_s.max()))


@pytest.mark.parametrize("angle", ["float32", "exact"])
@pytest.mark.parametrize("grid,theta,short", [((4099, 4093), 10000.0, True), ((4099, 4093), 0.01, False),
                                              ((1, 1 << 24), 10000.0, False), ((3, (1 << 24) // 3), 1e4, False),
                                              ((7, (1 << 24) // 7), 1e4, False)])
def test_axial_grids_up_to_2_pow_24_rows(device, angle, grid, theta, short):
    """A 4099 x 4093 grid (16777207 rows, just under 2^24) through positions:
    rows at both ends, next to every kind of x / y boundary and random, so
    the shader's row -> (x, y) split is checked where float quotients round.
    theta = 0.01 makes the inverse frequency 10 and the largest angle 40980:
    past the short reduction's 8192, so the full one runs (the spec says
    which, from its own fields)."""
    dim, (ex, ey) = 8, grid
    spec = vkrope.AxialFreqs(dim, ex, ey, theta=theta, angle=angle)
    from vkrope.kernels.generated import ANGLE_SHORT  # noqa: PLC0415
    from vkrope.ops.lowering import lower  # noqa: PLC0415

    assert (lower(spec).angle == ANGLE_SHORT) == (short and angle == "float32")
    rng = np.random.default_rng(9)
    edges = np.array([0, 1, ex - 1, ex, ex + 1, ex * ey - 1, ex * ey - 2, ex * (ey - 1), ex * (ey - 1) - 1])
    near_top = np.arange(ex * ey - 3000, ex * ey)  # quotients near 2^24, where float estimates are off
    rows = np.concatenate([edges, (np.arange(1, ey) * ex - 1)[-4000:], (np.arange(1, ey) * ex)[-4000:], near_top,
                           rng.integers(0, ex * ey, 4000)])
    x = np.zeros((1, len(rows), dim), np.float32)
    x[..., 0::2] = 1.0
    y = device.apply(x, spec, positions=rows, out=np.full_like(x, np.nan))[0]
    f = inv64(theta, dim, 4)[: dim // 4]
    if angle == "exact":
        fl = f.astype(np.longdouble)
        cx, cy = (rows % ex).astype(np.longdouble), (rows // ex).astype(np.longdouble)
        a = np.concatenate([np.outer(cx, fl), np.outer(cy, fl)], 1)
    else:
        e = np.arange(0, dim, 4, dtype=np.float32)[: dim // 4] / np.float32(dim)
        f32 = np.float32(1.0) / pow32(theta, e)
        a = np.concatenate([(rows % ex).astype(np.float32)[:, None] * f32,
                            (rows // ex).astype(np.float32)[:, None] * f32], 1).astype(np.float32)
        a = a.astype(np.longdouble)
    err_c, err_s = ulps(y[:, 0::2], np.cos(a)), ulps(y[:, 1::2], np.sin(a))
    assert err_c.max() <= 2 and err_s.max() <= 2, (float(err_c.max()), float(err_s.max()))


@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("resident", [False, True])
def test_apply_with_specs_matches_their_tables(device, storage, dtype, resident):
    """AxialFreqs with repeat / exclude_last (SAM2 memory keys) and RopeFreqs
    with positions (-1 passes through), against the oracle on the tables the
    specs stand for."""
    from oracle import oracle

    rng = np.random.default_rng(3)
    spec = vkrope.AxialFreqs(32, 8, 8)
    a = axial_angles(np.arange(64), 32, 8).astype(np.float64)
    table = np.stack([np.cos(a), np.sin(a)], -1).reshape(64, 32)
    k = rng.standard_normal((2, 3 * 64 + 4, 32)).astype(dtype)
    pos = rng.integers(-1, 1 << 22, 9)
    rope = vkrope.RopeFreqs(32, base=10000.0, scale=4.0, angle="float32")
    ra = angles(np.maximum(pos, 0), 32, 10000.0, scale=4.0).astype(np.float64)
    rtable = np.stack([np.cos(ra), np.sin(ra)], -1).reshape(9, 32)
    q = rng.standard_normal((2, 9, 32)).astype(dtype)
    tol = 1e-5 if dtype == np.float32 else 2e-3
    cases = [(k, spec, dict(repeat=3, exclude_last=4), oracle(k, table, repeat=3, exclude_last=4)),
             (q, rope, dict(positions=pos), oracle(q, rtable, positions=np.where(pos < 0, -1, np.arange(9))))]
    for x, f, kw, ref in cases:
        if resident:
            y = device.apply(device.asarray(x, storage=storage), f, **kw).get()
        else:
            y = device.apply(x, f, out=np.full_like(x, np.nan), storage=storage, **kw)
        assert np.abs(y.astype(np.float64) - ref).max() < tol * 4


def test_axial_table_matches_sam2_within_rounding():
    """The spec's table is SAM2's compute_axial_cis (vkrope.axial_freqs, float64) to float32 angle rounding."""
    t = vkrope.AxialFreqs(64, 16, 16).table()
    assert np.abs(t - vkrope.axial_freqs(64, 16, 16)).max() < 1e-5


def _sam2_float32_table(dim: int, end_x: int, end_y: int, theta: float = 10000.0) -> np.ndarray:
    """SAM2's compute_axial_cis transcribed step by step in float32 numpy
    (torch computes each step in float32 too)."""
    f32 = np.float32
    freqs = (f32(1.0) / (f32(theta) ** (np.arange(0, dim, 4, dtype=f32)[: dim // 4] / f32(dim)))).astype(f32)
    t = np.arange(end_x * end_y, dtype=f32)
    t_x, t_y = (t % f32(end_x)).astype(f32), np.floor(t / f32(end_x)).astype(f32)
    angles = np.concatenate([np.outer(t_x, freqs), np.outer(t_y, freqs)], 1).astype(f32)
    return np.stack([np.cos(angles), np.sin(angles)], -1).reshape(end_x * end_y, dim)


@pytest.mark.parametrize("side,gap", [(64, 3.4e-6), (1024, 5.7e-5)])
def test_axial_freqs_gap_to_sam2s_float32_table_is_as_documented(side, gap):
    """README / axial_freqs docstring: at dim 256 the exact table is up to
    3.4e-6 (64x64) and 5.7e-5 (1024x1024) away from SAM2's float32 one. The
    y half of a square grid repeats the x half's angles, so a side x 16 grid
    holds the same largest gap in a sixty-fourth of the memory."""
    d = np.abs(_sam2_float32_table(256, side, 16).astype(np.float64)
               - vkrope.axial_freqs(256, side, 16, dtype=np.float64)).max()
    assert 0.8 * gap < d < 1.05 * gap, d


@pytest.mark.parametrize("kw,word", [
    (dict(dim=6, end_x=4, end_y=4), "dim"), (dict(dim=8, end_x=0, end_y=4), "end_x"),
    (dict(dim=8, end_x=4, end_y=4, theta=0), "theta"), (dict(dim=8, end_x=4, end_y=4, angle="fast"), "angle"),
])
def test_bad_axial_specs(kw, word):
    with pytest.raises((TypeError, ValueError), match=word):
        vkrope.AxialFreqs(**kw)


def test_bad_spec_use_in_apply(device):
    x = np.zeros((1, 16, 8), np.float32)
    with pytest.raises(ValueError, match="dim = 16"):
        device.apply(x, vkrope.AxialFreqs(16, 4, 4))
    with pytest.raises(ValueError, match="positions"):
        device.apply(x, vkrope.RopeFreqs(8))
    with pytest.raises(ValueError, match="rows"):
        device.apply(x, vkrope.AxialFreqs(8, 4, 3))  # 12 rows for 16 tokens


def test_specs_that_differ_only_in_freq_factors(device):
    """Two specs equal but for freq_factors are different specs, and the same
    call shape with each gives each one's result (nothing cached by spec
    identity mixes them up)."""
    rng = np.random.default_rng(8)
    f1, f2 = rng.uniform(1, 8, 8), rng.uniform(1, 8, 8)
    a, b = vkrope.RopeFreqs(16, freq_factors=f1), vkrope.RopeFreqs(16, freq_factors=f2)
    assert a != b and vkrope.RopeFreqs(16, freq_factors=list(f1)) == a
    x = rng.standard_normal((1, 2, 5, 16)).astype(np.float32)
    pos = rng.integers(0, 1000, (1, 5))
    for spec, factors in ((a, f1), (b, f2), (a, f1)):
        ang = angles(pos, 16, 10000.0, factors=factors).astype(np.float64).reshape(1, 5, 8)
        ref = onnx_rotary_embedding(x, np.cos(ang), np.sin(ang))
        assert np.abs(device.rotary_embedding(x, spec, None, pos) - ref).max() < 1e-5


@pytest.mark.parametrize("angle", ["float32", "exact"])
@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("kind,dim", [("rope", 2), ("rope", 6), ("rope", 12), ("rope", 22),
                                      ("axial", 12), ("axial", 20), ("axial", 28)])
def test_apply_with_specs_of_any_pair_count(device, angle, storage, kind, dim):
    """Pair counts that are odd or not a multiple of 4: the interleaved
    kernel's frequency words are padded to whole uvec4s, and the exact
    angle's quarter turns sit past that padding (a texel with one pair too)."""
    if kind == "rope":
        pos = np.concatenate([np.arange(40), [4095, 131071, (1 << 24) - 1]])
        spec = vkrope.RopeFreqs(dim, angle=angle)
        a = angles(pos, dim, 10000.0, exact=angle == "exact")
        kw = dict(positions=pos)
    else:
        spec = vkrope.AxialFreqs(dim, 9, 7, angle=angle)
        pos = np.arange(63)
        a = axial_angles(pos, dim, 9, exact=angle == "exact")
        kw = {}
    x = np.zeros((1, len(pos), dim), np.float32)
    x[..., 0::2] = 1.0
    y = device.apply(x, spec, storage=storage, out=np.full_like(x, np.nan), **kw)[0]
    err_c, err_s = ulps(y[:, 0::2], np.cos(a)), ulps(y[:, 1::2], np.sin(a))
    assert err_c.max() <= 2 and err_s.max() <= 2, (float(err_c.max()), float(err_s.max()))


def test_the_float32_power_is_correctly_rounded():
    """vkrope's float32 base ** e (inverse frequencies of RopeFreqs and
    AxialFreqs) against the exact power in 60-digit decimal arithmetic,
    rounded to the nearest float32 by comparing neighbours exactly."""
    from decimal import Decimal, FloatOperation, Inexact, getcontext, localcontext

    from vkrope.exact_math import pow32 as vk_pow32

    getcontext().prec = 60

    def nearest32(d):
        f = np.float32(float(d))
        cands = [np.nextafter(f, np.float32(-np.inf)), f, np.nextafter(f, np.float32(np.inf))]
        return min(cands, key=lambda c: abs(Decimal(float(c)) - d))

    # (699987000 and 8154176: float64 powers on a float32 midpoint, which rounding twice took to the wrong
    # side at 80 / 160 and 128 channels: an adversary's)
    for base in (2.0, 10.0, 100.0, 10000.0, 150000.0, 500000.0, 1000000.0, 5000000.0, 699987000.0, 8154176.0):
        for dim in (16, 64, 80, 96, 128, 160, 256, 1024):
            e = np.arange(0, dim, 2, dtype=np.float32) / np.float32(dim)
            lnb = Decimal(float(np.float32(base))).ln()
            want = np.array([nearest32((lnb * Decimal(float(v))).exp()) for v in e], np.float32)
            got = vk_pow32(base, e)
            assert np.array_equal(got.view(np.int32), want.view(np.int32)), (base, dim)
    # Exact ties go to the even float32 (4097^2 = 16785409 and 66049^1.5 = 257^3 = 16974593 are midpoints; the
    # decimal power's noise picked a side, an adversary's), whatever decimal context the caller set
    with localcontext() as caller:  # (and DefaultContext's, which a new Context copies, a FloatOperation trap)
        caller.prec, caller.traps[Inexact], caller.traps[FloatOperation] = 3, True, True
        assert vk_pow32(4097.0, np.array([2.0], np.float32))[0] == np.float32(16785408)
        assert vk_pow32(66049.0, np.array([1.5], np.float32))[0] == np.float32(16974592)
        assert vkrope.RopeFreqs(80, base=699987000.0).inv_freq32[7] == np.float32(1) / np.float32(35.30942916870117)
    import decimal  # noqa: PLC0415

    saved = decimal.DefaultContext.traps[Inexact], decimal.DefaultContext.Emax
    decimal.DefaultContext.traps[Inexact], decimal.DefaultContext.Emax = True, 5
    try:
        assert vk_pow32(4097.0, np.array([2.0], np.float32))[0] == np.float32(16785408)
    finally:
        decimal.DefaultContext.traps[Inexact], decimal.DefaultContext.Emax = saved


def test_an_axial_grid_lowers_x_columns_first():
    """The interleaved kernel's AXIAL mode turns the first C/4 columns by x
    and the rest by y (arithmetic, not a load per pair): the lowering must
    lay a grid's columns out that way, each half with the grid's frequencies."""
    from vkrope.ops.lowering import lower  # noqa: PLC0415

    spec = vkrope.AxialFreqs(16, 5, 3, theta=100.0)
    gen = lower(spec)
    assert gen.grid_width == 5 and gen.n_columns == 8
    assert gen.axis.tolist() == [0] * 4 + [1] * 4
    assert np.array_equal(gen.inv32[:4], gen.inv32[4:])
    assert np.array_equal(gen.inv32[:4], spec.inv_freq32)


def test_the_reference_reduces_an_exact_inv_freqs_as_the_shader_does(device):
    """InvFreqs frequencies past 2 pi with angle="exact": the reference's
    angles are reduced exactly (InvFreqs.angles), as the shader's are; an
    unreduced float64 product at position 2^24 - 1 is ~1e-6 off."""
    inv = [1000.123, 7.77, 0.5, 0.01]
    spec = vkrope.InvFreqs(inv, inv_freq_exact=inv, angle="exact")
    pos = np.array([16777215, 12345677, 0, 3])
    x = np.random.default_rng(5).standard_normal((4, 8)).astype(np.float32)
    two_pi = 2 * decimal.Decimal("3.14159265358979323846264338327950288419716939937510582097494459")
    with decimal.localcontext() as ctx:
        ctx.prec = 60  # p * f exactly (f a binary float), reduced with pi to 60 digits
        a = np.array([[float((decimal.Decimal(int(p)) * decimal.Decimal(f)) % two_pi) for f in inv] for p in pos])
    ref = vkrope.apply_reference(x, spec, positions=pos)
    y = device.apply(x, spec, positions=pos)
    c, s = np.cos(a), np.sin(a)
    want = np.stack([x[:, 0::2] * c - x[:, 1::2] * s, x[:, 0::2] * s + x[:, 1::2] * c], -1).reshape(4, 8)
    assert np.abs(ref - want).max() < 1e-9
    assert np.abs(y - want).max() < 4e-7 * (np.abs(x).max() + 1)


def test_an_exact_inv_freqs_angle_uses_the_float64_frequencies_as_given(device):
    """InvFreqs(float64 frequencies, angle="exact") takes them as given for its exact angle (the docstring's
    default), not rounded to float32 first: at position 2^24 - 1 a float32-rounded Llama frequency is off by
    up to ~0.5 rad (an adversary's finding)."""
    inv = 1.0 / 500000.0 ** (np.arange(0, 128, 2) / 128)  # float64, mostly not float32 values
    assert not np.array_equal(inv, inv.astype(np.float32))
    spec = vkrope.InvFreqs(inv, angle="exact")
    assert spec.inv_freq_exact == tuple(inv) and spec.inv_freq == tuple(inv.astype(np.float32).astype(float))
    pos = np.array([16777215, 1000003, 7])
    two_pi = 2 * decimal.Decimal("3.14159265358979323846264338327950288419716939937510582097494459")
    with decimal.localcontext() as ctx:
        ctx.prec = 80
        a = np.array([[float((decimal.Decimal(int(p)) * decimal.Decimal(f)) % two_pi) for f in inv] for p in pos])
    x = np.random.default_rng(6).standard_normal((3, 128)).astype(np.float32)
    y = device.apply(x, spec, positions=pos)
    c, s = np.cos(a), np.sin(a)
    want = np.stack([x[:, 0::2] * c - x[:, 1::2] * s, x[:, 0::2] * s + x[:, 1::2] * c], -1).reshape(3, 128)
    assert np.abs(y - want).max() < 4e-7 * (np.abs(x).max() + 1)


def test_a_rope_freqs_table_reduces_its_exact_angles():
    """RopeFreqs(angle="exact").table is cos / sin of the exact angle (as the
    shader's and InvFreqs'): at position 13785859 base 500000's column 1
    sits next to a zero of cos, where a float64 product was 42 float32 ulp off."""
    spec = vkrope.RopeFreqs(128, base=500000.0, angle="exact")
    same = vkrope.InvFreqs(inv_freq=spec.inv_freq32, inv_freq_exact=spec.inv_freq64, angle="exact")
    p = np.array([13785859])
    assert np.array_equal(spec.table(p)[0], same.table(p)[0]) and np.array_equal(spec.table(p)[1], same.table(p)[1])
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        two_pi = 2 * decimal.Decimal("3.14159265358979323846264338327950288419716939937510582097494459")
        a = float((decimal.Decimal(13785859) * decimal.Decimal(float(spec.inv_freq64[1]))) % two_pi)
    assert spec.table(p)[0][0, 1] == np.float32(math.cos(a))


@pytest.mark.parametrize("copier", [lambda s: pickle.loads(pickle.dumps(s)), copy.deepcopy, copy.copy],
                         ids=["pickle", "deepcopy", "copy"])
def test_a_copied_spec_keeps_its_arrays_read_only(copier):
    """A spec's computed arrays are read-only; a pickled or deep-copied one computes its own rather than bringing
    back writable ones, whose edit would reach every equal spec through the cached lowering."""
    specs = [vkrope.RopeFreqs(16, base=500.0, yarn=vkrope.YaRN(4096)), vkrope.AxialFreqs(16, 4, 4),
             vkrope.NdFreqs((8, 8), 700.0), vkrope.InvFreqs(inv_freq=(1.0, 0.5, 0.25, 0.125), angle="exact")]
    for spec in specs:
        arrays = [spec.inv_freq32, spec.inv_freq64, spec.quarter_turns]
        clone = copier(spec)
        assert clone == spec
        for name, original in zip(("inv_freq32", "inv_freq64", "quarter_turns"), arrays):
            a = getattr(clone, name)
            np.testing.assert_array_equal(a, original)
            with pytest.raises(ValueError, match="read-only"):
                a[...] = 0


def test_a_specs_kept_arrays_cannot_be_made_writeable_again():
    """The read-only flag of an array that owns its memory can be set back; an edit through it reached every
    equal spec made later, through the lowering cached by spec (a fresh InvFreqs rotated by the frequencies
    another caller zeroed). The kept arrays are views of immutable bytes, and the lowering's own columns too."""
    from vkrope.ops.lowering import lower

    nd = vkrope.NdFreqs((8, 8), 700.0)
    mrope = vkrope.InvFreqs(inv_freq=(1.0, 0.5, 0.25, 0.125), pair_axis=(0, 1, 2, 2))
    kept = [mrope.inv_freq32, mrope.inv_freq64, mrope.quarter_turns, mrope.pair_axis_array, nd.pair_axis,
            lower(mrope).columns, lower(nd).columns]
    for a in kept:
        with pytest.raises(ValueError, match="WRITEABLE"):
            a.flags.writeable = True
        assert a.base is None or not a.base.flags.writeable


def test_specs_equal_but_for_the_sign_of_a_zero_frequency_lower_apart():
    """-0.0 == 0.0, so two InvFreqs differing only there were one spec to the lowering's cache: which was lowered
    first decided the signs of zero the other's results had. They compare unequal now, each with its own."""
    x = np.array([[[-0.0, -0.0, 1.0, 2.0, -0.0, 5.0, 3.0, -0.0]]], np.float32)
    pos = np.array([3])
    plus, minus = vkrope.InvFreqs([0.0, 0.5, 0.0, 0.25]), vkrope.InvFreqs([-0.0, 0.5, -0.0, 0.25])
    assert plus != minus and minus == vkrope.InvFreqs(np.array([-0.0, 0.5, -0.0, 0.25]))
    first = {id(s): vkrope.apply(x, s, positions=pos).view(np.uint32) for s in (plus, minus)}
    again = {id(s): vkrope.apply(x, s, positions=pos).view(np.uint32) for s in (minus, plus)}
    assert not np.array_equal(first[id(plus)], first[id(minus)])  # (the signs of some zeros differ)
    for s in (plus, minus):
        np.testing.assert_array_equal(again[id(s)], first[id(s)])


@pytest.mark.parametrize("make,msg", [
    (lambda: vkrope.RopeFreqs(64, base=1e30, angle="exact"), "inverse frequency >= 2^-64; base, scale and freq_factors"),
    (lambda: vkrope.AxialFreqs(64, 4, 4, theta=1e30, angle="exact"), "inverse frequency >= 2^-64; theta and dim"),
    (lambda: vkrope.NdFreqs((32, 32), theta=1e30, angle="exact"), "inverse frequency >= 2^-64; theta and axes_dim"),
    (lambda: vkrope.InvFreqs(np.array([0.0, 2.0**-65, 1.0]), angle="exact"),
     "nonzero inverse frequency >= 2^-64; its float64 inverse frequencies give 2.71e-20"),
])
def test_the_exact_angle_refuses_frequencies_below_its_range(make, msg):
    """Below 2^-64 the exact angle's fixed-point frequency keeps fewer bits than float32 has: refused, saying
    which arguments give it; an InvFreqs' zero frequency turns nothing and is taken, 2^-64 itself too."""
    with pytest.raises(ValueError, match="^angle='exact' needs every " + re.escape(msg) + r".*; use angle='float32'$"):
        make()
    assert vkrope.InvFreqs(np.array([0.0, 2.0**-64, 1.0]), angle="exact").dim == 6
    assert vkrope.RopeFreqs(4, base=2.0**64, scale=2.0**32, angle="exact").inv_freq64.min() == 2.0**-64


def test_an_overflowed_float32_angle_is_nan_without_warnings():
    """A huge inverse frequency's float32 angle overflows to inf, whose cos / sin are NaN as the frameworks'
    float32 arithmetic gives them: the tables say so without numpy's overflow and invalid-value warnings (a
    diff reviewer's, after NdFreqs' were silenced), and float16 positions without a cast warning."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cos, sin = vkrope.InvFreqs(np.array([3e38, 1], np.float32)).table(np.arange(3))
        rope = vkrope.from_hf({"model_type": "llama", "hidden_size": 256, "num_attention_heads": 4, "head_dim": 64})
        half = rope.cos_sin(np.arange(4, dtype=np.float16)[None])
    assert np.isnan(cos[2, 0]) and np.isnan(sin[2, 0]) and np.isfinite(cos[:2]).all() and np.isfinite(cos[:, 1]).all()
    assert np.array_equal(half[0], rope.cos_sin(np.arange(4)[None])[0])
