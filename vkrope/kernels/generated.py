"""Frequencies a kernel computes in the shader, as every kernel reads them
(glsl/freqs.glsl): the one form any frequency spec is lowered to
(vkrope/ops/lowering.py), so a kernel names no spec class.

A `Generated` holds, per cos / sin column, its float32 inverse frequency,
its quarter turns (the exact angle's) and its axis; how the angle is formed;
the factor cos and sin are multiplied by; and how a token's coordinates
become the words a kernel's token table holds (`words`) and, for the float64
references, those words' angles (`angles`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable

import numpy as np

from ..runtime.dtypes import frozen

ANGLE_FLOAT32, ANGLE_SHORT, ANGLE_EXACT = range(3)  # glsl/freqs.glsl's ANGLE_*
ONE_BITS = 0x3F800000  # float32 1.0: the kernels' `magnitude` when no factor applies
STAND_IN = frozen(np.zeros(1, np.uint32))  # bound where a variant reads nothing (a computing kernel's cos / sin)


@dataclass(frozen=True)
class Generated:
    """What every kernel reads of a frequency spec (built by
    `vkrope.ops.lowering.lower`). Compares and hashes by the spec it came
    from and the fields below but the arrays and functions: part of a
    plan's cache key."""

    source: Hashable  # the spec lowered (a frozen spec: compares by value)
    angle: int  # ANGLE_FLOAT32, ANGLE_SHORT or ANGLE_EXACT
    magnitude: float  # the float32 factor of cos and sin (1.0 without one)
    id_words: int  # token words per token: 0 for one word (a 1-D coordinate), else 2 per axis
    grid_width: int  # an axial grid's tokens per row (the interleaved kernel's AXIAL mode), else 0
    inv32: np.ndarray = field(compare=False, repr=False)  # float32 [columns]
    quarters: np.ndarray = field(compare=False, repr=False)  # uint32 [columns, 3] (exact angle; zeros otherwise)
    axis: np.ndarray = field(compare=False, repr=False)  # uint32 [columns]
    words: Callable[[np.ndarray], np.ndarray] = field(compare=False, repr=False)  # coordinates -> int32 words
    angles: Callable[[np.ndarray], np.ndarray] = field(compare=False, repr=False)  # words -> float64 [n, columns]

    @property
    def n_columns(self) -> int:
        """cos / sin columns: half the rotated channels."""
        return len(self.inv32)

    @property
    def magnitude_bits(self) -> int:
        """The kernels' `magnitude` push constant: the factor's float32 bits."""
        return int(np.float32(self.magnitude).view(np.uint32))

    @functools.cached_property
    def columns(self) -> np.ndarray:
        """The columns table glsl/freqs.glsl reads, uint32 (made once): the
        float32 inverse frequencies (bits), padded to a multiple of 4, then
        (quarter turns, axis) as one uvec4 per column."""
        n = self.n_columns
        head = -(-n // 4) * 4
        out = np.zeros(head + 4 * n, np.uint32)
        out[:n] = np.asarray(self.inv32, np.float32).view(np.uint32)
        per_column = out[head:].reshape(n, 4)
        per_column[:, :3] = self.quarters
        per_column[:, 3] = self.axis
        return frozen(out)

    def check_fits(self, kernel: str, columns: int, *, several: bool = False, grid: bool = False) -> None:
        """That `kernel` can read these frequencies: `columns` cos / sin
        columns, several coordinates per token only where it reads them, an
        axial grid only where it splits one (else an operator's mistake:
        AssertionError)."""
        assert self.n_columns == columns, f"{kernel}: {self.n_columns} frequency columns for {columns}"
        assert several or self.id_words == 0, f"{kernel} reads one coordinate per token"
        assert grid or self.grid_width == 0, f"{kernel} splits no axial grid"

    def cos_sin(self, words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """float64 (cos, sin) [n, columns] of tokens' words, the factor
        applied: what the references multiply by."""
        a = self.angles(words)
        m = np.float64(self.magnitude)
        return m * np.cos(a), m * np.sin(a)


def is_generated(freqs: Any) -> bool:
    """Whether a request's frequencies are computed in the shader."""
    return isinstance(freqs, Generated)
