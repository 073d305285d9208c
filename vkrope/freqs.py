"""Frequency specs: RoPE frequencies computed in the shader instead of read
from a cos / sin table (`vkrope.RopeFreqs`).

A table-driven RoPE moves the table as well as x and the result; computing
cos and sin from each token's position removes those bytes. The angle is
the one the frameworks compute in float32 (angle="float32", the default):
inverse frequencies `1 / base ** (arange(0, dim, 2) / dim)` evaluated in
float32, divided by `freq_factors` (Llama 3.1), the position divided by
`scale` in float32, their product rounded once to float32; then cos and sin
of that float32 angle, each within 2 ulp of float64 (glsl/trig.glsl). A
table built by torch or Hugging Face holds the same numbers, to its own
rounding. angle="exact" forms position * inverse frequency from the integer
position and the float64 inverse frequency, reduced exactly: within 2 ulp
of float64 truth at every position up to 2^24 (long contexts, where the
float32 angle itself drifts by up to ~0.01 rad).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

ANGLES = ("float32", "exact")
MAX_POSITION = 1 << 24  # float32 positions are exact below this
SHORT_ANGLE_LIMIT = 8192.0  # glsl/trig.glsl: cos_sin_short's range


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


def _check_int(name: str, value: Any, minimum: int) -> None:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int; got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}; got {value}")


def _check_positive(name: str, value: Any) -> None:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number; got {type(value).__name__} {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number; got {value}")


def _check_angle(angle: Any) -> None:
    if angle not in ANGLES:
        raise ValueError(f"angle must be one of {ANGLES}; got {angle!r}")


def _columns(inv32: np.ndarray, inv64: np.ndarray) -> np.ndarray:
    """The interleaved kernel's per-pair columns: uint32 [n, 4] = (float32
    inverse frequency bits, quarter turns of the float64 one)."""
    out = np.zeros((len(inv32), 4), np.uint32)
    out[:, 0] = np.asarray(inv32, np.float32).view(np.uint32)
    out[:, 1:] = quarter_turns(inv64)[:, :3]
    return out


@dataclass(frozen=True)
class RopeFreqs:
    """1-D RoPE frequencies (Llama, Hugging Face) for `rotary_embedding` and
    `apply_rotary_emb` in place of their cos / sin caches: the position of a
    token is its cache row (position_ids, or s for ExecuTorch's op).

    dim: the rotated width (even); base: the RoPE base (> 0); scale: positions
    are divided by it (linear scaling, > 0); freq_factors: dim/2 positive
    divisors of the inverse frequencies (Llama 3.1 / llama.cpp); angle:
    "float32" (what the frameworks compute) or "exact" (see the module).
    """

    dim: int
    base: float = 10000.0
    scale: float = 1.0
    freq_factors: Any = None  # stored as a tuple of floats: specs compare and hash by value
    angle: str = "float32"

    def __post_init__(self) -> None:
        _check_int("dim", self.dim, 2)
        if self.dim % 2:
            raise ValueError(f"dim must be even and >= 2; got {self.dim}")
        _check_positive("base", self.base)
        _check_positive("scale", self.scale)
        _check_angle(self.angle)
        if self.freq_factors is not None:
            ff = np.asarray(self.freq_factors, dtype=np.float64)
            if ff.shape != (self.dim // 2,):
                raise ValueError(f"freq_factors must hold dim/2 = {self.dim // 2} values; got shape {ff.shape}")
            if not (np.isfinite(ff).all() and (ff > 0).all()):
                raise ValueError("freq_factors must be positive finite numbers")
            object.__setattr__(self, "freq_factors", tuple(float(v) for v in ff))

    def inv_freq_float32(self) -> np.ndarray:
        """The inverse frequencies [dim/2] as the frameworks compute them in float32."""
        exps = np.arange(0, self.dim, 2, dtype=np.float32) / np.float32(self.dim)
        inv = np.float32(1.0) / np.power(np.float32(self.base), exps)
        if self.freq_factors is not None:
            inv = inv / np.asarray(self.freq_factors, dtype=np.float32)
        return inv.astype(np.float32)

    def inv_freq_float64(self) -> np.ndarray:
        """The inverse frequencies [dim/2] in float64, positions' scale folded in."""
        inv = 1.0 / float(self.base) ** (np.arange(0, self.dim, 2, dtype=np.float64) / self.dim)
        if self.freq_factors is not None:
            inv = inv / np.asarray(self.freq_factors, dtype=np.float64)
        return inv / float(self.scale)

    def angles(self, positions: Any) -> np.ndarray:
        """The angle [len(positions), dim/2] each mode uses: float32 for
        angle="float32" (as float64 numbers), the float64 product for "exact"."""
        p = np.asarray(positions, dtype=np.int64).reshape(-1)
        if self.angle == "exact":
            return np.outer(p.astype(np.float64), self.inv_freq_float64())
        t = p.astype(np.float32) / np.float32(self.scale)
        return (t[:, None] * self.inv_freq_float32()[None, :]).astype(np.float32).astype(np.float64)

    def table(self, positions: Any) -> tuple[np.ndarray, np.ndarray]:
        """(cos, sin) float32 [len(positions), dim/2]: the cache this spec
        stands for (float64 cos / sin of `angles`, rounded once)."""
        a = self.angles(positions)
        return np.cos(a).astype(np.float32), np.sin(a).astype(np.float32)

    @cached_property
    def _quarter_turns(self) -> np.ndarray:
        # Big-integer work: once per spec, not per call.
        return quarter_turns(self.inv_freq_float64())

    def kernel_tables(self) -> tuple[np.ndarray, np.ndarray]:
        """What the table kernel reads: float32 inverse frequencies and, for
        the exact mode, their quarter turns (uint32 [dim/2, 4])."""
        if self.angle == "exact":
            return np.zeros(self.dim // 2, np.float32), self._quarter_turns
        return self.inv_freq_float32(), np.zeros((self.dim // 2, 4), np.uint32)

    @cached_property
    def columns(self) -> np.ndarray:
        """What the interleaved kernel reads per pair column (see `_columns`)."""
        return _columns(self.inv_freq_float32(), self.inv_freq_float64())

    @property
    def short_angles(self) -> bool:
        """False: positions reach 2^24, so every call takes the full range
        reduction (one position gives the same bits in every call)."""
        return False


@dataclass(frozen=True)
class AxialFreqs:
    """SAM2's 2-D axial frequencies (`compute_axial_cis`) for `vkrope.apply`,
    without the table: token t of a grid row-major `end_x` wide has x = t %
    end_x and y = t // end_x; its first dim/4 pairs turn by x * f, the next
    dim/4 by y * f, f = 1 / theta ** (arange(0, dim, 4)[: dim // 4] / dim)
    in float32. The table it stands for has end_x * end_y rows (`table()`);
    `repeat`, `exclude_last` and `positions` index them like a table's rows.
    angle: "float32" (SAM2's float32 product) or "exact" (see the module).
    """

    dim: int
    end_x: int
    end_y: int
    theta: float = 10000.0
    angle: str = "float32"

    def __post_init__(self) -> None:
        for name in ("dim", "end_x", "end_y"):
            _check_int(name, getattr(self, name), 1)
        if self.dim % 4:
            raise ValueError(f"dim must be divisible by 4 (two axes of complex pairs); got {self.dim}")
        if self.end_x * self.end_y > MAX_POSITION:
            raise ValueError(f"end_x * end_y must be <= 2^24 (float32 coordinates); got {self.end_x * self.end_y}")
        _check_positive("theta", self.theta)
        _check_angle(self.angle)

    @property
    def rows(self) -> int:
        """Rows of the table it stands for: end_x * end_y."""
        return self.end_x * self.end_y

    def inv_freq_float32(self) -> np.ndarray:
        """f [dim/4] as SAM2 computes it in float32."""
        e = np.arange(0, self.dim, 4, dtype=np.float32)[: self.dim // 4] / np.float32(self.dim)
        return (np.float32(1.0) / np.power(np.float32(self.theta), e)).astype(np.float32)

    def inv_freq_float64(self) -> np.ndarray:
        """f [dim/4] in float64 (the exact angle's frequency)."""
        return 1.0 / float(self.theta) ** (np.arange(0, self.dim, 4, dtype=np.float64)[: self.dim // 4] / self.dim)

    def angles(self, rows: Any) -> np.ndarray:
        """[len(rows), dim/2] angles of the given table rows (float32 angles as
        float64 numbers, or float64 products for "exact")."""
        r = np.asarray(rows, dtype=np.int64).reshape(-1)
        coords = np.concatenate([np.repeat((r % self.end_x)[:, None], self.dim // 4, 1),
                                 np.repeat((r // self.end_x)[:, None], self.dim // 4, 1)], 1)
        if self.angle == "exact":
            return coords * np.tile(self.inv_freq_float64(), 2)[None, :]
        f = np.tile(self.inv_freq_float32(), 2)
        return (coords.astype(np.float32) * f[None, :]).astype(np.float32).astype(np.float64)

    def table(self) -> np.ndarray:
        """The (cos, sin)-interleaved float32 table [end_x * end_y, dim] it stands for."""
        a = self.angles(np.arange(self.rows))
        return np.stack([np.cos(a), np.sin(a)], -1).reshape(self.rows, self.dim).astype(np.float32)

    @cached_property
    def short_angles(self) -> bool:
        """Whether every float32 angle of the grid lies within the short
        reduction's range (|angle| <= 8192, glsl/trig.glsl cos_sin_short),
        which the kernel then takes: the grid bounds the coordinates, so
        the choice is the spec's, the same in every call."""
        if self.angle != "float32":
            return False
        top = np.float32(max(self.end_x, self.end_y) - 1) * self.inv_freq_float32().max()
        return bool(top <= SHORT_ANGLE_LIMIT)

    @cached_property
    def columns(self) -> np.ndarray:
        """What the interleaved kernel reads per pair column (see `_columns`):
        the x half and the y half share the frequencies."""
        return _columns(np.tile(self.inv_freq_float32(), 2), np.tile(self.inv_freq_float64(), 2))
