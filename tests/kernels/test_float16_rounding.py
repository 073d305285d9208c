"""float16 results are the exact value rounded to nearest-even, once (docs/accuracy.md).

Every case below is built so that the float32 result is exact and lies
exactly halfway between two float16 values (or on the overflow boundary):
x is float16 m_x * 2^a, one of (cos, sin) is float32 m_c * 2^k and the
other 0, so each output is one product x * (cos or sin) = m * 2^e with m
odd and just one bit too many for float16. Such a tie has two float16
neighbours, (m - 1) * 2^e and (m + 1) * 2^e; nearest-even takes the one
whose float16 significand (m -+ 1) / 2 is even. When m = 1 (mod 4) that is
the one nearer zero, while "ties away from zero" takes the other: the test
holds many such ties (normal and subnormal, both signs) and asserts that a
ties-away (or a truncating) rounding would give different bits, so such an
implementation fails it. Results must equal the expected bits exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

from oracle import half_round_exact, oracle, poisoned_like

RNG = np.random.default_rng(2024)


def odd_in(lo, hi):
    """A random odd integer in [lo, hi], or None."""
    lo += 1 - lo % 2
    if lo > hi:
        return None
    return lo + 2 * int(RNG.integers(0, (hi - lo) // 2 + 1))


def tie(m, e, sign):
    """(tie value, nearest-even, ties-away, toward-zero) for sign * m * 2^e, m odd."""
    lo, hi = (m - 1) * 2.0**e, (m + 1) * 2.0**e
    even = lo if ((m - 1) // 2) % 2 == 0 else hi
    return sign * m * 2.0**e, sign * even, sign * hi, sign * lo


def normal_pairs(count):
    """Pairs (x_re, x_im, cos, sin, ties): both outputs normal-range float16 ties."""
    out = []
    while len(out) < count:
        m_c = int(RNG.integers(3, 4096)) | 1
        k = int(RNG.integers(-20, 11))
        xs, ties = [], []
        for _ in range(2):
            m_x = odd_in(-(-2049 // m_c), min(2047, 4095 // m_c))
            if m_x is None:
                break
            e = int(RNG.integers(max(-25, k - 14), min(3, k + 5) + 1))
            a = e - k
            sign = float(RNG.choice([-1.0, 1.0]))
            xs.append(sign * m_x * 2.0**a)
            ties.append(tie(m_x * m_c, e, sign))
        if len(xs) < 2:
            continue
        c = m_c * 2.0**k
        out.append((xs[0], xs[1], c, 0.0, ties) if len(out) % 2 else (xs[1], -xs[0], 0.0, c, ties))
    return out


def subnormal_pairs(count):
    """Ties in float16's subnormal range: odd multiples of 2^-25 below 2^-14."""
    out = []
    specials = [1, 3, 5, 7, 2047, 2045, 1023, 1025]
    while len(out) < count:
        if specials:
            m_c, m_xs = specials.pop(), (1, 1)
        else:
            m_c = int(RNG.integers(1, 2048)) | 1
            m_xs = [odd_in(1, 2047 // m_c) for _ in range(2)]
        a = int(RNG.integers(-6, 6))
        c = m_c * 2.0 ** (-25 - a)
        signs = [float(RNG.choice([-1.0, 1.0])) for _ in range(2)]
        xs = [s * mx * 2.0**a for s, mx in zip(signs, m_xs)]
        ties = [tie(mx * m_c, -25, s) for s, mx in zip(signs, m_xs)]
        out.append((xs[0], xs[1], c, 0.0, ties) if len(out) % 2 else (xs[1], -xs[0], 0.0, c, ties))
    return out


INF = float("inf")
# (x_re, x_im, cos, sin, [(value, nearest-even) for re, im]) around float16's largest value 65504.
OVERFLOW = [
    (16.0, -16.0, 4095.0, 0.0, [(65520.0, INF), (-65520.0, -INF)]),  # the tie above 65504 rounds to inf
    (16.0, -16.0, 4095.0 - 2.0**-12, 0.0, [(65520.0 - 2.0**-8, 65504.0), (-(65520.0 - 2.0**-8), -65504.0)]),
    (16.0, 16.0, 4094.0, 0.0, [(65504.0, 65504.0), (65504.0, 65504.0)]),
    (16.0, 16.0, 65535.0 / 16, 0.0, [(65535.0, INF), (65535.0, INF)]),
    (16.0, -16.0, 4094.5, 0.0, [(65512.0, 65504.0), (-65512.0, -65504.0)]),
    (65504.0, -65504.0, 1 + 2.0**-12, 0.0, [(65504.0 * (1 + 2.0**-12), 65504.0), (-65504.0 * (1 + 2.0**-12), -65504.0)]),
    (-65504.0, 65504.0, 0.0, 1 + 2.0**-11, [(-65504.0 * (1 + 2.0**-11), -INF), (-65504.0 * (1 + 2.0**-11), -INF)]),
    (1.0, 1.0 + 2.0**-10, 1 + 2.0**-11, 0.0, [(1 + 2.0**-11, 1.0), None]),  # the README's example: 1 + 2^-11 -> 1
]


def build(c):
    """x (float16) [N, C], freqs (float32) [N, C], and the expected float16 bits of the forward rotation."""
    normal, subnormal = normal_pairs(120), subnormal_pairs(60)
    pairs = normal + subnormal + [(xr, xi, co, si, None) for xr, xi, co, si, _ in OVERFLOW]

    # The construction is exact: x is float16, freqs float32, the products exact float32 ties.
    for xr, xi, co, si, _ in pairs:
        assert float(np.float16(xr)) == xr and float(np.float16(xi)) == xi, (xr, xi)
        assert float(np.float32(co)) == co and float(np.float32(si)) == si, (co, si)
        for prod in (xr * co, xi * si, xr * si, xi * co):
            assert float(np.float32(prod)) == prod, prod
    # Ties-away and truncation really differ from nearest-even on many of them.
    for group in (normal, subnormal):
        ties = [t for *_, ts in group for t in ts]
        for sign in (-1, 1):
            sel = [t for t in ties if np.sign(t[0]) == sign]
            assert sum(t[1] != t[2] for t in sel) >= 10, "too few ties where ties-away differs"
            assert sum(t[1] != t[3] for t in sel) >= 10, "too few ties where truncation differs"
        for value, even, _, _ in ties:  # numpy's float64 -> float16 conversion agrees (it rounds to nearest-even)
            assert np.float16(value).tobytes() == np.float16(even).tobytes(), (value, even)

    per_row = c // 2
    n = -(-len(pairs) // per_row)
    xp = np.empty((n * per_row, 2))
    fp = np.empty((n * per_row, 2))
    xp[:], fp[:] = (0.5, -0.25), (1.0, 0.0)  # padding pairs: exact
    for i, (xr, xi, co, si, _) in enumerate(pairs):
        xp[i], fp[i] = (xr, xi), (co, si)
    x = xp.reshape(n, c).astype(np.float16)
    f = fp.reshape(n, c).astype(np.float32)

    expected = {}
    for i, (xr, xi, co, si, ties) in enumerate(pairs[: len(normal) + len(subnormal)]):
        expected[(i, 0)], expected[(i, 1)] = ties[0][:2], ties[1][:2]
    for j, (*_, vals) in enumerate(OVERFLOW):
        i = len(normal) + len(subnormal) + j
        for k, v in enumerate(vals):
            if v is not None:
                expected[(i, k)] = v
    return x, f, expected


@pytest.mark.parametrize("c", [8, 6], ids=["aligned", "unaligned"])
@pytest.mark.parametrize("storage", ["buffer", "texture3d"])
def test_float16_ties_round_to_nearest_even(storage, c, device):
    x, f, expected = build(c)
    ref = oracle(x, f)
    flat_ref = ref.reshape(-1, 2)
    for (i, k), (value, even) in expected.items():
        assert flat_ref[i, k] == value, ((i, k), flat_ref[i, k], value)  # the oracle's exact result is the tie
    with np.errstate(over="ignore"):
        want = ref.astype(np.float16)  # every element is exact float32 and rounded once
    for (i, k), (value, even) in expected.items():
        assert want.reshape(-1, 2)[i, k].tobytes() == np.float16(even).tobytes()

    for kw in ({}, {"inverse": True}):
        out = poisoned_like(x)
        y = device.apply(x, f, out=out, storage=storage, **kw)
        assert y is out
        with np.errstate(over="ignore"):
            want = oracle(x, f, **kw).astype(np.float16)  # numpy rounds float64 to nearest-even
        bad = np.argwhere(y.view(np.uint16) != want.view(np.uint16))
        assert not bad.size, (
            f"{len(bad)} float16 results not rounded to nearest-even ({kw}); first: x {x[tuple(bad[0])]!r}, "
            f"exact {oracle(x, f, **kw)[tuple(bad[0])]!r}, got {y[tuple(bad[0])]!r}, want {want[tuple(bad[0])]!r}"
        )


def test_a_ties_away_or_truncating_rounding_would_fail():
    """On the same data, the bits a ties-away or a truncating float16
    conversion would give differ from the expected ones in many places, so
    the exact comparison above rejects either."""
    for group in (normal_pairs(120), subnormal_pairs(60)):
        ties = [t for *_, ts in group for t in ts]
        even = np.array([t[1] for t in ties], np.float16).view(np.uint16)
        away = np.array([t[2] for t in ties], np.float16).view(np.uint16)
        trunc = np.array([t[3] for t in ties], np.float16).view(np.uint16)
        assert (away != even).sum() >= 40 and (trunc != even).sum() >= 40


def _midpoint_cases():
    """(re, im, cos, sin) with float16 re, im near 65504 and float32 cos, sin whose exact re*sin + im*cos lies
    within 2^-9 of 65520, float16's overflow midpoint, so that its float32 rounding is 65520 exactly: below it
    the one rounding is 65504, at or above it infinity. The first seven step sin by a float32 ulp around
    16 / 65504 (one of them 1.9e-9 below the midpoint); the rest have both products inexact."""
    s0 = np.float32(16 / 65504)
    steps = [s0]
    for _ in range(3):
        steps = [np.nextafter(steps[0], np.float32(0)), *steps, np.nextafter(steps[-1], np.float32(1))]
    cases = [(65504.0, 65504.0, 1.0, float(s)) for s in steps]
    rng = np.random.default_rng(7)
    while len(cases) < 22:
        re, im = (float(np.float16(v)) for v in rng.uniform(60000, 65504, 2))
        c = float(np.float32(rng.uniform(0.9, 1.0)))
        s = np.float32((65520 - im * c) / re)
        for cand in (s, np.nextafter(s, np.float32(1)), np.nextafter(s, np.float32(0))):
            if np.float32(re * float(cand) + im * c) == 65520:
                cases.append((re, im, c, float(cand)))
    return cases


def _near_midpoint(rng, count, x_dtype, cos_range):
    """As _midpoint_cases, the exact re*sin + im*cos within 2^-7 of 65520 (an ulp or two of float32 there),
    as many on each side: re, im of x_dtype (float32: a float32 k into a float16 cache), cos in cos_range
    (past 1: tables scaled by an attention factor), sin chosen so that the plain float32 formula (each
    product rounded, then the sum: lavapipe fuses no fma) lands on the other side of 65520."""
    from fractions import Fraction

    f32 = np.float32
    cases, sides = [], {True: 0, False: 0}
    while min(sides.values()) < count // 2:
        hi = 65504.0 if x_dtype == np.float16 else 2e5
        re, im = (float(x_dtype(v)) for v in rng.uniform(hi / 3, hi, 2))
        c = float(np.float32(rng.uniform(*cos_range)))
        s = float(np.float32((65520 + rng.uniform(-2**-8, 2**-8) - im * c) / re))
        off = Fraction(re) * Fraction(s) + Fraction(im) * Fraction(c) - 65520
        plain = f32(f32(re * s) + f32(im * c))
        if abs(off) < Fraction(1, 128) and (plain >= 65520) != (off >= 0) and sides[off > 0] < count // 2:
            sides[off > 0] += 1
            cases.append((re, im, c, s))
    return cases


def _rotated_column(device, x, cos, sin, ops):
    """Column 1 (re*sin + im*cos) of x [N, 2] rotated by each of `ops` into float16."""
    n = len(x)
    out, table, pos = {}, np.stack([cos, sin], -1), np.arange(n)[None]
    if "tables" in ops:
        x16 = x.astype(np.float16)
        out["apply"] = device.apply(x16[None], table)[0]
        out["apply texture3d"] = device.apply(x16[None], table, storage="texture3d")[0]
        out["rotary_embedding"] = device.rotary_embedding(x16[None], cos[:, None], sin[:, None], pos,
                                                          interleaved=True, num_heads=1)[0]
    for k_dtype in ops.get("caches", ()):
        caches = [device.asarray(poisoned_like(np.zeros((1, 1, n, 2), np.float16))) for _ in range(2)]
        q = x.astype(k_dtype)[None, None]
        y = device.rope_and_cache(q, q, q, *caches, (cos[:, None], sin[:, None]), pos, interleaved=True)[0, 0]
        if k_dtype == np.float16:
            out["rope_and_cache q"] = y
        out[f"rope_and_cache k cache ({np.dtype(k_dtype).name} k)"] = caches[0].get()[0, 0]
    return {name: np.asarray(y).reshape(n, 2)[:, 1] for name, y in out.items()}


def _one_rounding(x, cos, sin):
    """Column 1's exact value rounded once to float16 (all near 65520: +-inf at or past it, else +-65504)."""
    from fractions import Fraction

    exact = [Fraction(float(re)) * Fraction(float(s)) + Fraction(float(im)) * Fraction(float(c))
             for (re, im), c, s in zip(x, cos, sin)]
    assert all(65488 < abs(e) < 65536 for e in exact)
    return np.array([np.sign(float(e)) * (np.inf if abs(e) >= 65520 else 65504.0) for e in exact], np.float16)


@pytest.mark.parametrize("group", ["float32 on 65520", "scaled tables", "float32 k"])
def test_float16_overflow_midpoint_rounds_once_in_every_kernel(device, group):
    """A float32 result at or next to 65520 (halfway from float16's largest value to infinity) was rounded
    again to the wrong side of it: infinity for a finite value below it, or 65504 for one at or past it (an
    adversary's: 65504 and 65504 by (cos, sin) = (1, 2^-12 - ...) gave inf; then tables scaled past 1 and
    float32 k into a float16 cache, whose float32 result lands an ulp across). Every kernel writing float16
    (the interleaved one, buffer and texture3d; the table one; the decode step's q and its float16 cache)
    gives the exact value's one rounding, both signs; and a product wholly below float32's range decides a
    tie of the rest (65520 - 2^-172 is 65504)."""
    rng = np.random.default_rng(11)
    if group == "float32 on 65520":
        cases, ops = _midpoint_cases(), {"tables": True, "caches": (np.float16, np.float32)}
    elif group == "scaled tables":
        cases = _near_midpoint(rng, 16, np.float16, (1.05, 1.25)) + [(64512.0, 2.0**-24, -2.0**-148, 65 / 64)]
        ops = {"tables": True, "caches": (np.float16,)}
    else:  # (and the tie of a product wholly below float32's range: 65520 - 2^-172 is 65504)
        cases = _near_midpoint(rng, 16, np.float32, (-1.0, 1.0)) + [(64512.0, 2.0**-24, -2.0**-148, 65 / 64)]
        ops = {"caches": (np.float32,)}
    signs = np.array([1.0, -1.0] * (len(cases) // 2 + 1))[: len(cases), None]
    x = np.array([c[:2] for c in cases]) * signs
    cos, sin = (np.array([c[k] for c in cases], np.float32) for k in (2, 3))
    want = _one_rounding(x, cos, sin)
    assert 0 < np.isinf(want).sum() < len(want)  # (both sides of the midpoint)
    for name, y in _rotated_column(device, x, cos, sin, ops).items():
        bad = np.flatnonzero(y.view(np.uint16) != want.view(np.uint16))
        assert not bad.size, f"{name}: {len(bad)} of {len(y)} off; first {bad[0]}: got {y[bad[0]]!r}, " \
                             f"want {want[bad[0]]!r}"


def _on_midpoints(rng, n, x_dtype=np.float16, dest="float16"):
    """(x [n, 2], cos, sin) whose column 1, re*sin (im 0), has a float32 rounding exactly on a midpoint of
    `dest` (float16: half of them below 2^-14, its subnormal grid; bfloat16: 8 significant bits) while the exact
    product is not (re of x_dtype's full significand, sin a float32 near M / re). Rounding that float32 value
    again takes the tie's even side, the wrong one half the time."""
    import ml_dtypes
    from fractions import Fraction

    out = []
    while len(out) < n:
        if dest == "float16":
            sub = len(out) < n // 2
            m = float(rng.integers(0, 1024) * 2 + 1) * 2.0**-25 if sub else \
                float(rng.integers(1024, 2048) * 2 + 1) * 2.0 ** int(rng.integers(-13, 3)) / 4096  # (12 bits)
        else:
            m = float(rng.integers(128, 256) * 2 + 1) * 2.0 ** int(rng.integers(-30, 10)) / 512
        if np.dtype(x_dtype) == np.dtype(ml_dtypes.bfloat16):
            re = float(ml_dtypes.bfloat16(1 + int(rng.integers(0, 64)) * 2**-6 + 2**-7))
        else:
            re = float(np.float16(1 + int(rng.integers(0, 512)) * 2**-9 + 2**-10))
        s = np.float32(m / re)
        exact = Fraction(re) * Fraction(float(s))
        if float(np.float32(float(exact))) == m and exact != m:
            out.append((re, 0.0, 1.0, float(s)))
    x = np.array([c[:2] for c in out]) * np.where(rng.integers(0, 2, n) == 0, 1.0, -1.0)[:, None]
    return x, np.array([c[2] for c in out], np.float32), np.array([c[3] for c in out], np.float32)


def _cancelling_and_wide(rng, n):
    """(x [n, 2], cos, sin): half of them float16 re, im whose column 1, re*sin + im*cos, nearly cancels (im
    chosen as float16's nearest to -re*sin/cos: the result a few float16 ulps of the products, or fewer); the
    rest float16 bit patterns of every exponent (subnormals too) by random float32 (cos, sin)."""
    h = n // 2
    theta = rng.uniform(0.05, 1.5, n)
    cos, sin = np.cos(theta).astype(np.float32), np.sin(theta).astype(np.float32)
    re = (rng.uniform(-1, 1, h) * 2.0 ** rng.integers(-20, 15, h)).astype(np.float16)
    im = (-re.astype(np.float64) * sin[:h] / cos[:h]).astype(np.float16)
    bits = rng.integers(0, 0x7C00, (n - h, 2)).astype(np.uint16) | (rng.integers(0, 2, (n - h, 2)) << 15).astype(
        np.uint16)
    x = np.concatenate([np.stack([re, im], -1), bits.view(np.float16)])
    return x.astype(np.float64), cos, sin


@pytest.mark.parametrize("tables", [np.float32, np.float16])
def test_float16_results_are_the_exact_values_one_rounding(device, tables):
    """Every kernel writing float16 (the interleaved one, buffer and texture3d; the table one; the decode
    step's q and its float16 cache) gives the exact value's one rounding with float32 or float16 tables: an
    adversary's float16 q by float32 tables that nearly cancel was 1,589 float16 ulps off (the float32
    products rounded, then the sum: lavapipe fuses no fma); a float32 sum crafted onto a float16 midpoint was
    rounded twice. Signed zeros are the exact value's sign where it is not zero. (float16 tables' products
    are exact in float32 as they are: that case guards the path, the float32 one tells old from new.)"""
    from fractions import Fraction

    rng = np.random.default_rng(31)
    x, cos, sin = _cancelling_and_wide(rng, 600)
    if tables == np.float32:  # (float16 tables' products are exact in float32: no such ties)
        on = _on_midpoints(rng, 200)
        # (products of 2^-173 and -2^-172, below float32's range: the zero takes the exact value's sign, -0,
        # where the formula's +0 + -0 is +0)
        tiny = (np.array([[2.0**-24, -2.0**-23]] * 4), np.full(4, 2.0**-149, np.float32),
                np.full(4, 2.0**-149, np.float32))
        x, cos, sin = (np.concatenate([a, b, t]) for a, b, t in zip((x, cos, sin), on, tiny))
    cos, sin = cos.astype(tables), sin.astype(tables)
    exact = [Fraction(float(re)) * Fraction(float(s)) + Fraction(float(im)) * Fraction(float(c))
             for (re, im), c, s in zip(x, cos, sin)]
    want = np.array([half_round_exact(e) for e in exact], np.float16)
    zero = (want == 0) & np.array([e != 0 for e in exact])
    want[zero] = np.copysign(np.float16(0), np.array([float(e) for e in exact])[zero])
    assert sum(abs(e) < 2.0**-10 * abs(Fraction(float(re)) * Fraction(float(s))) for e, ((re, im), s) in
               zip(exact, zip(x, sin))) >= 200  # (the cancelling half: results far below their products)
    ops = {"tables": True, "caches": (np.float16,) if tables == np.float32 else ()}
    for name, y in _rotated_column(device, x, cos, sin, ops).items():
        bad = np.flatnonzero(y.view(np.uint16) != want.view(np.uint16))
        assert not bad.size, f"{name}: {len(bad)} of {len(y)} off; first {bad[0]}: got {y[bad[0]]!r}, " \
                             f"want {want[bad[0]]!r}, exact {float(exact[bad[0]])!r}"


@pytest.mark.parametrize("k_dtype,cache_dtype", [("float16", "bfloat16"), ("bfloat16", "float16")])
def test_a_16_bit_cache_of_the_other_16_bit_k_is_rounded_once(device, k_dtype, cache_dtype):
    """A bfloat16 cache of float16 k, and a float16 cache of bfloat16 k, hold the exact rotated value rounded once
    to the cache's dtype (the float32 sum rounded again was a unit off on 13 in a million of a Llama-shaped
    decode: an adversary's); zeros of products below float32's range take the exact value's sign."""
    import ml_dtypes
    from fractions import Fraction

    from oracle import bf16_round_exact

    dt = {"float16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16)}
    rng = np.random.default_rng(17)
    x, cos, sin = _cancelling_and_wide(rng, 400)
    if k_dtype == "bfloat16":  # (bfloat16 bit patterns of float16's range and past it)
        bits = rng.integers(0x2000, 0x4800, (len(x), 2)).astype(np.uint16) | (
            rng.integers(0, 2, (len(x), 2)) << 15).astype(np.uint16)
        x = bits.view(dt["bfloat16"]).astype(np.float64)
    x[:4] = [[2.0**-24, 2.0**-23]] * 4  # (products of 2^-173: a zero signed by the exact value)
    cos[:4], sin[:4] = np.float32(2.0**-149), np.float32(2.0**-149)
    on = _on_midpoints(rng, 100, dt[k_dtype], cache_dtype)  # (float32 sums on the cache's midpoints)
    x, cos, sin = (np.concatenate([a, b]) for a, b in zip((x, cos, sin), on))
    n = len(x)
    q = x.astype(dt[k_dtype])[None, None]
    kc, vc = (device.asarray(np.zeros((1, 1, n, 2), dt[cache_dtype])) for _ in range(2))
    device.rope_and_cache(q, q, q, kc, vc, (cos[:, None], sin[:, None]), np.arange(n)[None], interleaved=True)
    got = kc.get()[0, 0].astype(np.float64)
    rnd = half_round_exact if cache_dtype == "float16" else bf16_round_exact
    off = []
    for i, ((re, im), c, s) in enumerate(zip(q[0, 0].astype(np.float64), cos, sin)):
        for j, exact in enumerate((Fraction(float(re)) * Fraction(float(c)) - Fraction(float(im)) * Fraction(float(s)),
                                   Fraction(float(re)) * Fraction(float(s)) + Fraction(float(im)) * Fraction(float(c)))):
            want = rnd(exact) if exact else 0.0
            if exact and want == 0:
                want = np.copysign(0.0, float(exact))
            if want != got[i, j] or np.signbit(want) != np.signbit(got[i, j]):
                off.append((i, j, float(exact), got[i, j]))
    assert not off, f"{len(off)} of {2 * n} off; first {off[0]}"
