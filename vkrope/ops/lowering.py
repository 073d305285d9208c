"""The one lowering from a frequency spec (vkrope/freqs.py) to what every
kernel reads when it computes the frequencies itself
(`vkrope.kernels.generated.Generated`, glsl/freqs.glsl): the columns, the
angle mode, the factor, and the words a token's coordinates become.

Three kinds of spec, one form:
  a 1-D position spec (`RopeFreqs`, `InvFreqs`)  one word per token: its
      position (exact angle) or the bits of its float32 scaled position
      (`scaled_positions`, the frameworks' division, done here);
  a several-axis spec (`NdFreqs`, an M-RoPE `InvFreqs`)  two words per axis
      per token, its coordinate on that axis: (whole, frac) with
      coordinate = whole + frac / 2^32 (exact angle), else (the float32
      coordinate's bits, 0); each column names its axis;
  an axial grid (`AxialFreqs`, the interleaved kernel)  the token's grid
      row as its word; the columns of x come first, then those of y.
"""

from __future__ import annotations

import functools
from typing import Any, cast

import numpy as np

from ..freqs import AxialFreqs, FrequencySpec, InvFreqs, is_position_spec
from ..nd_freqs import NdFreqs
from ..kernels.generated import ANGLE_EXACT, ANGLE_FLOAT32, ANGLE_SHORT, Generated

SHORT_ANGLE_LIMIT = 8192.0  # glsl/trig.glsl: cos_sin_short's range


def several_axes(spec: Any) -> bool:
    """Whether a spec's tokens carry a coordinate per axis (an `NdFreqs`, or
    an M-RoPE `InvFreqs`)."""
    return isinstance(spec, NdFreqs) or (isinstance(spec, InvFreqs) and spec.mrope)


def angle_mode(spec: FrequencySpec) -> int:
    """How the kernels form a spec's angle: exact; the float32 angle with the
    short reduction where the spec bounds every angle within its range (axial
    grids); else the float32 angle with the full one."""
    if spec.angle == "exact":
        return ANGLE_EXACT
    return ANGLE_SHORT if spec.max_float32_angle <= SHORT_ANGLE_LIMIT else ANGLE_FLOAT32


@functools.lru_cache(maxsize=64)
def lower(spec: FrequencySpec) -> Generated:
    """What every kernel reads of `spec` (made once per spec)."""
    exact = spec.angle == "exact"
    inv32 = np.asarray(spec.inv_freq32, np.float32)
    quarters = np.asarray(spec.quarter_turns, np.uint32)[:, :3] if exact else np.zeros((len(inv32), 3), np.uint32)
    n = len(inv32)

    def made(id_words: int, grid_width: int, inv: np.ndarray, q: np.ndarray, axis: np.ndarray, words: Any,
             angles: Any) -> Generated:
        return Generated(source=spec, angle=angle_mode(spec), magnitude=float(spec.magnitude), id_words=id_words,
                         grid_width=grid_width, inv32=inv, quarters=q, axis=axis, words=words, angles=angles)

    if isinstance(spec, AxialFreqs):  # x's columns, then y's: the same frequencies on the grid's two axes
        return made(0, spec.axes[0], np.tile(inv32, 2), np.tile(quarters, (2, 1)),
                    np.repeat(np.arange(2, dtype=np.uint32), n), _grid_words,
                    lambda w: spec.angles(np.asarray(w, np.int64).reshape(-1)))
    if several_axes(spec):
        axes = cast(Any, spec)  # an NdFreqs or an M-RoPE InvFreqs
        return made(2 * axes.n_axes, 0, inv32, quarters, np.asarray(axes.pair_axis, np.uint32),
                    functools.partial(_axis_words, spec), functools.partial(_axis_angles, spec))
    if not is_position_spec(spec):
        raise TypeError(f"no lowering for a {type(spec).__name__} spec")  # every spec kind is one of the above
    return made(0, 0, inv32, quarters, np.zeros(n, np.uint32), functools.partial(_position_words, spec),
                functools.partial(_position_angles, spec))


def _grid_words(rows: np.ndarray) -> np.ndarray:
    """An axial grid's tokens: their grid rows as they are (-1 kept)."""
    return np.ascontiguousarray(rows, dtype=np.int32)


def _position_words(spec: Any, positions: np.ndarray) -> np.ndarray:
    """int32, one word per token (checked positions, -1 = pass through,
    kept): its position for the exact angle, else the bits of its float32
    scaled position."""
    p = np.asarray(positions, np.int64)
    if spec.angle == "exact":
        return p.astype(np.int32)
    bits = spec.scaled_positions(p).view(np.int32)
    return np.where(p < 0, -1, bits).astype(np.int32)


def _position_angles(spec: Any, words: np.ndarray) -> np.ndarray:
    """The angles [n, columns] of `_position_words` (none -1), as the kernels
    form them: exact angles of the positions the words are, or the float32
    product of the scaled positions the words hold."""
    words = np.asarray(words, np.int32).reshape(-1)
    return spec.angles_at(words.view(np.float32), words)


def _axis_words(spec: Any, ids: np.ndarray) -> np.ndarray:
    """int32 [..., 2 * n_axes] of checked float64 coordinates [..., n_axes]:
    per axis (whole, frac) with coordinate = whole + frac / 2^32 for the
    exact angle, else (the float32 coordinate's bits, 0)."""
    ids = np.asarray(ids, np.float64)
    words = np.zeros(ids.shape + (2,), np.int32)
    if spec.angle == "exact":
        q = np.round(ids * 2.0**32)  # the coordinate in units of 2^-32: exact in float64 below 2^52
        whole = np.floor(q / 2.0**32)
        words[..., 0] = whole.astype(np.int32)
        words[..., 1] = (q - whole * 2.0**32).astype(np.uint32).view(np.int32)
    else:
        words[..., 0] = ids.astype(np.float32).view(np.int32)
    return words.reshape(ids.shape[:-1] + (2 * spec.n_axes,))


def _axis_angles(spec: Any, words: np.ndarray) -> np.ndarray:
    """The angles [n, columns] of `_axis_words` rows [n, 2 * n_axes]."""
    w = np.asarray(words, np.int32).reshape(-1, spec.n_axes, 2)
    if spec.angle == "exact":
        ids = w[..., 0].astype(np.float64) + w[..., 1].view(np.uint32) / 2.0**32
    else:
        ids = w[..., 0].copy().view(np.float32).astype(np.float64)
    return spec.angles(ids if isinstance(spec, NdFreqs) else ids.astype(np.int64))
