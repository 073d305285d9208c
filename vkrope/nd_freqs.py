"""`vkrope.NdFreqs`: N-D axial RoPE frequencies of image and video transformers (diffusers' multi-axis
`get_1d_rotary_pos_embed` per axis, concatenated), and `grid_ids`, the ids of a grid's cells."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from .exact_math import pow32, pow64
from .runtime.dtypes import asarray_hint, convert_hint, frozen, is_real_float_dtype, refuse_subclass, without_repeats
from .words import brief, typed
from .spec_checks import (HEAD_BOUND, MAX_HEAD_DIM, MAX_PAIRS, check_exact_range, check_int, check_positive,
                          check_real, finite)
from .freqs import FrequencySpec

ND_ANGLES = ("exact", "float32")  # (exact first: the default, diffusers' float64)
MAX_ID = float(1 << 30)  # |id| below this: the kernel splits an id into a signed 32-bit integer part


@dataclass(frozen=True)
class NdFreqs(FrequencySpec):
    """N-D axial RoPE frequencies (diffusers' image and video transformers:
    Flux, Wan, HunyuanVideo, CogVideoX, Qwen-Image; SAM2 is the 2-axis
    case) for `vkrope.apply(x, spec, positions=ids)` / `vkrope.apply_nd`.

    Axis a owns `axes_dim[a]` consecutive channels (even); its pair k turns
    by `ids[:, a] * w[a, k]`, w[a, k] = theta_a ** (-2k / axes_dim[a])
    (diffusers' `get_1d_rotary_pos_embed` per axis, concatenated); channels
    past sum(axes_dim) pass through. `theta`: one base, or one per axis.
    `interleaved`: pairs (2i, 2i+1) (diffusers' `use_real` with
    `repeat_interleave_real`, and the complex form); False: rotate-half
    pairs (i, i + R/2) over the rotated width R, pair i taking the i-th
    frequency of the concatenated list.

    angle="exact" (default): the angle is each id (float64: fractional and
    negative allowed, kept to 2^-32) times the float64 frequency, reduced
    exactly: diffusers' float64 frequencies (Flux, Wan) within the rounding
    of float32 cos / sin where theta >= 1 (below it, diffusers' own float64
    product of id and frequency rounds by more: docs/guide/nd.md). (Flux's module rounds its ids to float32 first:
    pass float32 ids to match it where they are not integers.) Every
    frequency must be below 2 pi (theta >= 1 always is).
    angle="float32": the float32 product of the id rounded to float32 and
    the float32 frequency (diffusers' float32 path: HunyuanVideo,
    CogVideoX, Qwen-Image, and any model run on MPS).
    """

    axes_dim: tuple[int, ...]
    theta: float | tuple[float, ...] = 10000.0  # stored as a tuple of floats, one per axis
    interleaved: bool = True
    angle: str = "exact"
    dim: int = field(init=False, default=0)  # sum(axes_dim)

    def __post_init__(self) -> None:
        axes = self.axes_dim
        if isinstance(axes, np.ndarray) and axes.ndim == 1:  # (as theta takes one: numpy's widths are ints too)
            axes = tuple(axes.tolist())
        if isinstance(axes, (int, np.integer)) or not isinstance(axes, (tuple, list)):
            raise TypeError(f"axes_dim must be a tuple (or 1-D array) of channel widths, one per axis; got "
                            f"{typed(axes)}")
        if not axes:
            raise ValueError("axes_dim must name at least one axis")
        for a, d in enumerate(axes):
            check_int(f"axes_dim[{a}]", d, 2, MAX_HEAD_DIM, HEAD_BOUND)  # (the sum's bound, said of the axis)
            if d % 2:
                raise ValueError(f"axes_dim[{a}] must be even (pairs of channels); got {d}")
        if sum(int(d) for d in axes) > MAX_HEAD_DIM:
            raise ValueError(f"axes_dim must sum to at most {MAX_HEAD_DIM} channels (a head); got "
                             f"{brief(sum(int(d) for d in axes))}")
        object.__setattr__(self, "axes_dim", tuple(int(d) for d in axes))
        thetas = _per_axis("theta", self.theta, len(axes))
        per_axis = isinstance(self.theta, (tuple, list)) or (isinstance(self.theta, np.ndarray) and self.theta.ndim)
        for a, t in enumerate(thetas):
            check_positive(f"theta[{a}]" if per_axis else "theta", t)
        object.__setattr__(self, "theta", tuple(float(t) for t in thetas))
        if not isinstance(self.interleaved, (bool, np.bool_)):
            raise TypeError(f"interleaved must be a bool; got {typed(self.interleaved)}")
        if not isinstance(self.angle, str):
            raise TypeError(f"angle must be a str, one of {ND_ANGLES}; got {typed(self.angle)}")
        if self.angle not in ND_ANGLES:
            raise ValueError(f"angle must be one of {ND_ANGLES}; got {brief(self.angle)}")
        object.__setattr__(self, "dim", sum(self.axes_dim))
        if self.angle == "exact":
            check_exact_range(self.inv_freq64, "theta and axes_dim")
            # The shader keeps a frequency modulo one turn: exact times an
            # integer, not times an id's fraction once the frequency passes 2 pi.
            f = float(np.max(self.inv_freq64))
            if f >= 2 * math.pi:
                shown = self.thetas[0] if len(self.thetas) == 1 else self.thetas
                raise ValueError(f"angle='exact' needs every frequency below 2 pi; theta {shown} gives {f:.4g} "
                                 "(a theta below 1); use angle='float32'")

    @property
    def n_axes(self) -> int:
        """How many axes (columns of ids)."""
        return len(self.axes_dim)

    @property
    def thetas(self) -> tuple[float, ...]:
        """The base of each axis (`theta` as stored)."""
        return tuple(self.theta) if isinstance(self.theta, tuple) else (float(self.theta),) * self.n_axes

    @property
    def magnitude(self) -> np.float32:
        """1: no factor on cos / sin."""
        return np.float32(1.0)

    @property
    def rows(self) -> int:
        """0: an N-D spec stands for no table; every call gives its ids."""
        return 0

    @property
    def needs_positions(self) -> bool:
        """True: each token's ids are given per call."""
        return True

    @cached_property
    def pair_axis(self) -> np.ndarray:
        """int32 [dim/2]: the axis of each pair of the concatenated list."""
        return frozen(np.repeat(np.arange(self.n_axes, dtype=np.int32), [d // 2 for d in self.axes_dim]))

    def inv_freq_float64(self) -> np.ndarray:
        """[dim/2]: 1 / theta_a ** (arange(0, d_a, 2) / d_a) in float64 per axis, concatenated."""
        return np.concatenate([1.0 / pow64(t, np.arange(0, d, 2, dtype=np.float64) / d)
                               for d, t in zip(self.axes_dim, self.thetas)])

    def inv_freq_float32(self) -> np.ndarray:
        """[dim/2]: the same in float32, as diffusers' float32 path computes it
        (the power correctly rounded, `pow32`)."""
        return np.concatenate([np.float32(1.0) / pow32(t, np.arange(0, d, 2, dtype=np.float32) / np.float32(d))
                               for d, t in zip(self.axes_dim, self.thetas)]).astype(np.float32)

    def check_ids(self, ids: Any, name: str = "ids") -> np.ndarray:
        """float64 [N, n_axes] ids (or [B, N, n_axes]), finite and within
        +-2^30 (read-only; a broadcast axis stays one), or a TypeError /
        ValueError naming `name`."""
        if not isinstance(ids, np.ndarray):
            raise TypeError(f"{name} must be a numpy array [N, {self.n_axes}] of positions per axis; got "
                            f"{type(ids).__name__}{asarray_hint(name, ids)}")
        refuse_subclass(name, ids)  # (np.matrix, masked arrays: as every other argument)
        if not (ids.dtype.kind in "iu" or is_real_float_dtype(ids.dtype)):  # (bool is kind "b")
            hint = convert_hint(name, ids.dtype, to="float64")  # (float32 rounds ids past 2^24)
            raise TypeError(f"{name} must hold real numbers (integers, or floats: numpy's or bfloat16); got dtype "
                            f"{ids.dtype}" + ("" if ids.dtype == np.bool_ else f" ({hint})"))  # (a mask: no cast)
        if ids.ndim not in (2, 3) or ids.shape[-1] != self.n_axes:
            raise ValueError(f"{name} must have shape [N, {self.n_axes}] (or [B, N, {self.n_axes}]): one position per "
                             f"axis of the spec; got {list(ids.shape)}")
        with np.errstate(over="ignore", invalid="ignore"):  # (a broadcast array's repeats are not read)
            v = without_repeats(ids).astype(np.float64)
        bad = ~(np.abs(v) < MAX_ID)
        if bad.any():
            raise ValueError(f"{name} must be finite and within +-2^30; got {v[bad].flat[0]}")
        return np.broadcast_to(v, ids.shape)

    def angles(self, ids: Any) -> np.ndarray:
        """float64 [N, dim/2] (ids [B, N, n_axes]: [B * N, dim/2]): each
        token's angle per pair as the kernel forms it ("exact": the id, kept
        to 2^-32, times the float64 frequency; "float32": the float32
        product, as float64 numbers)."""
        v = self.check_ids(ids).reshape(-1, self.n_axes)
        cols = v[:, self.pair_axis]
        if self.angle == "exact":
            return np.round(cols * 2.0**32) / 2.0**32 * self.inv_freq64[None, :]
        with np.errstate(over="ignore"):  # (a huge frequency's angle overflows to inf, as diffusers' float32 path)
            return (cols.astype(np.float32) * self.inv_freq32[None, :]).astype(np.float32).astype(np.float64)

    def cos_sin(self, ids: Any) -> tuple[np.ndarray, np.ndarray]:
        """(cos, sin) float32 [N, dim] (per-item ids: [B * N, dim]): what diffusers' rotary modules return
        for these ids, to the angle's rounding (`angles`: an "exact" id is kept to 2^-32, so the sine of an
        id of 2^-33 is 0, not diffusers' 1e-13) (each pair's value twice: interleaved, as
        `repeat_interleave_real`; rotate-half, the halves concatenated).
        For a plot, a check, or a table path: `vkrope.apply(x, np.stack([cos[:, ::2],
        sin[:, ::2]], -1))` for interleaved pairs (`apply_nd` itself needs no table)."""
        a = self.angles(ids)
        with np.errstate(invalid="ignore"):  # (an overflowed angle's cos / sin are NaN, as diffusers gives them)
            c, s = np.cos(a).astype(np.float32), np.sin(a).astype(np.float32)
        if self.interleaved:
            return np.repeat(c, 2, axis=1), np.repeat(s, 2, axis=1)
        return np.concatenate([c, c], 1), np.concatenate([s, s], 1)

    @property
    def max_float32_angle(self) -> float:
        """inf: ids come with each call."""
        return float("inf")


def _per_axis(name: str, value: Any, n_axes: int) -> tuple:
    """`value` (one number, or a flat sequence of one per axis) as one per axis."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if not isinstance(value, (tuple, list, np.ndarray)):
        return (value,) * n_axes
    if isinstance(value, np.ndarray) and value.ndim != 1:
        raise ValueError(f"{name} must be one number or a flat sequence of one per axis ({n_axes}); got an array "
                         f"of shape {value.shape}")
    if len(value) != n_axes:
        raise ValueError(f"{name} must be one number or one per axis ({n_axes}); got {len(value)}")
    return tuple(value)


def grid_ids(shape: Any, *, offset: Any = 0.0, step: Any = 1.0) -> np.ndarray:
    """float64 [prod(shape), len(shape)]: the ids of every cell of a grid,
    row-major (the last axis fastest), cell i along axis a at
    `offset[a] + i * step[a]` (each a number or one per axis).

    Flux's image ids: `grid_ids((1, h, w))`; Flux Kontext's reference image:
    `offset=(1, 0, 0)`; Qwen-Image's centred rows and columns:
    `offset=(0, -(h - h // 2), -(w - w // 2))`; CogVideoX's linspace grid
    over a crop region [start, stop): `offset=start`, `step=(stop * (n - 1) /
    n - start) / (n - 1)` per axis of n > 1 cells (torch's float32 linspace rounds a few
    of those ids 1 ulp otherwise: docs/guide/nd.md). Flux's text tokens (ids 0) are
    `np.zeros((n, 3))`, concatenated."""
    if isinstance(shape, np.ndarray) and shape.ndim == 1:
        shape = tuple(shape.tolist())
    if isinstance(shape, (int, np.integer)) or not isinstance(shape, (tuple, list)):
        raise TypeError(f"shape must be a tuple (or 1-D array) of grid sizes; got {typed(shape)}")
    if not shape or len(shape) > 32:  # (numpy's meshgrid takes at most 32 axes)
        raise ValueError(f"shape must name 1 to 32 axes; got {len(shape)}")
    for a, n in enumerate(shape):
        check_int(f"shape[{a}]", n, 0)
    cells = math.prod(int(n) for n in shape)
    if cells > MAX_PAIRS or max(int(n) for n in shape) > MAX_PAIRS:  # (a bound on absurd shapes: not on memory)
        raise ValueError(f"shape {brief(tuple(int(n) for n in shape))} has {brief(cells)} cells; a grid has at most "
                         f"{MAX_PAIRS} cells on any axis and in all, the tokens one call rotates (a pair each)")
    n_axes = len(shape)
    if cells == 0:
        return np.zeros((0, n_axes))  # (no axis built: another axis may be long)
    per: dict[str, tuple[float, ...]] = {}
    for name, value in (("offset", offset), ("step", step)):
        vals = _per_axis(name, value, n_axes)
        for a, v in enumerate(vals):
            check_real(f"{name}[{a}]", v)
            if not finite(v):
                raise ValueError(f"{name}[{a}] must be finite; got {brief(v)}")
        per[name] = tuple(float(v) for v in vals)
    axes = []
    for a, n in enumerate(shape):
        with np.errstate(over="ignore"):
            ids = per["offset"][a] + np.arange(int(n), dtype=np.float64) * per["step"][a]
        if not np.isfinite(ids).all():  # (finite offset and step, but the last cell past float64)
            raise ValueError(f"offset[{a}] + i * step[{a}] overflows float64 within shape[{a}] = {n} cells; got "
                             f"offset {per['offset'][a]} and step {per['step'][a]}")
        axes.append(ids)
    mesh = np.meshgrid(*axes, indexing="ij")
    return np.stack([m.reshape(-1) for m in mesh], -1) if mesh[0].size else np.zeros((0, n_axes))
