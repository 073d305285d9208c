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
from dataclasses import dataclass, field
from typing import Any

import numpy as np

ANGLES = ("float32", "exact")
MAX_POSITION = 1 << 24  # float32 positions are exact below this


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
    freq_factors: Any = field(default=None, compare=False)
    angle: str = "float32"

    def __post_init__(self) -> None:
        if isinstance(self.dim, (bool, np.bool_)) or not isinstance(self.dim, (int, np.integer)):
            raise TypeError(f"dim must be an int; got {type(self.dim).__name__} {self.dim!r}")
        if self.dim < 2 or self.dim % 2:
            raise ValueError(f"dim must be even and >= 2; got {self.dim}")
        for name in ("base", "scale"):
            v = getattr(self, name)
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
                raise TypeError(f"{name} must be a number; got {type(v).__name__} {v!r}")
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be a positive finite number; got {v}")
        if self.angle not in ANGLES:
            raise ValueError(f"angle must be one of {ANGLES}; got {self.angle!r}")
        if self.freq_factors is not None:
            ff = np.asarray(self.freq_factors, dtype=np.float64)
            if ff.shape != (self.dim // 2,):
                raise ValueError(f"freq_factors must hold dim/2 = {self.dim // 2} values; got shape {ff.shape}")
            if not (np.isfinite(ff).all() and (ff > 0).all()):
                raise ValueError("freq_factors must be positive finite numbers")

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

    def kernel_tables(self) -> tuple[np.ndarray, np.ndarray]:
        """What the shader reads: float32 inverse frequencies and, for the
        exact mode, their quarter turns (uint32 [dim/2, 4])."""
        if self.angle == "exact":
            return np.zeros(self.dim // 2, np.float32), quarter_turns(self.inv_freq_float64())
        return self.inv_freq_float32(), np.zeros((self.dim // 2, 4), np.uint32)


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
            v = getattr(self, name)
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"{name} must be an int; got {type(v).__name__} {v!r}")
            if v < 1:
                raise ValueError(f"{name} must be >= 1; got {v}")
        if self.dim % 4:
            raise ValueError(f"dim must be divisible by 4 (two axes of complex pairs); got {self.dim}")
        if self.end_x * self.end_y > MAX_POSITION:
            raise ValueError(f"end_x * end_y must be < 2^24 (float32 coordinates); got {self.end_x * self.end_y}")
        t = self.theta
        if isinstance(t, (bool, np.bool_)) or not isinstance(t, (int, float, np.integer, np.floating)):
            raise TypeError(f"theta must be a number; got {type(t).__name__} {t!r}")
        if not (math.isfinite(t) and t > 0):
            raise ValueError(f"theta must be a positive finite number; got {t}")
        if self.angle not in ANGLES:
            raise ValueError(f"angle must be one of {ANGLES}; got {self.angle!r}")

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

    def columns(self) -> np.ndarray:
        """What the shader reads per pair column: uint32 [dim/2, 4] = (float32
        f bits, quarter turns of the float64 f)."""
        out = np.zeros((self.dim // 2, 4), np.uint32)
        out[:, 0] = np.tile(self.inv_freq_float32(), 2).view(np.uint32)
        out[:, 1:] = np.tile(quarter_turns(self.inv_freq_float64())[:, :3], (2, 1))
        return out


def rope_columns(spec: RopeFreqs) -> np.ndarray:
    """The interleaved kernel's per-pair columns of a RopeFreqs spec:
    uint32 [dim/2, 4] = (float32 inverse frequency bits, quarter turns)."""
    out = np.zeros((spec.dim // 2, 4), np.uint32)
    out[:, 0] = spec.inv_freq_float32().view(np.uint32)
    out[:, 1:] = quarter_turns(spec.inv_freq_float64())[:, :3]
    return out
