"""Frequency specs: RoPE frequencies computed in the shader instead of read
from a cos / sin table (`vkrope.RopeFreqs`; SAM2's `AxialFreqs`; N-D axial
`NdFreqs` for image and video transformers, with `grid_ids`).

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

`vkrope.YaRN` extends a RopeFreqs spec's context as Hugging Face's "yarn"
rope type and llama.cpp's rope_yarn do: each pair's inverse frequency is a
ramp-weighted blend of the scaled and unscaled ones, and cos / sin are
multiplied by an attention factor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from .exact_math import exact_angles, pow32, pow64, quarter_turns
from .runtime.dtypes import (TENSOR_DTYPES, as_dtype, asarray_hint, convert_hint, frozen, is_int, is_integer_dtype,
                             is_real_scalar, refuse_subclass, without_repeats)
from .words import brief, typed

ANGLES = ("float32", "exact")
MAX_POSITION = 1 << 24  # float32 positions are exact below this
# The widest head a spec may rotate (64 Ki channels: past any model's; its frequencies are made on the host, so a
# config's head_dim of 2^28 would otherwise allocate gigabytes before a check could name it).
MAX_HEAD_DIM = 1 << 16
MAX_INT = 2**64 - 1  # (numpy's widest int: no count, width, length or position reaches it; ints bounded by it
# print in every message and repr, where Python refuses one of more than 4300 digits)
MAX_PAIRS = 2**32 - 2  # pairs one call rotates: the interleaved kernel numbers a call's pairs with 32-bit integers
# (its x_base), and the table kernel's calls take the same bound (values past 2^32 it reaches by binding offsets)


def _check_int(name: str, value: Any, minimum: int, maximum: int = MAX_INT, most: str = "2^64 - 1") -> None:
    """An int in [minimum, maximum] (`most`: the bound as the message says it; by default MAX_INT, past which a
    spec holding it could not print its repr), named `name` in the errors."""
    if not is_int(value):
        raise TypeError(f"{name} must be an int; got {typed(value)}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}; got {brief(value)}")
    if value > maximum:
        raise ValueError(f"{name} must be at most {most}; got {brief(value)}")


_HEAD_BOUND = f"{MAX_HEAD_DIM} (a head's channels)"


def check_head_dim(name: str, value: int) -> None:
    """A head's width (an int already) of at most MAX_HEAD_DIM channels."""
    if value > MAX_HEAD_DIM:
        raise ValueError(f"{name} must be at most {_HEAD_BOUND}; got {brief(value)}")


def _check_dim(name: str, value: Any, minimum: int) -> None:
    _check_int(name, value, minimum, MAX_HEAD_DIM, _HEAD_BOUND)


F32_TINY, F32_MAX = float(np.finfo(np.float32).tiny), float(np.finfo(np.float32).max)


def _f32_normal(value: Any) -> Any:
    """Whether value (a number or an array) lies in float32's normal range:
    float32 keeps it, neither 0, subnormal nor inf (NaN is not)."""
    try:
        v = np.asarray(value, np.float64)
    except OverflowError:  # an int past float64: past float32 too
        return np.zeros(np.shape(value), bool)
    return (v >= F32_TINY) & (v <= F32_MAX)


def finite(value: Any) -> bool:
    """Whether a real scalar is finite in float64 (an int past float64's range is not: float() raises on it)."""
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _check_real(name: str, value: Any) -> None:
    if isinstance(value, (bool, np.bool_)) or not is_real_scalar(value):
        raise TypeError(f"{name} must be a real number (a Python or numpy int or float); got {typed(value)}")


def _check_positive(name: str, value: Any) -> None:
    # The frameworks' float32 arithmetic uses these numbers: one that float32
    # rounds to 0, a subnormal or inf would turn every angle into NaN.
    _check_real(name, value)
    if not _f32_normal(value):
        raise ValueError(f"{name} must be a positive number in float32's normal range [{F32_TINY:.3g}, "
                         f"{F32_MAX:.3g}]; got {brief(value)}")


def check_angle(angle: Any) -> None:
    """A spec's or a model's `angle`: one of ANGLES, else a ValueError naming it (an array too: no truth value of
    its comparison asked)."""
    if not (isinstance(angle, str) and angle in ANGLES):
        raise ValueError(f"angle must be one of {ANGLES}; got {brief(angle)}")


EXACT_MIN_FREQ = 2.0**-64  # the exact angle's quarter turns keep 94 fractional bits: 30 and more for f >= 2^-64


def _check_exact_range(spec: Any, names: str) -> None:
    # Below 2^-70 the exact angle's fixed-point frequency keeps fewer bits than
    # float32 has, and sin of the tiny angle loses its ulp bound.
    f = float(np.min(spec.inv_freq64))
    if f < EXACT_MIN_FREQ:
        raise ValueError(f"angle='exact' needs every inverse frequency >= 2^-64; {names} give {f:.3g}")


def check_positions(name: str, positions: Any) -> np.ndarray:
    """int64 [n]: integer positions (or rows) in [0, 2^24), or a TypeError /
    ValueError naming `name`."""
    p = np.asarray(positions)
    if not is_integer_dtype(p.dtype):
        raise TypeError(f"{name} must be integers; got dtype {p.dtype}")
    _check_position_range(name, without_repeats(p))  # (a broadcast array's repeats are not read)
    return p.astype(np.int64).reshape(-1)


def position_range_error(name: str, value: Any) -> ValueError:
    """The error of a position outside [0, 2^24), naming `name` and the value."""
    return ValueError(f"{name} must lie in [0, 2^24) with a frequency spec (float32 holds them exactly); got {value}")


def _check_position_range(name: str, p: np.ndarray) -> None:
    """Integer positions `p` in [0, 2^24), or a ValueError naming `name` and the first one outside."""
    if p.dtype.kind == "u" and p.size and p.max() >= MAX_POSITION:  # (before a cast to int64 wraps it)
        raise position_range_error(name, int(p.max()))
    p = p.astype(np.int64).reshape(-1)
    bad = p[(p < 0) | (p >= MAX_POSITION)]
    if bad.size:
        raise position_range_error(name, int(bad[0]))


def check_position_ids(position_ids: Any, mrope: bool, name: str = "position_ids") -> np.ndarray:
    """int64 [B, S] positions, or with `mrope` [3, B, S] (temporal, height,
    width; [B, S] or [1, B, S] is text, all three axes equal, as transformers
    expands it; a 1-D [4 * S] is llama.cpp's t | h | w | e layout for one item);
    each in [0, 2^24), read-only (a broadcast axis stays one). Else a
    TypeError / ValueError naming `name`."""
    if not isinstance(position_ids, np.ndarray):
        raise TypeError(f"{name} must be a numpy integer array [B, S]{' (or [3, B, S] or [1, B, S] for M-RoPE)' if mrope else ''}; "
                        f"got {type(position_ids).__name__}{asarray_hint(name, position_ids)}")
    refuse_subclass(name, position_ids)  # (a mask would be ignored: as every op's other position arguments)
    p = position_ids
    if not is_integer_dtype(p.dtype):
        raise TypeError(f"{name} must be integers; got dtype {p.dtype}")
    if mrope:
        if p.ndim == 1:  # llama.cpp's ggml_rope_multi layout [4 * S]: t | h | w | e (e unused here)
            if p.size % 4:
                raise ValueError(f"{name}: a 1-D M-RoPE position array is llama.cpp's [4 * S] layout "
                                 f"(t | h | w | e); got {p.size} values")
            p = p.reshape(4, 1, p.size // 4)[:MROPE_AXES]
        if p.ndim == 2:
            p = np.broadcast_to(p, (MROPE_AXES,) + p.shape)
        if p.ndim == 3 and p.shape[0] == 1:  # (one axis for all three: the modules' position_ids.expand(3, -1, -1))
            p = np.broadcast_to(p, (MROPE_AXES,) + p.shape[1:])
        if p.ndim != 3 or p.shape[0] != MROPE_AXES:
            four = p.ndim == 3 and p.shape[0] == MROPE_AXES + 1
            raise ValueError(f"{name} must be [3, B, S] (temporal, height, width), [1, B, S] or [B, S] for M-RoPE; got "
                             f"{list(position_ids.shape)}" + (
                                 " (transformers 5's M-RoPE text models, Qwen2-VL's to Qwen3.5's, take [4, B, S], "
                                 "text then temporal, height, width, and give their rotary module "
                                 "position_ids[1:]: pass that)" if four else ""))
    elif p.ndim != 2:
        raise ValueError(f"{name} must be [B, S]; got {list(p.shape)}"
                         + (" (positions per axis are M-RoPE's; this RoPE takes one position axis)"
                            if p.ndim == 3 else ""))
    small = without_repeats(p)  # (a broadcast array's repeats are neither read nor copied)
    _check_position_range(name, small)
    return np.broadcast_to(np.asarray(small, np.int64), p.shape)


def _check_number(name: str, value: Any, low: float, high: float) -> None:
    _check_real(name, value)
    if not (low <= float(np.clip(value, low - 1, high + 1)) <= high):  # clip first: an int past float64 is out too
        raise ValueError(f"{name} must be a finite number in [{low}, {high}]; got {brief(value)}")


@dataclass(frozen=True)
class YaRN:
    """YaRN context extension for `RopeFreqs(dim, base, scale=factor, yarn=YaRN(...))`,
    as Hugging Face's "yarn" rope type and llama.cpp's rope_yarn compute it.

    original_context: the context the model was trained on (HF
    original_max_position_embeddings, llama.cpp n_ctx_orig); beta_fast,
    beta_slow: the rotation counts bounding the ramp (beta_fast below
    beta_slow turns it around, which HF computes and only warns about, and
    from_hf reads so; RopeFreqs refuses the empty ramp that mostly makes);
    ext_factor: in [0, 1], how much of the ramp blends back to the unscaled
    frequencies (llama.cpp's; HF's is 1; 0 is plain linear scaling);
    attn_factor: multiplies the magnitude (llama.cpp's; HF's
    attention_factor A is attn_factor = A / (0.1 ln(scale) + 1)); truncate:
    floor / ceil the ramp's ends (HF's truncate, llama.cpp always does).

    Pair i's inverse frequency: with extrap = 1 / base ** (2i / dim) and
    interp = 1 / (scale * base ** (2i / dim)), low / high the correction
    dims of beta_fast / beta_slow (dim * ln(original_context / (beta * 2
    pi)) / (2 ln base), clamped to [0, dim - 1]; high += 0.001 when they
    are equal) and mix = (1 - clamp((i - low) / (high - low), 0, 1)) *
    ext_factor: interp * (1 - mix) + extrap * mix, each step in float32 as
    HF does (the float32 power correctly rounded); freq_factors, if
    any, then divide it (llama.cpp divides both terms first, the same in
    exact arithmetic). RopeFreqs refuses a spec whose ramp is empty (low
    above high: an original_context of a few tokens, or of tens of billions and
    more (by the base and head width); HF and
    llama.cpp blend oppositely there), a scale below 1 (HF's validator only
    warns, and from_hf reads such a factor as HF computes it) and a base of 1 or less (the ramp divides by ln(base)). cos and sin are multiplied by `magnitude`: attn_factor *
    (0.1 ln(scale) + 1) when scale > 1 and ext_factor != 0, else
    attn_factor (HF's get_mscale and llama.cpp's rope_yarn agree on it).
    """

    original_context: int
    beta_fast: float = 32.0
    beta_slow: float = 1.0
    ext_factor: float = 1.0
    attn_factor: float = 1.0
    truncate: bool = True

    def __post_init__(self) -> None:
        _check_int("original_context", self.original_context, 1)
        _check_positive("beta_fast", self.beta_fast)
        _check_positive("beta_slow", self.beta_slow)
        _check_number("ext_factor", self.ext_factor, 0.0, 1.0)
        _check_positive("attn_factor", self.attn_factor)
        if not isinstance(self.truncate, (bool, np.bool_)):
            raise TypeError(f"truncate must be a bool; got {typed(self.truncate)}")

    def ramp_ends(self, dim: int, base: float) -> tuple[float, float]:
        """(low, high): the pair indices where the blend starts and ends."""
        def corr_dim(rotations: float) -> float:
            return dim * math.log(self.original_context / (rotations * 2 * math.pi)) / (2 * math.log(base))

        low, high = corr_dim(self.beta_fast), corr_dim(self.beta_slow)
        if self.truncate:
            low, high = math.floor(low), math.ceil(high)
        return max(low, 0), min(high, dim - 1)

    def mix(self, dim: int, base: float, dtype: Any = np.float32) -> np.ndarray:
        """[dim/2] the weight of the unscaled frequency, in `dtype` steps; for
        a ramp whose low end lies above its high end (RopeFreqs refuses it),
        the weights transformers' ramp gives there, turned around (from_hf
        reads yarn so where beta_fast is below beta_slow)."""
        low, high = self.ramp_ends(dim, base)
        if low == high:
            high += 0.001  # HF's guard (llama.cpp's max(0.001, high - low) is the same for high >= low)
        t = as_dtype(dtype).type
        ramp = np.clip((np.arange(dim // 2, dtype=t) - t(low)) / t(high - low), t(0), t(1))
        return (t(1) - ramp) * t(self.ext_factor)

    def magnitude(self, scale: float) -> float:
        """The factor cos and sin are multiplied by (float64)."""
        if scale > 1 and np.float32(self.ext_factor) != 0:  # llama.cpp: float ext_factor != 0
            return float(self.attn_factor) * (0.1 * math.log(scale) + 1.0)
        return float(self.attn_factor)


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
        return (t[:, None] * self.inv_freq32[None, :]).astype(np.float32).astype(np.float64)

    def table(self, positions: Any) -> tuple[np.ndarray, np.ndarray]:
        """(cos, sin) float32 [len(positions), dim/2]: the cache this spec
        stands for (float64 cos / sin of `angles`, rounded once, then times
        `magnitude` in float32, as Hugging Face scales its cache)."""
        a = self.angles(positions)
        m = self.magnitude
        return (np.cos(a).astype(np.float32) * m).astype(np.float32), (np.sin(a).astype(np.float32) * m).astype(np.float32)


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
        _check_dim("dim", self.dim, 2)
        if self.dim % 2:
            raise ValueError(f"dim must be even and >= 2; got {self.dim}")
        _check_positive("base", self.base)
        _check_positive("scale", self.scale)
        check_angle(self.angle)
        if self.freq_factors is not None:
            try:
                ff = np.asarray(self.freq_factors, dtype=np.float64)
            except OverflowError:
                raise ValueError("freq_factors must be positive numbers in float32's normal range; got an int "
                                 "past float64") from None
            if ff.shape != (self.dim // 2,):
                raise ValueError(f"freq_factors must hold dim/2 = {self.dim // 2} values; got shape {ff.shape}")
            if not _f32_normal(ff).all():
                raise ValueError(f"freq_factors must be positive numbers in float32's normal range; got "
                                 f"{ff[~_f32_normal(ff)][:3].tolist()} among them")
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
            if not _f32_normal(m):
                raise ValueError(f"yarn's attn_factor gives a cos / sin factor of {m}, outside float32's normal "
                                 f"range; got attn_factor = {self.yarn.attn_factor}")
        if self.angle == "exact":
            _check_exact_range(self, "base, scale and freq_factors")

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


MROPE_AXES = 3  # M-RoPE's position axes: temporal, height, width


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

    inv_freq: Any = ()  # stored as a tuple of float32 values (as Python floats)
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
        _check_positive("attention_factor", self.attention_factor)
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
            nonzero = exact[exact > 0]
            if nonzero.size and nonzero.min() < EXACT_MIN_FREQ:
                raise ValueError(f"angle='exact' needs every nonzero inverse frequency >= 2^-64; got {nonzero.min():.3g}")
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
        for name in ("end_x", "end_y"):
            _check_int(name, getattr(self, name), 1)
        _check_dim("dim", self.dim, 1)
        if self.dim % 4:
            raise ValueError(f"dim must be divisible by 4 (two axes of complex pairs); got {self.dim}")
        if self.end_x * self.end_y > MAX_POSITION:
            raise ValueError(f"end_x * end_y must be <= 2^24 (float32 coordinates); got "
                             f"{brief(self.end_x * self.end_y)}")
        _check_positive("theta", self.theta)
        check_angle(self.angle)
        if self.angle == "exact":
            _check_exact_range(self, "theta and dim")

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
        try:
            nd = NdFreqs((self.dim // 2, self.dim // 2), self.theta, angle=self.angle)
        except ValueError as e:  # (theta below 1: the N-D exact kernel keeps frequencies below 2 pi)
            raise ValueError(f"as_nd(): this AxialFreqs has no exact N-D twin: {e} "
                             "(AxialFreqs(..., angle='float32').as_nd() has one)") from None
        r = np.arange(self.rows)
        return nd, np.stack([r % self.end_x, r // self.end_x], -1).astype(np.float64)


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
    of float32 cos / sin. (Flux's module rounds its ids to float32 first:
    pass float32 ids to match it where they are not integers.) Every
    frequency must be below 2 pi (theta >= 1 always is).
    angle="float32": the float32 product of the id rounded to float32 and
    the float32 frequency (diffusers' float32 path: HunyuanVideo,
    CogVideoX, Qwen-Image, and any model run on MPS).
    """

    axes_dim: tuple[int, ...] = ()
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
            _check_int(f"axes_dim[{a}]", d, 2, MAX_HEAD_DIM, _HEAD_BOUND)  # (the sum's bound, said of the axis)
            if d % 2:
                raise ValueError(f"axes_dim[{a}] must be even (pairs of channels); got {d}")
        if sum(int(d) for d in axes) > MAX_HEAD_DIM:
            raise ValueError(f"axes_dim must sum to at most {MAX_HEAD_DIM} channels (a head); got "
                             f"{brief(sum(int(d) for d in axes))}")
        object.__setattr__(self, "axes_dim", tuple(int(d) for d in axes))
        thetas = _per_axis("theta", self.theta, len(axes))
        per_axis = isinstance(self.theta, (tuple, list)) or (isinstance(self.theta, np.ndarray) and self.theta.ndim)
        for a, t in enumerate(thetas):
            _check_positive(f"theta[{a}]" if per_axis else "theta", t)
        object.__setattr__(self, "theta", tuple(float(t) for t in thetas))
        if not isinstance(self.interleaved, (bool, np.bool_)):
            raise TypeError(f"interleaved must be a bool; got {typed(self.interleaved)}")
        if not isinstance(self.angle, str):
            raise TypeError(f"angle must be a str, one of {ND_ANGLES}; got {typed(self.angle)}")
        if self.angle not in ND_ANGLES:
            raise ValueError(f"angle must be one of {ND_ANGLES}; got {brief(self.angle)}")
        object.__setattr__(self, "dim", sum(self.axes_dim))
        if self.angle == "exact":
            _check_exact_range(self, "theta and axes_dim")
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
        if ids.dtype == np.bool_ or ids.dtype.kind not in "iuf" and ids.dtype not in TENSOR_DTYPES:
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
        return (cols.astype(np.float32) * self.inv_freq32[None, :]).astype(np.float32).astype(np.float64)

    def cos_sin(self, ids: Any) -> tuple[np.ndarray, np.ndarray]:
        """(cos, sin) float32 [N, dim] (per-item ids: [B * N, dim]): what diffusers' rotary modules return
        for these ids, to the angle's rounding (`angles`: an "exact" id is kept to 2^-32, so the sine of an
        id of 2^-33 is 0, not diffusers' 1e-13) (each pair's value twice: interleaved, as
        `repeat_interleave_real`; rotate-half, the halves concatenated).
        For a plot, a check, or a table path: `vkrope.apply(x, np.stack([cos[:, ::2],
        sin[:, ::2]], -1))` for interleaved pairs (`apply_nd` itself needs no table)."""
        a = self.angles(ids)
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
        _check_int(f"shape[{a}]", n, 0)
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
            _check_real(f"{name}[{a}]", v)
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
