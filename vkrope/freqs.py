"""Frequency specs: RoPE frequencies computed in the shader instead of read
from a cos / sin table (`vkrope.RopeFreqs`, `InvFreqs`; SAM2's `AxialFreqs`;
N-D axial `NdFreqs` for image and video transformers, with `grid_ids`, in
nd_freqs.py; the checks they share in spec_checks.py).

A table-driven RoPE moves the table as well as x and the result; computing
cos and sin from each token's position removes those bytes. The angle is
the one the frameworks compute in float32 (angle="float32", the default):
inverse frequencies `1 / base ** (arange(0, dim, 2) / dim)` evaluated in
float32, divided by `freq_factors` (Llama 3.1), the position divided by
`scale` in float32, their product rounded once to float32; then cos and sin
of that float32 angle, each within 2 ulp of float64 (glsl/trig.glsl). A
table built by torch or Hugging Face holds the same numbers to its own
rounding, where torch's float32 power agrees with the correctly rounded
one vkrope takes (`pow32`; on a few pairs it is 1 ulp off, which moves
that column's angle by position x 1 ulp). angle="exact" forms position * inverse frequency from the integer
position and the float64 inverse frequency, reduced exactly: the angle off
by at most position x 2^-95 quarter turns (the frequency kept to 2^-94 of
one; under 2^-70 rad below position 2^24), so cos / sin are within 2 ulp of
float64 truth wherever they are above about 2^-45 (near a zero, an angle
within ~2^-45 of a multiple of pi/2, which takes a frequency crafted for
it, the error is that absolute one); for long contexts, where the float32
angle itself drifts by up to ~0.01 rad.

`vkrope.YaRN` (yarn.py) extends a RopeFreqs spec's context as Hugging
Face's "yarn" rope type and llama.cpp's rope_yarn do: each pair's inverse
frequency is a ramp-weighted blend of the scaled and unscaled ones, and
cos / sin are multiplied by an attention factor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from .exact_math import exact_angles, pow32, pow64, quarter_turns
from .runtime.dtypes import frozen
from .words import brief, typed
from .spec_checks import (F32_MAX, MAX_HEAD_DIM, MAX_POSITION, MROPE_AXES, check_angle, check_dim,
                          check_exact_range, check_positions, check_positive, f32_normal, grid_side)
from .yarn import YaRN

if TYPE_CHECKING:  # (nd_freqs imports FrequencySpec from here: AxialFreqs.as_nd imports it when called)
    from .nd_freqs import NdFreqs

class FrequencySpec:
    """What every frequency spec describes (RopeFreqs, AxialFreqs, NdFreqs): its
    float32 and float64 inverse frequencies (computed once per spec, a libm
    power per column in Python; read-only), their quarter turns (the exact
    angle's form of the float64 ones), the angle mode, the factor on cos /
    sin, the axes of a grid, and how many table rows it stands for. How a
    kernel reads them is its operator's business (vkrope/ops)."""

    dim: int
    angle: str

    def __getstate__(self) -> dict[str, Any]:
        """What a pickle or a deepcopy keeps: the spec's fields, not the
        arrays computed from them, which would come back writable (a copy
        computes its own, read-only; an edit of a writable one would reach
        every equal spec through the cached lowering)."""
        cached = {k for c in type(self).__mro__ for k, v in vars(c).items() if isinstance(v, cached_property)}
        return {k: v for k, v in self.__dict__.items() if k not in cached}

    def inv_freq_float32(self) -> np.ndarray:  # pragma: no cover - each spec defines it
        """The inverse frequencies in float32, as the frameworks compute them (a new array)."""
        raise NotImplementedError

    def inv_freq_float64(self) -> np.ndarray:  # pragma: no cover - each spec defines it
        """The inverse frequencies in float64 (a new array)."""
        raise NotImplementedError

    @cached_property
    def inv_freq32(self) -> np.ndarray:
        """`inv_freq_float32()`, computed once (read-only)."""
        return frozen(self.inv_freq_float32())

    @cached_property
    def inv_freq64(self) -> np.ndarray:
        """`inv_freq_float64()`, computed once (read-only)."""
        return frozen(self.inv_freq_float64())

    @cached_property
    def quarter_turns(self) -> np.ndarray:
        """uint32 [n, 4]: each float64 inverse frequency in quarter turns
        (`quarter_turns`), for the exact angle; big-integer work, done once."""
        return frozen(quarter_turns(self.inv_freq64))

    @property
    def magnitude(self) -> np.float32:  # pragma: no cover - each spec defines it
        """The float32 factor cos and sin are multiplied by."""
        raise NotImplementedError

    @property
    def rows(self) -> int:  # pragma: no cover - each spec defines it
        """How many table rows (positions) it stands for."""
        raise NotImplementedError

    @property
    def axes(self) -> tuple[int, ...]:
        """The grid's width and height for axial frequencies; () for 1-D ones."""
        return ()

    @property
    def needs_positions(self) -> bool:
        """Whether a call must say each token's position (a 1-D spec has no
        rows of its own to map tokens onto)."""
        return False

    @property
    def max_float32_angle(self) -> float:
        """The largest |float32 angle| the spec yields over its rows (inf
        where positions are only bounded by 2^24)."""
        return float("inf")


class PositionFreqs(FrequencySpec):
    """What the specs whose tokens carry positions (`RopeFreqs`, `InvFreqs`)
    share: the float32 positions the float32 angle multiplies, the angles
    of either mode, and the (cos, sin) cache they stand for."""

    @property
    def position_scale(self) -> float:  # pragma: no cover - each spec defines it
        """What positions are divided by before the float32 angle."""
        raise NotImplementedError

    def angles(self, positions: Any) -> np.ndarray:  # pragma: no cover - each spec defines it
        """The angles [len(positions), dim/2] of the spec's angle mode."""
        raise NotImplementedError

    def scaled_positions(self, positions: np.ndarray) -> np.ndarray:
        """float32 position / `position_scale` of each (checked) position, the
        frameworks' float32 division (done on the host, where it is
        correctly rounded): what the float32 angle multiplies."""
        p = np.asarray(positions, np.int64)
        return (p.astype(np.float32) / np.float32(self.position_scale)).astype(np.float32)

    def angles_at(self, factors: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """The angles [n, dim/2] of the angle mode: for "float32" the float32
        product of `factors` (scaled positions, float32) and the float32
        inverse frequencies, as the frameworks form it (as float64 numbers);
        for "exact" the product of the integer `positions` and the float64
        ones, reduced exactly as the shader reduces it (`exact_angles`: a
        float64 product is ~|angle| * 1e-16 off, many float32 ulp of a cos
        or sin near 0 at large positions)."""
        if self.angle == "exact":
            return exact_angles(np.asarray(positions).reshape(-1), self.quarter_turns)
        t = np.asarray(factors, np.float32).reshape(-1)
        with np.errstate(over="ignore"):  # (a huge frequency's float32 angle overflows to inf, as the frameworks')
            return (t[:, None] * self.inv_freq32[None, :]).astype(np.float32).astype(np.float64)

    def table(self, positions: Any) -> tuple[np.ndarray, np.ndarray]:
        """(cos, sin) float32 [len(positions), dim/2]: the cache this spec
        stands for (float64 cos / sin of `angles`, rounded once, then times
        `magnitude` in float32, as Hugging Face scales its cache)."""
        a = self.angles(positions)
        m = self.magnitude
        with np.errstate(invalid="ignore"):  # (an overflowed angle's cos / sin are NaN, as the frameworks give them)
            c, s = np.cos(a).astype(np.float32), np.sin(a).astype(np.float32)
        return (c * m).astype(np.float32), (s * m).astype(np.float32)


@dataclass(frozen=True)
class RopeFreqs(PositionFreqs):
    """1-D RoPE frequencies (Llama, Hugging Face) in place of a cos / sin
    table, for `rotary_embedding`, `apply_rotary_emb`, `apply_rotary_emb_hf`,
    `apply_rotary_pos_emb`, `rope_and_cache`, `shift_cache` and
    `apply(..., positions=)`: the position
    of a token is its cache row (position_ids, or s for ExecuTorch's ops).

    dim: the rotated width (even); base: the RoPE base (> 0); scale: positions
    are divided by it (linear scaling, > 0), or with `yarn` the YaRN factor;
    freq_factors: dim/2 positive divisors of the inverse frequencies (Llama
    3.1 / llama.cpp); angle: "float32" (what the frameworks compute: the
    float32 product of position and inverse frequency) or "exact" (the
    integer position times the float64 inverse frequency, reduced exactly:
    within 2 ulp up to 2^24; near cos / sin's zeros the error is instead
    absolute, under 2^-70, see the module docstring); yarn: a `vkrope.YaRN`, or
    None.
    """

    dim: int
    base: float = 10000.0
    scale: float = 1.0
    freq_factors: Any = None  # stored as a tuple of floats: specs compare and hash by value
    angle: str = "float32"
    yarn: YaRN | None = None

    def __post_init__(self) -> None:
        check_dim("dim", self.dim, 2)
        if self.dim % 2:
            raise ValueError(f"dim must be even and >= 2; got {self.dim}")
        check_positive("base", self.base)
        check_positive("scale", self.scale)
        check_angle(self.angle)
        if self.freq_factors is not None:
            try:
                ff = np.asarray(self.freq_factors, dtype=np.float64)
            except OverflowError:
                raise ValueError("freq_factors must be positive numbers in float32's normal range; got an int "
                                 "past float64") from None
            if ff.shape != (self.dim // 2,):
                raise ValueError(f"freq_factors must hold dim/2 = {self.dim // 2} values; got shape {ff.shape}")
            if not f32_normal(ff).all():
                raise ValueError(f"freq_factors must be positive numbers in float32's normal range; got "
                                 f"{ff[~f32_normal(ff)][:3].tolist()} among them")
            object.__setattr__(self, "freq_factors", tuple(float(v) for v in ff))
        if self.yarn is not None:
            if not isinstance(self.yarn, YaRN):
                raise TypeError(f"yarn must be a vkrope.YaRN or None; got {typed(self.yarn)}")
            if not self.base > 1:
                raise ValueError(f"base must be > 1 with yarn (its ramp divides by ln(base)); got {self.base}")
            if not self.scale >= 1:
                raise ValueError(f"scale must be >= 1 with yarn (the context extension factor); got {self.scale}")
            self._check_ramp(self.yarn)
            m = self.yarn.magnitude(float(self.scale))
            if not f32_normal(m):
                raise ValueError(f"yarn's attn_factor gives a cos / sin factor of {m}, outside float32's normal "
                                 f"range; got attn_factor = {self.yarn.attn_factor}")
        if self.angle == "exact":
            check_exact_range(self.inv_freq64, "base, scale and freq_factors")

    def _check_ramp(self, y: YaRN) -> None:
        # Where beta_fast's correction dim lies above beta_slow's after
        # clamping to [0, dim - 1], there is no ramp:
        # Hugging Face then divides by a negative span and llama.cpp by
        # 0.001, giving opposite blends. Neither is YaRN; refuse it.
        what = (f"original_context = {brief(y.original_context)}, beta_fast = {y.beta_fast}, beta_slow = {y.beta_slow} "
                f"with dim = {self.dim}, base = {self.base}")
        low, high = y.ramp_ends(self.dim, float(self.base))  # (finite: an original_context below 2^64, float32
        # betas, a base above 1)
        if high < low:
            check = ("beta_fast is below beta_slow, which turns the ramp around" if y.beta_fast < y.beta_slow else
                     "check original_context (the trained context, in tokens) and base")
            raise ValueError(f"yarn: {what} leave no ramp (beta_fast's correction dim {low} lies above beta_slow's "
                             f"{high}); {check}")

    @property
    def position_scale(self) -> float:
        """What positions are divided by: scale, or 1 with yarn (whose
        frequencies carry the scale)."""
        return 1.0 if self.yarn is not None else float(self.scale)

    @cached_property
    def magnitude(self) -> np.float32:
        """The float32 factor cos and sin are multiplied by (1 without yarn)."""
        return np.float32(1.0 if self.yarn is None else self.yarn.magnitude(float(self.scale)))

    def inv_freq_from(self, powers: np.ndarray) -> np.ndarray:
        """The inverse frequencies [dim/2] from base ** (arange(0, dim, 2) /
        dim) given in float32 or float64, the rest of the steps in that
        dtype (1 / powers, the YaRN blend, freq_factors)."""
        t = powers.dtype.type
        inv = t(1.0) / powers
        if self.yarn is not None:
            with np.errstate(over="ignore"):  # a huge scale: interp is 0, as in HF
                interp = t(1.0) / (t(self.scale) * powers)
            mix = self.yarn.mix(self.dim, float(self.base), powers.dtype)
            inv = interp * (t(1.0) - mix) + inv * mix
        if self.freq_factors is not None:
            inv = inv / np.asarray(self.freq_factors, dtype=t)
        return inv

    def inv_freq_float32(self) -> np.ndarray:
        """The inverse frequencies [dim/2] as the frameworks compute them in
        float32 (the power correctly rounded, `pow32`; with yarn: Hugging
        Face's blend, step by step)."""
        return self.inv_freq_from(pow32(self.base, np.arange(0, self.dim, 2, dtype=np.float32) / np.float32(self.dim)))

    def inv_freq_float64(self) -> np.ndarray:
        """The inverse frequencies [dim/2] in float64, positions' scale folded in."""
        powers = pow64(self.base, np.arange(0, self.dim, 2, dtype=np.float64) / self.dim)
        return self.inv_freq_from(powers) / self.position_scale

    def angles(self, positions: Any) -> np.ndarray:
        """The angle [len(positions), dim/2] each mode uses: float32 for
        angle="float32" (as float64 numbers), the float64 product for "exact".
        positions: integers in [0, 2^24)."""
        p = check_positions("positions", positions)
        return self.angles_at(self.scaled_positions(p), p)

    @property
    def rows(self) -> int:
        """Positions it takes: [0, 2^24)."""
        return MAX_POSITION

    @property
    def needs_positions(self) -> bool:
        """True: a token's position is its row of the cache this spec stands for."""
        return True




@dataclass(frozen=True)
class InvFreqs(PositionFreqs):
    """Frequencies given as a model computes them: what `vkrope.from_hf` /
    `ModelRope.freqs` resolve a Hugging Face rope type to for one call
    (every op that takes a `RopeFreqs` takes it where it has one axis).

    inv_freq: dim/2 float32 inverse frequencies (as transformers' rotary
    module holds them: llama3 smoothing, longrope factors, YaRN blend, ...,
    each step in float32); inv_freq_exact: the same in float64 (the exact
    angle's; default: inv_freq as given); attention_factor: what cos and sin
    are multiplied by (float32); pair_axis: M-RoPE, the position axis (0, 1,
    2 = temporal, height, width) of each pair, whose angles then come from
    position ids [3, B, S] (None: one position per token).

    angle="float32": the float32 product of the position and the float32
    inverse frequency (transformers' `position_ids.float() * inv_freq`, one
    rounding); "exact": the integer position times the float64 inverse
    frequency, reduced exactly (long contexts). Inverse frequencies of 0
    (Gemma 4's proportional RoPE) rotate by nothing.
    """

    inv_freq: Any  # stored as a tuple of float32 values (as Python floats)
    inv_freq_exact: Any = None  # stored as a tuple of floats (default: inv_freq)
    attention_factor: float = 1.0
    pair_axis: Any = None  # stored as a tuple of ints, or None
    angle: str = "float32"
    dim: int = field(init=False, default=0)  # 2 * len(inv_freq)
    # The pairs whose inverse frequency is -0.0 (in inv_freq, then inv_freq_exact): -0.0 == 0.0, but the signs
    # of zero a spec gives differ, so equal specs (and the kernels' inputs cached by spec) must tell them apart.
    negative_zeros: tuple = field(init=False, default=(), repr=False)

    def __repr__(self) -> str:
        inv = self.inv_freq
        shown = ", ".join(f"{v:.6g}" for v in inv[:3]) + (", ..." if len(inv) > 3 else "")
        axes = "" if self.pair_axis is None else ", M-RoPE"
        return (f"InvFreqs(dim={self.dim}, inv_freq=({shown}), attention_factor={self.attention_factor:.6g}, "
                f"angle={self.angle!r}{axes})")

    def __post_init__(self) -> None:
        def values(name: str, v: Any) -> np.ndarray:
            try:
                rank = np.ndim(v)
            except ValueError:  # (a ragged sequence: numpy cannot shape it)
                raise ValueError(f"{name} must be 1-D (dim/2 numbers); got a ragged {typed(v)}") from None
            if isinstance(v, (str, bytes)) or rank == 0:
                raise TypeError(f"{name} must be a 1-D sequence of numbers (dim/2 of them); got "
                                f"{typed(v)}")
            if rank != 1:  # (a sequence of the wrong shape: the wrong value, not the wrong type)
                raise ValueError(f"{name} must be 1-D (dim/2 numbers); got {np.ndim(v)}-D {typed(v)}")
            try:
                if np.iscomplexobj(np.asarray(v)):  # (a float64 conversion would drop the imaginary parts)
                    raise TypeError
                a = np.asarray(v, dtype=np.float64)
            except (TypeError, ValueError, OverflowError):
                raise TypeError(f"{name} must hold real numbers; got {brief(v)}") from None
            if a.size == 0:
                raise ValueError(f"{name} must hold at least one inverse frequency")
            bad = ~(np.isfinite(a) & (a >= 0) & (a <= F32_MAX))
            if bad.any():
                raise ValueError(f"{name} must hold finite numbers >= 0 (float32's range); got {a[bad][0]}")
            return a

        given = values("inv_freq", self.inv_freq)
        inv = given.astype(np.float32)
        object.__setattr__(self, "inv_freq", tuple(float(v) for v in inv))
        n = inv.size
        if self.inv_freq_exact is None:
            exact = given  # (as given: float64 frequencies keep their digits for the exact angle)
        else:
            exact = values("inv_freq_exact", self.inv_freq_exact)
            if exact.size != n:
                raise ValueError(f"inv_freq_exact must hold as many values as inv_freq ({n}); got {exact.size}")
        object.__setattr__(self, "inv_freq_exact", tuple(float(v) for v in exact))
        object.__setattr__(self, "negative_zeros", tuple(tuple(int(i) for i in np.flatnonzero(np.signbit(a)))
                                                         for a in (inv, exact)))
        object.__setattr__(self, "dim", 2 * n)
        if n > MAX_HEAD_DIM // 2:
            raise ValueError(f"inv_freq must hold at most {MAX_HEAD_DIM // 2} values; got {n}")
        check_positive("attention_factor", self.attention_factor)
        object.__setattr__(self, "attention_factor", float(np.float32(self.attention_factor)))
        if self.pair_axis is not None:
            ax = np.asarray(self.pair_axis)
            if ax.shape != (n,) or ax.dtype.kind not in "iu":
                raise ValueError(f"pair_axis must hold one integer axis per pair ({n}); got {brief(self.pair_axis)}")
            if ((ax < 0) | (ax >= MROPE_AXES)).any():
                raise ValueError(f"pair_axis entries must be 0, 1 or 2 (temporal, height, width); got "
                                 f"{int(ax[(ax < 0) | (ax >= MROPE_AXES)][0])}")
            object.__setattr__(self, "pair_axis", tuple(int(a) for a in ax))
        check_angle(self.angle)
        if self.angle == "exact":
            check_exact_range(exact, "its float64 inverse frequencies", zeros_allowed=True)
            if exact.max() >= 2 * math.pi and self.pair_axis is not None:
                raise ValueError(f"angle='exact' with M-RoPE needs every inverse frequency below 2 pi; got "
                                 f"{exact.max():.4g}")

    @property
    def mrope(self) -> bool:
        """Whether the pairs take their angles from M-RoPE's 3 position axes."""
        return self.pair_axis is not None

    @property
    def n_axes(self) -> int:
        """Position axes a token has: 3 for M-RoPE, else 1."""
        return MROPE_AXES if self.mrope else 1

    @property
    def magnitude(self) -> np.float32:
        """The float32 factor cos and sin are multiplied by (the attention factor)."""
        return np.float32(self.attention_factor)

    @property
    def position_scale(self) -> float:
        """1: the scaling is in the frequencies."""
        return 1.0

    @property
    def rows(self) -> int:
        """Positions it takes: [0, 2^24)."""
        return MAX_POSITION

    @property
    def needs_positions(self) -> bool:
        """True: every call gives its positions."""
        return True

    @cached_property
    def pair_axis_array(self) -> np.ndarray:
        """int32 [dim/2]: each pair's position axis (zeros without M-RoPE)."""
        return frozen(np.asarray(self.pair_axis if self.mrope else np.zeros(self.dim // 2), np.int32))

    def inv_freq_float32(self) -> np.ndarray:
        """inv_freq as float32 [dim/2]."""
        return np.array(self.inv_freq, np.float32)

    def inv_freq_float64(self) -> np.ndarray:
        """inv_freq_exact as float64 [dim/2]."""
        return np.array(self.inv_freq_exact, np.float64)

    def check_ids(self, ids: Any, name: str = "position_ids") -> np.ndarray:
        """float64 [N, 3] M-RoPE positions (integers in [0, 2^24)), or a
        TypeError / ValueError naming `name`."""
        a = np.asarray(ids)
        if a.ndim != 2 or a.shape[-1] != MROPE_AXES:
            raise ValueError(f"{name} must be [N, 3] positions (temporal, height, width); got {list(a.shape)}")
        return check_positions(name, a).reshape(a.shape).astype(np.float64)

    def angles(self, positions: Any) -> np.ndarray:
        """float64 [N, dim/2]: the angles of positions [N] (M-RoPE: [N, 3],
        each pair reading its axis) as the kernels form them ("exact":
        reduced to (-pi, pi], `exact_angles`)."""
        if not self.mrope:
            p = check_positions("positions", positions)
            return self.angles_at(self.scaled_positions(p), p)
        v = self.check_ids(positions, "positions")
        cols = v[:, self.pair_axis_array]
        if self.angle == "exact":  # each column's own position, reduced exactly
            whole = np.empty((len(v), self.dim // 2))
            for a in range(MROPE_AXES):
                on = self.pair_axis_array == a
                whole[:, on] = exact_angles(v[:, a], self.quarter_turns[on])
            return whole
        return (cols.astype(np.float32) * self.inv_freq32[None, :]).astype(np.float32).astype(np.float64)

def is_position_spec(spec: Any) -> bool:
    """Whether `spec` is a one-axis frequency spec (a `RopeFreqs`, or an
    `InvFreqs` without M-RoPE): one position per token."""
    return isinstance(spec, RopeFreqs) or (isinstance(spec, InvFreqs) and not spec.mrope)


@dataclass(frozen=True)
class AxialFreqs(FrequencySpec):
    """SAM2's 2-D axial frequencies (`compute_axial_cis`) for `vkrope.apply`,
    without the table: token t of a grid row-major `end_x` wide has x = t %
    end_x and y = t // end_x; its first dim/4 pairs turn by x * f, the next
    dim/4 by y * f, f = 1 / theta ** (arange(0, dim, 4)[: dim // 4] / dim)
    in float32. The table it stands for has end_x * end_y rows (`table()`);
    `repeat`, `exclude_last` and `positions` index them like a table's rows.
    end_x, end_y: ints >= 1 (a float of whole value, as SAM2's
    `RoPEAttention` passes `math.sqrt(N)`, is stored as its int).
    angle: "float32" (SAM2's float32 product) or "exact" (x or y times the
    float64 frequency, reduced exactly: within 2 ulp at any grid size; near
    cos / sin's zeros the error is instead absolute, under 2^-70, see the
    module docstring).
    """

    dim: int
    end_x: int
    end_y: int
    theta: float = 10000.0
    angle: str = "float32"

    def __post_init__(self) -> None:
        for name in ("end_x", "end_y"):  # (a float of whole value stored as the int it is)
            object.__setattr__(self, name, grid_side(name, getattr(self, name)))
        check_dim("dim", self.dim, 1)
        if self.dim % 4:
            raise ValueError(f"dim must be divisible by 4 (two axes of complex pairs); got {self.dim}")
        if self.end_x * self.end_y > MAX_POSITION:
            raise ValueError(f"end_x * end_y must be <= 2^24 (float32 coordinates); got "
                             f"{brief(self.end_x * self.end_y)}")
        check_positive("theta", self.theta)
        check_angle(self.angle)
        if self.angle == "exact":
            check_exact_range(self.inv_freq64, "theta and dim")

    @property
    def magnitude(self) -> np.float32:
        """The float32 factor cos and sin are multiplied by: 1 (SAM2 has none)."""
        return np.float32(1.0)

    @property
    def rows(self) -> int:
        """Rows of the table it stands for: end_x * end_y."""
        return self.end_x * self.end_y

    def inv_freq_float32(self) -> np.ndarray:
        """f [dim/4] as SAM2 computes it in float32."""
        e = np.arange(0, self.dim, 4, dtype=np.float32)[: self.dim // 4] / np.float32(self.dim)
        return np.float32(1.0) / pow32(self.theta, e)

    def inv_freq_float64(self) -> np.ndarray:
        """f [dim/4] in float64 (the exact angle's frequency)."""
        return 1.0 / pow64(self.theta, np.arange(0, self.dim, 4, dtype=np.float64)[: self.dim // 4] / self.dim)

    def angles(self, rows: Any) -> np.ndarray:
        """[len(rows), dim/2] angles of the given table rows (float32 angles as
        float64 numbers, or float64 products for "exact"); rows: integers
        in [0, end_x * end_y)."""
        r = check_positions("rows", rows)
        if r.size and r.max() >= self.rows:
            raise ValueError(f"rows must lie in [0, end_x * end_y = {self.rows}); got {int(r.max())}")
        coords = np.concatenate([np.repeat((r % self.end_x)[:, None], self.dim // 4, 1),
                                 np.repeat((r // self.end_x)[:, None], self.dim // 4, 1)], 1)
        if self.angle == "exact":
            return coords * np.tile(self.inv_freq64, 2)[None, :]
        f = np.tile(self.inv_freq32, 2)
        return (coords.astype(np.float32) * f[None, :]).astype(np.float32).astype(np.float64)

    def table(self) -> np.ndarray:
        """The (cos, sin)-interleaved float32 table [end_x * end_y, dim] it stands for."""
        a = self.angles(np.arange(self.rows))
        return np.stack([np.cos(a), np.sin(a)], -1).reshape(self.rows, self.dim).astype(np.float32)

    @cached_property
    def max_float32_angle(self) -> float:
        """The largest float32 angle of the grid: its largest coordinate
        times the largest frequency (the grid bounds both, so the value is
        the spec's, the same in every call)."""
        return float(np.float32(max(self.end_x, self.end_y) - 1) * self.inv_freq32.max())

    @property
    def axes(self) -> tuple[int, ...]:
        """(end_x, end_y)."""
        return (self.end_x, self.end_y)

    def as_nd(self) -> tuple["NdFreqs", np.ndarray]:
        """The same rotation as an N-D spec and its ids: two axes of dim/2
        channels (x, then y), the grid's (x, y) per table row
        (`apply(x, spec)` and `apply(x, nd, positions=ids)` agree to float32
        rounding; for `repeat` frames tile the ids, and excluded tokens
        take ids 0, which rotate by nothing: finite values equal in value (a
        -0.0 beside a negative value comes back +0.0), an inf in a pair NaN
        as the formula makes it, where `exclude_last` keeps it). A
        ValueError where angle='exact' and theta < 1 gives a frequency of
        2 pi or more, which the N-D exact kernel does not take."""
        from .nd_freqs import NdFreqs

        try:
            nd = NdFreqs((self.dim // 2, self.dim // 2), self.theta, angle=self.angle)
        except ValueError as e:  # (theta below 1: the N-D exact kernel keeps frequencies below 2 pi)
            raise ValueError(f"as_nd(): this AxialFreqs has no exact N-D twin: {e} "
                             "(AxialFreqs(..., angle='float32').as_nd() has one)") from None
        r = np.arange(self.rows)
        return nd, np.stack([r % self.end_x, r // self.end_x], -1).astype(np.float64)
