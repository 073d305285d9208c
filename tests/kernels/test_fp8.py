"""fp8 KV caches (float8_e4m3fn, float8_e5m2) in `rope_and_cache` and
`shift_cache`, byte for byte against the exact oracle of
tests/oracles/oracle_fp8.py (Fractions): the stored byte is the exact
rotation (or v) divided by the scale, rounded once to nearest even,
saturated. Every finite value of each format and every midpoint between two
(the ties) goes through the kernel, with its float32 neighbours; every byte
as a shift's input; resident fp8 arrays keep their bits."""

from __future__ import annotations

import copy
import math
import zlib
from fractions import Fraction

import numpy as np
import ml_dtypes
import pytest

import vkrope
import oracle_fp8
from oracle import BF16
from oracle_cache import decode_step, values
from oracle_fp8 import E4M3, E5M2, decode, midpoints, quantize, rotated_byte

FORMATS = [(E4M3, np.dtype(vkrope.float8_e4m3fn)), (E5M2, np.dtype(vkrope.float8_e5m2))]
FMT_IDS = ["e4m3", "e5m2"]
X_DTYPES = [np.dtype(np.float32), np.dtype(np.float16), BF16]
X_IDS = ["f32", "f16", "bf16"]


def decoded(bytes_: np.ndarray, fmt) -> np.ndarray:
    """float64 values of fp8 bytes (NaN for NaN), by the oracle."""
    table = np.array([math.nan if decode(b, fmt) is None else float(decode(b, fmt)) for b in range(256)])
    return table[bytes_]


def same_bytes(got: np.ndarray, want: np.ndarray, fmt) -> np.ndarray:
    """Byte equality, any NaN byte standing for NaN."""
    nan = np.isnan(decoded(want, fmt))
    return np.where(nan, np.isnan(decoded(got, fmt)), got == want)


def test_the_oracle_reads_every_byte_as_ml_dtypes_does():
    for fmt, dt in FORMATS:
        got = decoded(np.arange(256), fmt)
        want = np.arange(256, dtype=np.uint8).view(dt).astype(np.float64)
        assert np.array_equal(np.isnan(got), np.isnan(want))
        assert np.array_equal(got[~np.isnan(got)], want[~np.isnan(want)])
        assert float(fmt.max) == float(ml_dtypes.finfo(dt).max)  # (numpy 2.5 refuses np.finfo on them)


@pytest.mark.parametrize("fmt,dt", FORMATS, ids=FMT_IDS)
def test_resident_fp8_arrays_keep_every_byte(device, fmt, dt):
    bits = np.arange(256, dtype=np.uint8).reshape(16, 16)
    a = device.asarray(bits.view(dt))
    assert a.dtype == dt and a.storage == "buffer"
    assert np.array_equal(a.get().view(np.uint8), bits)
    assert np.array_equal(copy.copy(a).get().view(np.uint8), bits)  # a device copy
    assert np.array_equal(device.asarray(a.get()[3]).get().view(np.uint8), bits[3])
    with pytest.raises(ValueError, match="held in a buffer"):
        device.asarray(bits.view(dt), storage="texture3d")
    with pytest.raises(TypeError, match="x must have dtype"):
        device.apply(a, vkrope.RopeFreqs(16), positions=np.arange(16))


def v_values(fmt, s: float, dtype: np.dtype, seed: int) -> np.ndarray:
    """What the quantizer must round: every finite value and every midpoint
    (times s), each with its float32 neighbours, random magnitudes, and the
    specials (zeros, past max, infinities, NaN), as `dtype` values."""
    vals = [decode(b, fmt) for b in oracle_fp8.finite_bytes(fmt)]
    mids = midpoints(fmt)
    base = np.array([float(v * Fraction(s)) for v in vals + mids + [-m for m in mids]], np.float32)
    near = np.concatenate([base, np.nextafter(base, np.float32(np.inf)), np.nextafter(base, np.float32(-np.inf))])
    rng = np.random.default_rng(seed)
    rand = (rng.choice([-1, 1], 512) * 2.0 ** rng.uniform(-20, 18, 512) * s).astype(np.float32)
    big = float(fmt.max) * s
    specials = np.array([0.0, -0.0, big * 1.01, -big * 1.01, big * 4, np.inf, -np.inf, np.nan], np.float32)
    with np.errstate(over="ignore"):
        return np.concatenate([near, rand, specials]).astype(dtype)


@pytest.mark.parametrize("x_dtype", X_DTYPES, ids=X_IDS)
@pytest.mark.parametrize("fmt,dt", FORMATS, ids=FMT_IDS)
def test_every_value_and_tie_is_rounded_once(device, fmt, dt, x_dtype):
    """v written into fp8 caches: every value, midpoint (tie) and their
    neighbours, divided by the scale, to the byte of the exact quotient."""
    for s in (1.0, 0.375, float(np.float32(0.0123))):
        v = v_values(fmt, s, x_dtype, zlib.crc32(f"{fmt.name}{x_dtype}{s}".encode()))
        d = 16
        n = -(-v.size // d)
        vv = np.zeros(n * d, x_dtype)
        vv[:v.size] = v
        vv = vv.reshape(1, 1, n, d)
        kc = device.asarray(np.full((1, 1, n, d), 0x55, np.uint8).view(dt))
        vc = device.asarray(np.full((1, 1, n, d), 0x55, np.uint8).view(dt))
        cos, sin = np.ones((n, d // 2), np.float32), np.zeros((n, d // 2), np.float32)
        device.rope_and_cache(vv, vv, vv, kc, vc, (cos, sin), np.arange(n)[None], v_scale=s)
        got = vc.get().view(np.uint8).reshape(-1)
        x = values(vv).reshape(-1)
        want = np.array([quantize(float(a), fmt) if not np.isfinite(a)
                         else quantize(Fraction(float(a)) / Fraction(s), fmt, negative_zero=math.copysign(1, a) < 0)
                         for a in x], np.uint8)
        ok = same_bytes(got, want, fmt)
        assert ok.all(), (f"scale {s}: {int((~ok).sum())} bytes off, first value {x[~ok][:4]} got "
                          f"{got[~ok][:4]} want {want[~ok][:4]}")


def k_oracle(k: np.ndarray, cos: np.ndarray, sin: np.ndarray, pos: np.ndarray, interleaved: bool, s: float,
             fmt) -> np.ndarray:
    """uint8 [B, H, S, D]: each rotated key's byte, from exact products of
    the float values (rot = 2 * cos.shape[1]; channels past it pass)."""
    b, h, n, d = k.shape
    half = cos.shape[1]
    kv = values(k)
    out = np.zeros(k.shape, np.uint8)
    for bi, hi, si in np.ndindex(b, h, n):
        row, p = kv[bi, hi, si], pos[bi, si]
        for j in range(d):
            if j >= 2 * half:
                out[bi, hi, si, j] = rotated_byte(row[j], 1.0, 0.0, 0.0, s, fmt)
                continue
            if interleaved:
                i, first, pj = j // 2, j % 2 == 0, j ^ 1
            else:
                i, first, pj = j % half, j < half, (j + half) % (2 * half)
            partner = row[pj] if first else -row[pj]
            out[bi, hi, si, j] = rotated_byte(row[j], float(cos[p, i]), partner, float(sin[p, i]), s, fmt)
    return out


def stored_keys(device, dt, k: np.ndarray, cos: np.ndarray, sin: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """The bytes of keys k [1, 1, n, D] rotated (rotate-half) at positions
    0..n-1 of (cos, sin) into a fresh fp8 cache [1, 1, n, D]."""
    n, d = k.shape[2], k.shape[3]
    kc = device.asarray(np.zeros((1, 1, n, d), dt))
    vc = device.asarray(np.zeros((1, 1, n, d), dt))
    device.rope_and_cache(k, k, k, kc, vc, (cos, sin), np.arange(n)[None], k_scale=scale)
    return kc.get().view(np.uint8)


@pytest.mark.parametrize("interleaved", [False, True], ids=["half", "interleaved"])
@pytest.mark.parametrize("x_dtype", X_DTYPES, ids=X_IDS)
@pytest.mark.parametrize("fmt,dt", FORMATS, ids=FMT_IDS)
def test_rotated_keys_are_rounded_once(device, fmt, dt, x_dtype, interleaved):
    """k rotated by float32 (cos, sin) tables into fp8 caches, to the byte of
    the exact rotation over k_scale: random keys and angles (whole texels and
    a partial rotary width read value by value), paged and contiguous; table
    row 0 is (1, 0) with keys on midpoints (ties)."""
    rng = np.random.default_rng(zlib.crc32(f"{fmt.name}{x_dtype}{interleaved}".encode()))
    mids = np.array([float(m) for m in midpoints(fmt)][:40], np.float64)
    for d, rot, paged in ((16, 16, False), (16, 12, True), (8, 4, False)):
        b, h, n, s_max = 2, 2, 5, 6
        k = (rng.standard_normal((b, h, n, d)) * rng.choice([0.01, 1, 40], (b, h, n, 1))).astype(x_dtype)
        k[0, :, 0] = rng.choice(mids, (h, d)) * rng.choice([-1, 1], (h, d)) * 0.75  # ties at k_scale 0.75
        ang = rng.uniform(-4, 4, (s_max, rot // 2))
        cos, sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
        cos[0], sin[0] = 1.0, 0.0
        pos = np.stack([rng.permutation(s_max)[:n] for _ in range(b)])
        pos[0] = np.concatenate([[0], rng.permutation(np.arange(1, s_max))[:n - 1]])  # row 0: the ties
        shape = (b * n, 1, h, d) if paged else (b, h, s_max, d)
        slots = np.arange(b * n).reshape(b, n) if paged else None
        kc = device.asarray(np.full(shape, 0x33, np.uint8).view(dt))
        vc = device.asarray(np.full(shape, 0x33, np.uint8).view(dt))
        device.rope_and_cache(k[:, :1].repeat(2, 1), k, k, kc, vc, (cos, sin), pos, interleaved=interleaved,
                              slots=slots, k_scale=0.75, v_scale=3.0)
        want = k_oracle(k, cos, sin, pos, interleaved, 0.75, fmt)
        got = kc.get().view(np.uint8)
        if paged:
            got = got.reshape(b, n, h, d).transpose(0, 2, 1, 3)
        else:
            got = np.stack([got[bi][:, pos[bi]] for bi in range(b)])
        ok = same_bytes(got, want, fmt)
        assert ok.all(), f"D {d} rot {rot}: {int((~ok).sum())} of {ok.size} bytes off"


@pytest.mark.parametrize("x_dtype", X_DTYPES[:2], ids=X_IDS[:2])
@pytest.mark.parametrize("fmt,dt", FORMATS, ids=FMT_IDS)
def test_rotations_next_to_a_midpoint_are_decided_exactly(device, fmt, dt, x_dtype):
    """Keys whose rotation a*c - p*s lies within a few float32 ulps of a
    midpoint times the scale (p solved for it): float32 arithmetic cannot
    tell the side, the kernel's exact partial products must."""
    rng = np.random.default_rng(zlib.crc32(f"near{fmt.name}{x_dtype}".encode()))
    n, d, scale = 64, 8, float(np.float32(0.7071))
    mids = np.array([float(m) for m in midpoints(fmt)[:-1]])
    mids = mids[(mids < 1000) & (mids > 1e-3)]  # (float16 keys: a and p within its range)
    ang = rng.uniform(0.3, 1.2, (n, d // 2))  # sin well away from 0: p is a solution, not a huge one
    cos, sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    m = rng.choice(mids, (n, d // 2)) * rng.choice([-1, 1], (n, d // 2))
    a = (rng.standard_normal((n, d // 2)) * np.abs(m) * scale).astype(x_dtype)
    p = ((a.astype(np.float64) * cos - m * scale) / sin).astype(x_dtype)  # a*c - p*s ~ m * scale
    k = np.concatenate([a, p], -1)[None, None]  # rotate-half: column i pairs channels i and i + 4
    want = k_oracle(k, cos, sin, np.arange(n)[None], False, scale, fmt)
    ok = same_bytes(stored_keys(device, dt, k, cos, sin, scale), want, fmt)
    assert ok.all(), f"{int((~ok).sum())} of {ok.size} bytes off"


@pytest.mark.parametrize("fmt,dt", FORMATS, ids=FMT_IDS)
def test_cancellations_keep_the_sign_of_the_exact_value(device, fmt, dt):
    """a*c - p*s with a = 3x, c = 5y, p = 5x, s = 3y (one product, two
    factorings of 24-bit values: float32 rounds both alike) is exactly 0:
    +0; with s one ulp off it is a tiny value whose two products round
    alike, whose sign only exact partial products know: -0 or +0 by it."""
    rng = np.random.default_rng(zlib.crc32(f"cancel{fmt.name}".encode()))
    n, d = 64, 8
    odd = lambda: (rng.integers(1 << 19, 1 << 20, (n, d // 2)) * 2 + 1) * 2.0**-21  # noqa: E731  (21 bits)
    x, y = odd(), odd()
    cos, sin = (5 * y).astype(np.float32), (3 * y).astype(np.float32)  # 5y, 3x...: exact, 24 bits
    sin[::2] = np.nextafter(sin[::2], rng.choice([np.float32(0), np.float32(9)], sin[::2].shape))  # off by an ulp
    k = np.concatenate([3 * x, 5 * x], -1).astype(np.float32)[None, None]
    want = k_oracle(k, cos, sin, np.arange(n)[None], False, 1.0, fmt)
    got = stored_keys(device, dt, k, cos, sin)
    assert (want[..., :d // 2] == 0x80).any() and (want[..., :d // 2] == 0).any()  # both signs of zero are asked for
    assert np.array_equal(got[..., :d // 2], want[..., :d // 2])


@pytest.mark.parametrize("x_dtype", X_DTYPES, ids=X_IDS)
@pytest.mark.parametrize("fmt,dt", FORMATS, ids=FMT_IDS)
def test_large_keys_that_cancel_round_from_their_exact_difference(device, fmt, dt, x_dtype):
    """a*c - p*s a few fp8 steps from zero (or from a midpoint) while a*c is
    2^16..2^30 times larger (p solved for it): float32 puts the difference
    cells away from the exact one, which alone decides the byte; at the
    scales' bounds (2^-40, 2^40) too, and with (cos, sin) of magnitude 1.5
    (YaRN's factor)."""
    rng = np.random.default_rng(zlib.crc32(f"cancel-big{fmt.name}{x_dtype}".encode()))
    n, d = 96, 8
    scales = (1.0, 0.05) if x_dtype == np.float16 else (1.0, 2.0**-40, 2.0**40, 0.05)  # (float16's range)
    for scale in scales:
        ang = rng.uniform(0.3, 1.2, (n, d // 2))
        mag = rng.choice([1.0, 1.5], (n, 1))
        cos, sin = (np.cos(ang) * mag).astype(np.float32), (np.sin(ang) * mag).astype(np.float32)
        step = float(fmt.spacing_min) * scale  # the subnormal step, in key units
        target = rng.integers(-6, 7, (n, d // 2)) * step * rng.choice([1.0, 2.0**4, 2.0**7], (n, d // 2))
        big = step * 2.0 ** rng.uniform(16, 30, (n, d // 2)) * rng.choice([-1, 1], (n, d // 2))
        big = np.clip(big, -8000.0, 8000.0) if x_dtype == np.float16 else big  # (p stays in range)
        a = big.astype(x_dtype)
        p = ((a.astype(np.float64) * cos - target) / sin).astype(x_dtype)  # a*c - p*s ~ target
        k = np.concatenate([a, p], -1)[None, None]
        want = k_oracle(k, cos, sin, np.arange(n)[None], False, scale, fmt)
        ok = same_bytes(stored_keys(device, dt, k, cos, sin, scale), want, fmt)
        assert ok.all(), f"scale {scale}: {int((~ok).sum())} of {ok.size} bytes off"


@pytest.mark.parametrize("fmt,dt", FORMATS, ids=FMT_IDS)
def test_values_at_float32s_ends_round_from_their_exact_value(device, fmt, dt):
    """Keys near float32's largest value whose products overflow while
    their difference does not (inf - inf in float32), and rotations whose
    exact value or residual lies below float32's smallest (a near-tie, the
    sign of a zero): each to the exact oracle's byte."""
    big = float(np.float32(1.5 * 2.0**127))
    h = lambda x: float.fromhex(x)  # noqa: E731
    cases = [  # (a, partner, cos, sin, scale), rotate-half: out = a cos - partner sin
        (big, big, 2.0, 2.0, 1.0),  # exactly 0
        (big, big * 0.75, 2.0, 2.0, 2.0**40),  # 2^126.58: saturates
        (big, float(np.float32(big * 0.99)), 2.0, 2.0, 2.0**40),
        (h("0x1.00392ap-25"), h("0x1.94cd22p-65"), h("0x1.ff9d7ap-33"), h("0x1.43cb1ep-40"), h("0x1.0007dcp-40")),
        (2.0**-79 * (1 + 2.0**-22), 2.0**-79 * (1 + 2.0**-23), 2.0**-40, 2.0**-40 * (1 + 2.0**-23), 1.0),
        (2.0**-79 * (1 + 2.0**-23), 2.0**-79 * (1 + 2.0**-22), 2.0**-40, 2.0**-40 * (1 + 2.0**-23), 1.0),
    ]
    for a, partner, c, sn, scale in cases:
        k = np.array([a, 0, 0, 0, partner, 0, 0, 0], np.float32)[None, None, None]
        cos = np.array([[c, 1, 1, 1]], np.float32)
        sin = np.array([[sn, 0, 0, 0]], np.float32)
        want = k_oracle(k, cos, sin, np.array([[0]]), False, scale, fmt)
        got = stored_keys(device, dt, k, cos, sin, scale)
        assert same_bytes(got, want, fmt).all(), f"{(a, partner, c, sn, scale)}: {got.ravel()} != {want.ravel()}"


@pytest.mark.parametrize("fmt,dt", FORMATS, ids=FMT_IDS)
def test_caches_past_one_binding_take_fp8_slice_by_slice(make_device, fmt, dt):
    """A 4 KiB binding limit (256-byte offsets): the caches bind in slices,
    each role its own launches; every byte as the exact oracle's, the rows
    no token names untouched."""
    rng = np.random.default_rng(zlib.crc32(f"sliced{fmt.name}".encode()))
    dev = make_device(max_storage_buffer_range=4096, min_storage_buffer_offset_alignment=256)
    b, hq, hk, n, d, s_max = 2, 4, 2, 5, 12, 96
    k = (rng.standard_normal((b, hk, n, d)) * 3).astype(np.float32)
    ang = rng.uniform(-3, 3, (s_max, 3))
    cos, sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    pos = np.stack([rng.permutation(s_max)[:n] for _ in range(b)])
    kc0 = np.full((b, hk, s_max, d), 0x5A, np.uint8).view(dt)
    kc, vc = dev.asarray(kc0), dev.asarray(kc0)
    dev.rope_and_cache(k[:, :1].repeat(hq, 1), k, k, kc, vc, (cos, sin), pos, interleaved=True, k_scale=0.25,
                       v_scale=2.0)
    got = kc.get().view(np.uint8)
    want = k_oracle(k, cos, sin, pos, True, 0.25, fmt)
    written = np.zeros((b, hk, s_max), bool)
    for bi in range(b):
        written[bi][:, pos[bi]] = True
        assert same_bytes(got[bi][:, pos[bi]], want[bi], fmt).all()
    assert (got[~written] == 0x5A).all()
    vwant = np.array([quantize(Fraction(float(x)) / 2, fmt) for x in k.reshape(-1)], np.uint8).reshape(k.shape)
    vgot = vc.get().view(np.uint8)
    assert all(same_bytes(vgot[bi][:, pos[bi]], vwant[bi], fmt).all() for bi in range(b))


@pytest.mark.parametrize("fmt,dt", FORMATS, ids=FMT_IDS)
def test_a_shift_moves_the_channels_past_its_width_as_they_are(device, fmt, dt):
    """RopeFreqs(8) over D 16, every byte: the last 8 channels come back
    with their bytes, e5m2's infinities included (NaN stays NaN; its
    payload, as in 16-bit caches, may be quieted)."""
    bits = np.arange(256, dtype=np.uint8).reshape(1, 1, 16, 16)
    kc = device.asarray(bits.view(dt))
    old = np.arange(8, 16)[None]
    device.shift_cache(kc, vkrope.RopeFreqs(8, angle="exact"), old, old - 8,
                       v_cache=device.asarray(bits.view(dt)))  # rows 8.. move down over rows 0..
    passed = kc.get().view(np.uint8)[0, 0, :8, 8:]
    want = bits[0, 0, 8:, 8:]
    nan = np.isnan(decoded(want, fmt))
    assert np.array_equal(passed[~nan], want[~nan])
    assert np.isnan(decoded(passed[nan], fmt)).all()


@pytest.mark.parametrize("fmt,dt", FORMATS, ids=FMT_IDS)
def test_a_spec_and_the_norm_land_within_one_rounding(device, fmt, dt):
    """A RopeFreqs spec in the shader and Qwen3's RMSNorm: the stored values
    times the scale within half an fp8 step (plus float32 work) of the
    float64 decode step."""
    rng = np.random.default_rng(11)
    b, hq, hk, n, d, s_max = 1, 4, 2, 3, 16, 8
    q, k, v = (rng.standard_normal((b, hh, n, d)).astype(np.float32) for hh in (hq, hk, hk))
    wq, wk = rng.uniform(0.5, 1.5, d).astype(np.float32), rng.uniform(0.5, 1.5, d).astype(np.float32)
    spec = vkrope.RopeFreqs(d, base=10000.0, angle="exact")
    pos = np.array([[5, 1, 7]])
    kc = device.asarray(np.zeros((b, hk, s_max, d), dt))
    vc = device.asarray(np.zeros((b, hk, s_max, d), dt))
    ks, vs = 0.02, 0.5
    qo = device.rope_and_cache(q, k, v, kc, vc, spec, pos, q_norm=wq, k_norm=wk, k_scale=ks, v_scale=vs)
    ang = np.arange(s_max)[:, None] * (1.0 / 10000.0 ** (np.arange(0, d, 2) / d))
    zeros = np.zeros((b, hk, s_max, d))
    want_q, want_k, want_v, written = decode_step(q, k, v, zeros, zeros, np.cos(ang), np.sin(ang), pos,
                                                  q_norm=wq, k_norm=wk)
    assert np.abs(qo - want_q).max() < 1e-5 * (np.abs(want_q).max() + 1)
    for cache, want, sc in ((kc, want_k, ks), (vc, want_v, vs)):
        got = cache.get().astype(np.float64)[written] * sc
        ref = want[written]
        e = np.maximum(np.floor(np.log2(np.maximum(np.abs(ref) / sc, 2.0 ** (1 - fmt.bias)))), 1 - fmt.bias)
        step = 2.0 ** (e - fmt.mbits) * sc
        assert (np.abs(got - ref) <= 0.5 * step + 1e-5 * np.abs(ref)).all()


def fill_finite(fmt, dt, shape, rng) -> np.ndarray:
    """A cache of random finite bytes, every one of them present."""
    finite = np.array(oracle_fp8.finite_bytes(fmt), np.uint8)
    flat = np.concatenate([finite, rng.choice(finite, math.prod(shape) - finite.size)])
    return rng.permutation(flat).reshape(shape).view(dt)


@pytest.mark.parametrize("fmt,dt", FORMATS, ids=FMT_IDS)
def test_a_shift_by_zero_keeps_every_byte(device, fmt, dt):
    """Every byte in a row named with from == to stays as it is: such a row is not turned at all (a rotation
    by (1, 0) would make NaN of an infinite partner, inf * 0, and saturate e5m2's infinities), while the rows
    that do move beside it are turned."""
    bits = np.arange(256, dtype=np.uint8).reshape(1, 1, 16, 16)
    kc = device.asarray(np.concatenate([bits, bits], 2).view(dt))
    still, moved = np.arange(16)[None], np.arange(16, 32)[None]
    device.shift_cache(kc, vkrope.RopeFreqs(16, angle="exact"), np.concatenate([still, moved], 1),
                       np.concatenate([still, moved[:, ::-1]], 1), v_cache=device.asarray(np.zeros((1, 1, 32, 16), dt)))
    got = kc.get().view(np.uint8)
    assert np.array_equal(got[0, 0, :16], bits[0, 0])
    assert not np.array_equal(got[0, 0, 16:], bits[0, 0, ::-1])  # (the others turned by their shift)


@pytest.mark.parametrize("interleaved", [False, True], ids=["half", "interleaved"])
@pytest.mark.parametrize("fmt,dt", FORMATS, ids=FMT_IDS)
def test_shift_rotates_every_finite_byte_once(device, fmt, dt, interleaved):
    """Every finite byte in a contiguous cache whose later rows move down
    (values moved with them, bit for bit): each key's byte is the one of
    its exact rotation by the angle difference (float64 cos / sin here; a
    value within 2^-18 of a midpoint may go either way, the float32 cos /
    sin of the shader being another rounding of the same angle)."""
    rng = np.random.default_rng(zlib.crc32(f"shift{fmt.name}{interleaved}".encode()))
    b, hk, s_max, d = 1, 2, 48, 16
    kc0 = fill_finite(fmt, dt, (b, hk, s_max, d), rng)
    vc0 = fill_finite(fmt, dt, (b, hk, s_max, d), rng)
    kc, vc = device.asarray(kc0), device.asarray(vc0)
    old = np.arange(8, 48)[None]
    new = old - 5
    spec = vkrope.RopeFreqs(d, base=10000.0, angle="exact")
    device.shift_cache(kc, spec, old, new, v_cache=vc, interleaved=interleaved)
    inv = 1.0 / 10000.0 ** (np.arange(0, d, 2) / d)
    c, s = np.cos(-5 * inv), np.sin(-5 * inv)
    src = kc0.view(np.uint8)[0][:, 8:48]
    table = decoded(np.arange(256), fmt)
    got = kc.get().view(np.uint8)[0][:, 3:43]
    ok = np.ones(got.shape, bool)
    for h, t, j in np.ndindex(hk, 40, d):
        row = table[src[h, t]]
        if interleaved:
            i, first, pj = j // 2, j % 2 == 0, j ^ 1
        else:
            i, first, pj = j % (d // 2), j < d // 2, (j + d // 2) % d
        partner = row[pj] if first else -row[pj]
        exact = Fraction(row[j]) * Fraction(c[i]) - Fraction(partner) * Fraction(s[i])
        want = quantize(exact, fmt)
        if got[h, t, j] != want and not (want & 0x7F == 0 and got[h, t, j] & 0x7F == 0):
            near = min(abs(abs(exact) - m) for m in midpoints(fmt))
            ok[h, t, j] = near <= abs(exact) * 2.0**-18
    assert ok.all(), f"{int((~ok).sum())} bytes off"
    vb = vc.get().view(np.uint8)
    assert np.array_equal(vb[0][:, 3:43], vc0.view(np.uint8)[0][:, 8:48]), "values not moved bit for bit"
    assert np.array_equal(vb[0][:, :3], vc0.view(np.uint8)[0][:, :3])
    assert np.array_equal(kc.get().view(np.uint8)[0][:, 43:], kc0.view(np.uint8)[0][:, 43:])


@pytest.mark.parametrize("fmt,dt", FORMATS, ids=FMT_IDS)
def test_a_shifted_fp8_key_is_one_rounding_from_the_direct_one(device, fmt, dt):
    """rope_and_cache at positions p then a shift to p - 4 (paged: slots
    stay) against rope_and_cache at p - 4: at most one fp8 step apart (two
    roundings against one), the same byte for most."""
    rng = np.random.default_rng(5)
    b, hk, n, d = 1, 2, 12, 16
    k = (rng.standard_normal((b, hk, n, d)) * 3).astype(np.float32)
    spec = vkrope.RopeFreqs(d, angle="exact")
    pos = np.arange(10, 10 + n)[None]
    slots = np.arange(n)[None]
    caches = [device.asarray(np.zeros((n, 1, hk, d), dt)) for _ in range(4)]
    device.rope_and_cache(k, k, k, caches[0], caches[1], spec, pos, slots=slots, k_scale=0.25)
    device.shift_cache(caches[0], spec, pos, pos - 4, slots=slots)
    device.rope_and_cache(k, k, k, caches[2], caches[3], spec, pos - 4, slots=slots, k_scale=0.25)
    got, want = caches[0].get().astype(np.float64), caches[2].get().astype(np.float64)
    # the first rounding's error turns with the key: up to half a step of the larger of a pair
    pair = np.maximum(np.abs(want), np.abs(want[..., (np.arange(d) + d // 2) % d]))
    e = np.maximum(np.floor(np.log2(np.maximum(pair, 2.0 ** (1 - fmt.bias)))), 1 - fmt.bias)
    assert (np.abs(got - want) <= 1.5 * 2.0 ** (e - fmt.mbits)).all()
    assert np.mean(got == want) > 0.6


def test_fp8_arguments_are_checked_before_any_work(device):
    rng = np.random.default_rng(4)
    q = rng.standard_normal((1, 2, 1, 8)).astype(np.float32)
    k = q[:, :1].copy()
    kc0 = np.zeros((1, 1, 4, 8), vkrope.float8_e4m3fn)
    kc, vc = device.asarray(kc0), device.asarray(kc0)
    half = device.asarray(np.zeros((1, 1, 4, 8), np.float16))
    spec, pos = vkrope.RopeFreqs(8), np.array([[1]])
    odd = device.asarray(np.zeros((1, 1, 4, 6), vkrope.float8_e4m3fn))
    e5 = device.asarray(np.zeros((1, 1, 4, 8), vkrope.float8_e5m2))
    cases = [
        (ValueError, "k_scale must be a finite", dict(k_scale=0.0)),
        (ValueError, "k_scale must be a finite", dict(k_scale=-1.0)),
        (ValueError, "v_scale must be a finite", dict(v_scale=float("nan"))),
        (ValueError, "v_scale must be a finite", dict(v_scale=float("inf"))),
        (ValueError, "k_scale must be a finite", dict(k_scale=2.0**-41)),
        (ValueError, "k_scale must be a finite", dict(k_scale=10**400)),
        (TypeError, "k_scale must be a number", dict(k_scale="1")),
        (TypeError, "k_scale must be a number", dict(k_scale=True)),
        (TypeError, "v_scale must be a number", dict(v_scale=np.ones(2))),
    ]
    for exc, match, kw in cases:
        with pytest.raises(exc, match=match):
            device.rope_and_cache(q, k, k, kc, vc, spec, pos, **kw)
    with pytest.raises(ValueError, match="k_scale scales an fp8 cache"):
        device.rope_and_cache(q, k, k, half, device.asarray(np.zeros((1, 1, 4, 8), np.float16)), spec, pos,
                              k_scale=2.0)
    with pytest.raises(ValueError, match="D .its last axis. a multiple of 4"):
        device.rope_and_cache(q[..., :6], k[..., :6], k[..., :6], odd, odd, vkrope.RopeFreqs(6), pos)
    with pytest.raises(ValueError, match="D .its last axis. a multiple of 4"):
        device.shift_cache(odd, vkrope.RopeFreqs(6), pos, pos)
    with pytest.raises(TypeError, match="one dtype; got float8_e4m3fn and float8_e5m2"):
        device.rope_and_cache(q, k, k, kc, e5, spec, pos)
    assert np.array_equal(kc.get().view(np.uint8), kc0.view(np.uint8))
    device.rope_and_cache(q, k, k, kc, vc, spec, pos, k_scale=np.float32(0.5), v_scale=np.array(2.0))
    assert kc.get().view(np.uint8)[0, 0, 1].any()  # still usable, and written
    # (a scale in the cache's own fp8 dtype, scalar or 0-d, is a number as a float16 or bfloat16 one is)
    kc0 = kc.get()
    e4m3 = np.dtype(ml_dtypes.float8_e4m3fn)
    device.rope_and_cache(q, k, k, kc, vc, spec, pos, k_scale=e4m3.type(0.5), v_scale=np.array(2.0, e4m3))
    assert np.array_equal(kc.get().view(np.uint8), kc0.view(np.uint8))  # (the same scales as above: the same bytes)
    # (the bounds hold for the float32 the kernel divides by: values that round onto them are taken)
    device.rope_and_cache(q, k, k, kc, vc, spec, pos, k_scale=2.0**40 * (1 + 2**-30), v_scale=2.0**-40 * (1 - 2**-30))


def test_a_loaded_fp8_npy_gets_the_right_hint(device, tmp_path):
    """np.load gives '|V1' for a saved fp8 array: the TypeError says to view it as one of the two fp8 types
    (which one, only the file's writer knows), not that it is raw bytes."""
    np.save(tmp_path / "c.npy", np.zeros((1, 1, 4, 8), vkrope.float8_e4m3fn))
    loaded = np.load(tmp_path / "c.npy")
    with pytest.raises(TypeError, match=r"a\.view\(vkrope\.float8_e4m3fn\) or a\.view\(vkrope\.float8_e5m2\)"):
        device.asarray(loaded)
