"""Exact arithmetic the frequency specs take their numbers from: the exact
angle mode's frequencies in quarter turns (`quarter_turns`, from 2/pi to
512 bits) and the angles they give (`exact_angles`, as the shader reduces
them), and libm's powers per element, float64 (`pow64`) and correctly
rounded float32 (`pow32`), so that every host gets the same bits."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def _two_over_pi_bits(bits: int) -> int:
    """floor(2/pi * 2^bits), from Machin's formula with 64 guard bits."""
    k = bits + 64
    one = 1 << k

    def atan_inv(x: int) -> int:  # atan(1/x) * one
        total, term, n, sign = 0, one // x, 1, 1
        while term:
            total += sign * (term // n)
            term //= x * x
            n += 2
            sign = -sign
        return total

    pi = 16 * atan_inv(5) - 4 * atan_inv(239)
    return ((2 << k) * one // pi) >> (k - bits)


_TWO_OVER_PI_512 = _two_over_pi_bits(512)


def quarter_turns(freqs: np.ndarray) -> np.ndarray:
    """uint32 [n, 4]: round(f * 2/pi * 2^94) mod 2^96 of each float64 f, as
    three words, most significant first (the fourth is padding): the exact
    angle mode's frequency (glsl/trig.glsl cos_sin_exact)."""
    out = np.zeros((len(freqs), 4), np.uint32)
    for i, f in enumerate(np.asarray(freqs, np.float64)):
        num, den = float(f).as_integer_ratio()
        shift = 512 - 94 + den.bit_length() - 1
        q = (num * _TWO_OVER_PI_512 + (1 << (shift - 1))) >> shift if shift > 0 else (num * _TWO_OVER_PI_512) << -shift
        q %= 1 << 96
        out[i, :3] = [(q >> 64) & 0xFFFFFFFF, (q >> 32) & 0xFFFFFFFF, q & 0xFFFFFFFF]
    return out


def exact_angles(positions: np.ndarray, quarter: np.ndarray) -> np.ndarray:
    """float64 [len(positions), n]: each integer position (>= 0, < 2^24)
    times each frequency given as `quarter_turns` words [n, 4], reduced to
    (-pi, pi] exactly as the exact angle mode reduces it (r = p * q mod
    2^96 in 2^-94 quarter turns, in 32-bit limbs), then turned into
    radians: within ~1e-15 rad of the exact product's angle however large
    the product (the float64 product itself is ~|angle| * 1e-16 off)."""
    p = np.asarray(positions, np.uint64).reshape(-1, 1)
    q = np.asarray(quarter, np.uint64)
    mask = np.uint64(0xFFFFFFFF)
    lo = p * q[None, :, 2]
    t1 = p * q[None, :, 1] + (lo >> np.uint64(32))
    r2 = (p * q[None, :, 0] + (t1 >> np.uint64(32))) & mask
    turns = (r2.astype(np.float64) / 2.0**30 + (t1 & mask).astype(np.float64) / 2.0**62
             + (lo & mask).astype(np.float64) / 2.0**94)  # quarter turns in [0, 4)
    turns = np.where(turns > 2.0, turns - 4.0, turns)
    return turns * (math.pi / 2)


def pow64(base: float, exps: Any) -> np.ndarray:
    """base ** exps in float64, libm's power per element (math.pow): numpy's
    float64 power picks a SIMD loop by CPU, so its last bit is the host's."""
    b = float(base)
    return np.array([math.pow(b, float(e)) for e in np.asarray(exps, np.float64).reshape(-1)], np.float64)


def pow32(base: float, exps: np.ndarray) -> np.ndarray:
    """float32(base) ** exps (float32 [n]) correctly rounded to float32:
    libm's float64 power of the float32 operands (math.pow, not numpy's,
    which picks a SIMD loop by CPU) rounded to float32, except where that
    power lies within a relative 2^-40 of a float32 rounding midpoint,
    where rounding twice may take the wrong side (base 699987000, 80
    channels, column 7: an adversary's): there the side is taken from the
    power in 60-digit decimal, an exact tie to even (`_side_of_midpoint`).
    The frameworks take this power from their own library (torch 2.13 differed from it by 1 ulp on 3 of
    the 272 powers in tests/torch_golden.py; numpy's float32 power, which
    differs by CPU, on 46 of them on an AVX-512 host, numpy 2.4): the
    correctly rounded one gives every host the same bits."""
    b, e = float(np.float32(base)), np.asarray(exps, np.float32).reshape(-1)
    wide = pow64(b, e)
    with np.errstate(invalid="ignore", over="ignore"):
        out = wide.astype(np.float32)
        toward = np.nextafter(out, np.where(wide > out, np.float32(np.inf), np.float32(0)))
        mid = (out.astype(np.float64) + toward) / 2  # (exact in float64)
        near = np.isfinite(mid) & (mid > 0) & (toward != out) & (np.abs(wide - mid) <= mid * 2.0**-40)
    for i in np.flatnonzero(near):
        out[i] = _side_of_midpoint(b, float(e[i]), float(mid[i]), out[i], toward[i])
    return out


def _side_of_midpoint(base: float, e: float, mid: float, a: np.float32, b: np.float32) -> np.float32:
    """Of two adjacent float32s `a`, `b` around `mid`, the nearest to base ** e (exact operands) by 60-digit
    decimal, in a context of its own (a caller's traps or precision do not reach it); where the decimal
    power lies within 10^-50 of the midpoint, whether it is one is settled exactly (base^p == mid^q for e =
    p/q: 4097 ** 2 is one, a tie, to the even float32; none is for the exponents of RoPE, below 1)."""
    import decimal  # noqa: PLC0415  (rarely: a power near a midpoint)
    from fractions import Fraction  # noqa: PLC0415

    def own(prec: int) -> decimal.Context:  # (every field given: Context() copies DefaultContext's, traps too)
        return decimal.Context(prec=prec, rounding=decimal.ROUND_HALF_EVEN, Emin=decimal.MIN_EMIN,
                               Emax=decimal.MAX_EMAX, capitals=1, clamp=0, flags=[], traps=[])

    ctx, exact = own(60), own(800).create_decimal_from_float  # (a float's decimal digits: at most 767)
    d = ctx.subtract(ctx.exp(ctx.multiply(ctx.ln(exact(base)), exact(e))), exact(mid))
    if ctx.copy_abs(d) <= ctx.multiply(exact(mid), decimal.Decimal("1e-50")):
        f = Fraction(e)
        small = f.denominator <= 64 and abs(f.numerator) <= 4096  # (exact powers of a size worth computing)
        if small and Fraction(base) ** f.numerator == Fraction(mid) ** f.denominator:
            return a if int(a.view(np.int32)) % 2 == 0 else b
    return max(a, b) if d > 0 else min(a, b)
