"""The bounds and checks every frequency spec shares (vkrope/freqs.py, yarn.py, nd_freqs.py) and the ops
read: a head's width, a position's range (float32 positions are exact below 2^24), the angle modes, and the
checks of integers, reals and position ids, each a TypeError / ValueError naming the argument."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .runtime.dtypes import asarray_hint, is_int, is_integer_dtype, is_real_scalar, refuse_subclass, without_repeats
from .words import brief, typed

ANGLES = ("float32", "exact")
MROPE_AXES = 3  # M-RoPE's position axes: temporal, height, width
MAX_POSITION = 1 << 24  # float32 positions are exact below this
# The widest head a spec may rotate (64 Ki channels: past any model's; its frequencies are made on the host, so a
# config's head_dim of 2^28 would otherwise allocate gigabytes before a check could name it).
MAX_HEAD_DIM = 1 << 16
MAX_INT = 2**64 - 1  # (numpy's widest int: no count, width, length or position reaches it; ints bounded by it
# print in every message and repr, where Python refuses one of more than 4300 digits)
MAX_PAIRS = 2**32 - 2  # pairs one call rotates: the interleaved kernel numbers a call's pairs with 32-bit integers
# (its x_base), and the table kernel's calls take the same bound (values past 2^32 it reaches by binding offsets)


def check_int(name: str, value: Any, minimum: int, maximum: int = MAX_INT, most: str = "2^64 - 1") -> None:
    """An int in [minimum, maximum] (`most`: the bound as the message says it; by default MAX_INT, past which a
    spec holding it could not print its repr), named `name` in the errors."""
    if not is_int(value):
        raise TypeError(f"{name} must be an int; got {typed(value)}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}; got {brief(value)}")
    if value > maximum:
        raise ValueError(f"{name} must be at most {most}; got {brief(value)}")


def grid_side(name: str, value: Any) -> int:
    """A side of SAM2's axial grid (`end_x`, `end_y`) as an int >= 1: an int, or a float of whole value, as SAM2's
    `RoPEAttention` passes `math.sqrt(N)` when the token count changes; named `name` in the errors."""
    if isinstance(value, (float, np.floating)):  # (its own is_integer: a long double's is not float64's)
        if not (math.isfinite(value) and value.is_integer()):
            raise ValueError(f"{name} must be a whole number (an int, or a float of whole value as SAM2's "
                             f"math.sqrt(N) of a square N); got {typed(value)}")
        n = int(value)  # (exact: a whole float; compared as an int, as numpy would round MAX_INT to 2^64)
        if not 1 <= n <= MAX_INT:  # (the message shows the float given, not the int it became)
            raise ValueError(f"{name} must be >= 1 and at most 2^64 - 1; got {typed(value)}")
        return n
    check_int(name, value, 1)
    return int(value)


HEAD_BOUND = f"{MAX_HEAD_DIM} (a head's channels)"


def check_head_dim(name: str, value: int) -> None:
    """A head's width (an int already) of at most MAX_HEAD_DIM channels."""
    if value > MAX_HEAD_DIM:
        raise ValueError(f"{name} must be at most {HEAD_BOUND}; got {brief(value)}")


def check_dim(name: str, value: Any, minimum: int) -> None:
    """A head or rotary width: an int in [minimum, MAX_HEAD_DIM], else a TypeError / ValueError naming `name`."""
    check_int(name, value, minimum, MAX_HEAD_DIM, HEAD_BOUND)


F32_TINY, F32_MAX = float(np.finfo(np.float32).tiny), float(np.finfo(np.float32).max)


def f32_normal(value: Any) -> Any:
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


def check_real(name: str, value: Any) -> None:
    """A real scalar (a Python or numpy int or float, not a bool), else a TypeError naming `name`."""
    if isinstance(value, (bool, np.bool_)) or not is_real_scalar(value):
        raise TypeError(f"{name} must be a real number (a Python or numpy int or float); got {typed(value)}")


def check_positive(name: str, value: Any) -> None:
    """A real scalar in float32's normal range, else a TypeError / ValueError naming `name`."""
    # The frameworks' float32 arithmetic uses these numbers: one that float32
    # rounds to 0, a subnormal or inf would turn every angle into NaN.
    check_real(name, value)
    if not f32_normal(value):
        # (the bounds in full: 3.4028235e38, float32's max as numpy prints it, lies past the float64 value of it)
        raise ValueError(f"{name} must be a positive number in float32's normal range [{F32_TINY!r}, "
                         f"{F32_MAX!r}]; got {brief(value)}")


def check_angle(angle: Any) -> None:
    """A spec's or a model's `angle`: one of ANGLES, else a ValueError naming it (an array too: no truth value of
    its comparison asked)."""
    if not (isinstance(angle, str) and angle in ANGLES):
        raise ValueError(f"angle must be one of {ANGLES}; got {brief(angle)}")


EXACT_MIN_FREQ = 2.0**-64  # the exact angle's quarter turns keep 94 fractional bits: 30 and more for f >= 2^-64


def check_exact_range(freqs: Any, names: str, zeros_allowed: bool = False) -> None:
    """angle='exact' needs every float64 inverse frequency in `freqs` (with `zeros_allowed` every nonzero one:
    a zero turns nothing) >= EXACT_MIN_FREQ, else a ValueError saying what `names` give. Below it the
    fixed-point frequency keeps fewer bits than float32 has, and sin of the tiny angle loses its ulp bound."""
    f = np.asarray(freqs, np.float64)
    if zeros_allowed:
        f = f[f != 0]
    if f.size and f.min() < EXACT_MIN_FREQ:
        nonzero = "nonzero " if zeros_allowed else ""
        raise ValueError(f"angle='exact' needs every {nonzero}inverse frequency >= 2^{math.log2(EXACT_MIN_FREQ):.0f}; "
                         f"{names} give {f.min():.3g}; use angle='float32'")


def check_positions(name: str, positions: Any) -> np.ndarray:
    """int64 [n]: integer positions (or rows) in [0, 2^24), or a TypeError /
    ValueError naming `name`."""
    p = np.asarray(positions)
    if not is_integer_dtype(p.dtype):
        raise TypeError(f"{name} must be integers; got dtype {p.dtype}")
    check_position_range(name, without_repeats(p))  # (a broadcast array's repeats are not read)
    return p.astype(np.int64).reshape(-1)


def position_range_error(name: str, value: Any) -> ValueError:
    """The error of a position outside [0, 2^24), naming `name` and the value."""
    return ValueError(f"{name} must lie in [0, 2^24) with a frequency spec (float32 holds them exactly); got {value}")


def check_position_range(name: str, p: np.ndarray) -> None:
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
                         + (" (positions per axis are M-RoPE's; this spec, read without M-RoPE sections, turns "
                            "every pair by one position per token: pass the tokens' one position, as text tokens "
                            "have)" if p.ndim == 3 else ""))
    small = without_repeats(p)  # (a broadcast array's repeats are neither read nor copied)
    check_position_range(name, small)
    return np.broadcast_to(np.asarray(small, np.int64), p.shape)


def check_number(name: str, value: Any, low: float, high: float) -> None:
    """A real scalar in [low, high] (finite), else a TypeError / ValueError naming `name`."""
    check_real(name, value)
    if not (low <= float(np.clip(value, low - 1, high + 1)) <= high):  # clip first: an int past float64 is out too
        raise ValueError(f"{name} must be a finite number in [{low}, {high}]; got {brief(value)}")
