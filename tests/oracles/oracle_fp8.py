"""Exact oracle of the OCP 8-bit floats (float8_e4m3fn, float8_e5m2),
written from the formats' definitions with Python's Fractions, sharing no
code with vkrope (nor with ml_dtypes, which tests compare it with):

    decode(byte, fmt)             the value: a Fraction, math.inf / -inf, or None (NaN)
    quantize(value, fmt)          the byte nearest a Fraction, ties to even, saturated
    rotated_byte(a, b, c, d, s)   quantize((a*b - c*d) / s) of exact floats

Saturation is CUDA's __NV_SATFINITE as vLLM's cache writes use it: a value
past the largest finite one (infinities too) becomes that one, signed."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction


@dataclass(frozen=True)
class Format:
    """One fp8 format: 1 sign bit, `ebits` exponent bits, `mbits` mantissa bits."""

    name: str
    ebits: int
    mbits: int
    bias: int
    has_inf: bool  # e5m2: exponent all ones is inf / NaN (IEEE); e4m3fn: only S.1111.111 is NaN
    nan: int  # the NaN byte the kernels write (sign bit aside)

    @property
    def max(self) -> Fraction:
        """The largest finite value."""
        if self.has_inf:
            top = (1 << self.ebits) - 2
            return Fraction(2) ** (top - self.bias) * (2 - Fraction(1, 1 << self.mbits))
        top = (1 << self.ebits) - 1  # the top exponent holds values, all but its last mantissa
        return Fraction(2) ** (top - self.bias) * (2 - Fraction(2, 1 << self.mbits))

    @property
    def spacing_min(self) -> Fraction:
        """The subnormals' spacing (the smallest positive value)."""
        return Fraction(2) ** (1 - self.bias - self.mbits)


E4M3 = Format("float8_e4m3fn", 4, 3, 7, False, 0x7F)
E5M2 = Format("float8_e5m2", 5, 2, 15, True, 0x7E)


def decode(byte: int, fmt: Format):
    """The value of `byte`: a Fraction (0 for both zeros), +-math.inf, or None for NaN."""
    sign = -1 if byte & 0x80 else 1
    e = (byte & 0x7F) >> fmt.mbits
    m = byte & ((1 << fmt.mbits) - 1)
    top = (1 << fmt.ebits) - 1
    if fmt.has_inf and e == top:
        return sign * math.inf if m == 0 else None
    if not fmt.has_inf and e == top and m == (1 << fmt.mbits) - 1:
        return None
    if e == 0:
        return sign * m * fmt.spacing_min
    return sign * Fraction(2) ** (e - fmt.bias) * (1 + Fraction(m, 1 << fmt.mbits))


def finite_bytes(fmt: Format) -> list[int]:
    """Every byte whose value is finite."""
    return [b for b in range(256) if decode(b, fmt) is not None and not isinstance(decode(b, fmt), float)]


def _exponent(x: Fraction) -> int:
    """floor(log2 x) of x > 0."""
    e = x.numerator.bit_length() - x.denominator.bit_length()
    return e if Fraction(2) ** e <= x else e - 1


def quantize(value, fmt: Format, negative_zero: bool = False) -> int:
    """The byte of the format's value nearest `value` (a Fraction, or a float:
    inf saturates, NaN gives the NaN byte), ties to the even mantissa,
    saturated to +-max; an exact zero is +0 unless `negative_zero`."""
    if isinstance(value, float) and math.isnan(value):
        return fmt.nan
    if isinstance(value, float) and math.isinf(value):
        return _encode(fmt.max, fmt) | (0x80 if value < 0 else 0)
    x = Fraction(value)
    sign = 0x80 if x < 0 or (x == 0 and negative_zero) else 0
    x = abs(x)
    if x == 0:
        return sign
    e = max(_exponent(x), 1 - fmt.bias)
    u = Fraction(2) ** (e - fmt.mbits)
    n, rest = divmod(x, u)
    if rest > u / 2 or (rest == u / 2 and n % 2 == 1):
        n += 1
    return _encode(min(n * u, fmt.max), fmt) | sign


def _encode(x: Fraction, fmt: Format) -> int:
    """The byte of x >= 0, a value of the format."""
    if x < Fraction(2) ** (1 - fmt.bias):
        m = x / fmt.spacing_min
        assert m.denominator == 1
        return int(m)
    e = _exponent(x)
    m = (x / Fraction(2) ** e - 1) * (1 << fmt.mbits)
    assert m.denominator == 1, x
    return ((e + fmt.bias) << fmt.mbits) | int(m)


def rotated_byte(a: float, b: float, c: float, d: float, s: float, fmt: Format) -> int:
    """quantize((a*b - c*d) / s) of exact (finite) floats; an exact zero signed as float arithmetic signs a*b - c*d."""
    exact = Fraction(a) * Fraction(b) - Fraction(c) * Fraction(d)
    return quantize(exact / Fraction(s), fmt, negative_zero=math.copysign(1.0, a * b - c * d) < 0)


def midpoints(fmt: Format) -> list[Fraction]:
    """Every midpoint between two consecutive non-negative values (and the one past max, which saturates)."""
    vals = sorted({decode(b, fmt) for b in finite_bytes(fmt) if decode(b, fmt) >= 0})
    mids = [(x + y) / 2 for x, y in zip(vals, vals[1:])]
    return mids + [vals[-1] + (vals[-1] - vals[-2]) / 2]
