"""Checking and normalising the arguments of `apply` / `apply_reference`.

Everything here runs on the host before any GPU work. Wrong types or dtypes
raise `TypeError`, wrong shapes, sizes and values raise `ValueError`; each
message names the argument, what was given and what was expected.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

import numpy as np

STORAGE_CHOICES = ("auto", "buffer", "texture3d")
X_DTYPES = (np.dtype(np.float32), np.dtype(np.float16))
REAL_FREQS_DTYPES = (np.dtype(np.float32), np.dtype(np.float16), np.dtype(np.float64))
COMPLEX_FREQS_DTYPES = (np.dtype(np.complex64), np.dtype(np.complex128))
# The shader indexes pairs with 32-bit unsigned integers.
MAX_PAIRS = 2**32 - 2


@dataclass
class Request:
    """One validated call: everything the op layer and the reference need."""

    x: Any  # the caller's numpy array (any memory layout) or DeviceArray, float32 or float16
    freqs: np.ndarray  # the caller's freqs, real (.., interleaved) or complex
    freqs_pairs: np.ndarray  # freqs as float64-exact real pairs [Nf, C/2, 2] (dtype of the caller's, or float32/64 for complex)
    n_tokens: int  # N
    channels: int  # C
    n_freq_rows: int  # Nf
    token_rows: np.ndarray  # int64 [N]: freqs row of each token, -1 = pass through
    positions: np.ndarray | None  # int32 [N] when the caller gave positions
    n_rot: int  # tokens (from the start) that use row n % Nf, without positions
    inverse: bool
    storage: str
    out: Any  # numpy array, DeviceArray or None

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of x (and of the result)."""
        return tuple(self.x.shape)

    @property
    def dtype(self) -> np.dtype:
        """dtype of x (and of the result)."""
        return self.x.dtype

    @property
    def rows(self) -> int:
        """All leading axes times N: the number of token rows in x."""
        return int(self.x.size // self.channels) if self.channels else 0


def _describe(a: Any) -> str:
    if isinstance(a, np.ndarray):
        return f"an array of shape {a.shape} and dtype {a.dtype}"
    return f"{type(a).__name__} {a!r}"[:200]


def _int_arg(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int >= {minimum}; got {_describe(value)}")
    value = operator.index(value)
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}; got {value}")
    return value


def _refuse_subclass(name: str, a: Any) -> None:
    """np.matrix and masked arrays are ndarrays whose meaning numpy's plain
    functions do not keep (matrix reshapes stay 2-D, masks are dropped):
    refuse them rather than compute something else."""
    if isinstance(a, np.matrix):
        raise TypeError(f"{name} must be a plain numpy array, not np.matrix; pass np.asarray({name})")
    if isinstance(a, np.ma.MaskedArray):
        raise TypeError(
            f"{name} must be a plain numpy array, not a masked array (vkrope would ignore the mask); pass "
            f"{name}.filled(value) with the value masked elements should hold"
        )


def check_plain_array(name: str, a: Any) -> np.ndarray:
    """`a` must be a plain numpy array (not a matrix or masked array)."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{name} must be a numpy array; got {_describe(a)}")
    _refuse_subclass(name, a)
    return a


def check_array(a: Any, name: str, storage: str) -> Any:
    """An array to upload (`Device.asarray`): a plain numpy array (or a
    DeviceArray) of float32 or float16, with at least one axis (two for
    texture3d, whose images hold [..., N, C])."""
    from .array import DeviceArray  # noqa: PLC0415  (array imports nothing of ours)

    if isinstance(a, DeviceArray):
        if a.released:
            raise ValueError(f"{name} is a released DeviceArray")
        return a
    check_plain_array(name, a)
    if a.dtype not in X_DTYPES:
        raise TypeError(f"{name} must have dtype float32 or float16; got {a.dtype} (convert with {name}.astype(np.float32))")
    if a.ndim < (2 if storage == "texture3d" else 1):
        raise ValueError(f"{name} must have at least {2 if storage == 'texture3d' else 1} axes for storage "
                         f"{storage!r}; got shape {a.shape}")
    return a


def check_x(x: Any, name: str = "x") -> Any:
    """x (a numpy array or a DeviceArray) of float32 or float16 with at least
    2 axes and even C."""
    from .array import DeviceArray  # noqa: PLC0415  (array imports nothing of ours)

    if isinstance(x, DeviceArray):
        if x.released:
            raise ValueError(f"{name} is a released DeviceArray")
    elif not isinstance(x, np.ndarray):
        raise TypeError(f"{name} must be a numpy array of float32 or float16; got {_describe(x)}")
    else:
        _refuse_subclass(name, x)
    if x.dtype not in X_DTYPES:
        raise TypeError(
            f"{name} must have dtype float32 or float16; got {x.dtype} "
            f"(convert with {name}.astype(np.float32))"
        )
    if x.ndim < 2:
        raise ValueError(f"{name} must have at least 2 axes [..., N, C]; got shape {x.shape}")
    if x.shape[-1] % 2:
        raise ValueError(
            f"{name} must have an even last axis C (interleaved real/imaginary pairs); got C = {x.shape[-1]} "
            f"in shape {x.shape}"
        )
    if x.size // 2 > MAX_PAIRS:  # noqa: SIM102
        raise ValueError(f"{name} has {x.size} values; vkrope handles at most {2 * MAX_PAIRS} per call")
    return x


def check_request(
    x: Any,
    freqs: Any,
    *,
    out: Any = None,
    inverse: Any = False,
    repeat: Any = 1,
    exclude_last: Any = 0,
    positions: Any = None,
    storage: Any = "auto",
) -> Request:
    """Validate every argument of `apply` and return the normalised `Request`."""
    x = check_x(x)
    n_tokens, channels = int(x.shape[-2]), int(x.shape[-1])
    half = channels // 2

    if not isinstance(storage, str):
        raise TypeError(f"storage must be one of {STORAGE_CHOICES}; got {_describe(storage)}")
    if storage not in STORAGE_CHOICES:
        raise ValueError(f"storage must be one of {STORAGE_CHOICES}; got {storage!r}")
    if not isinstance(inverse, (bool, np.bool_)):
        raise TypeError(f"inverse must be a bool; got {_describe(inverse)}")
    repeat = _int_arg("repeat", repeat, 1)
    exclude_last = _int_arg("exclude_last", exclude_last, 0)
    if exclude_last > n_tokens:
        raise ValueError(f"exclude_last must be <= N = {n_tokens} (x shape {x.shape}); got {exclude_last}")

    # --- freqs ------------------------------------------------------------
    if not isinstance(freqs, np.ndarray):
        raise TypeError(f"freqs must be a numpy array (float32, float16 or complex); got {_describe(freqs)}")
    _refuse_subclass("freqs", freqs)
    if freqs.dtype in COMPLEX_FREQS_DTYPES:
        per_row = half
        pairs_dtype = np.float64 if freqs.dtype == np.complex128 else np.float32
        form = f"complex [Nf, C/2] = [Nf, {half}]"
    elif freqs.dtype in REAL_FREQS_DTYPES:
        per_row = channels
        pairs_dtype = freqs.dtype
        form = f"real [Nf, C] = [Nf, {channels}] (or [1, Nf, C/2, 2])"
    else:
        raise TypeError(
            f"freqs must have dtype float32, float16, float64, complex64 or complex128; got {freqs.dtype}"
        )
    if per_row == 0:
        if freqs.size:
            raise ValueError(f"freqs must be empty when C = 0; got {freqs.size} values")
        n_freq_rows = 0
    else:
        if freqs.size % per_row:
            raise ValueError(
                f"freqs must hold whole rows of {per_row} values ({form}); got {freqs.size} values "
                f"in shape {freqs.shape} for x of shape {x.shape}"
            )
        n_freq_rows = freqs.size // per_row

    # --- token -> freqs row ---------------------------------------------
    pos32: np.ndarray | None = None
    n_rot = n_tokens - exclude_last
    if positions is not None:
        if repeat != 1 or exclude_last != 0:
            raise ValueError(
                f"positions cannot be combined with repeat or exclude_last (got repeat={repeat}, "
                f"exclude_last={exclude_last}); express them in positions (-1 = pass through)"
            )
        if not isinstance(positions, np.ndarray):
            raise TypeError(f"positions must be an integer numpy array of shape [N] = [{n_tokens}]; got {_describe(positions)}")
        _refuse_subclass("positions", positions)
        if positions.dtype == np.bool_ or not np.issubdtype(positions.dtype, np.integer):
            raise TypeError(f"positions must be an integer array of shape [N] = [{n_tokens}]; got dtype {positions.dtype}")
        if positions.shape != (n_tokens,):
            raise ValueError(f"positions must have shape [N] = ({n_tokens},); got {positions.shape}")
        # With C = 0 the freqs are empty whatever Nf is: only -1 is out of reach then.
        bad = positions[(positions < -1) | ((positions >= n_freq_rows) if per_row else False)]
        if bad.size:
            raise ValueError(
                f"positions entries must lie in [-1, Nf) = [-1, {n_freq_rows}) (Nf = freqs rows); got {int(bad[0])}"
            )
        pos32 = np.ascontiguousarray(positions, dtype=np.int32)
        token_rows = pos32.astype(np.int64)
    else:
        if n_rot != repeat * n_freq_rows and per_row:  # C = 0: nothing to rotate, any empty freqs do
            raise ValueError(
                f"freqs has {n_freq_rows} rows ({freqs.size} values in shape {freqs.shape}, {form}); expected "
                f"(N - exclude_last) / repeat = ({n_tokens} - {exclude_last}) / {repeat} rows so that every "
                f"rotated token has one (x shape {x.shape})"
            )
        token_rows = np.full(n_tokens, -1, dtype=np.int64)
        if n_freq_rows:
            token_rows[:n_rot] = np.arange(n_rot) % n_freq_rows

    # --- out --------------------------------------------------------------
    from .array import DeviceArray  # noqa: PLC0415

    if out is not None:
        if isinstance(x, DeviceArray) != isinstance(out, DeviceArray):
            want = "a DeviceArray (x is one)" if isinstance(x, DeviceArray) else "a numpy array (x is one)"
            raise TypeError(f"out must be {want}; got {_describe(out)}")
        if isinstance(out, DeviceArray):
            if out.released:
                raise ValueError("out is a released DeviceArray")
            if out.device is not x.device:
                raise ValueError("out lives on another vkrope.Device than x")
            if out.storage != x.storage:
                raise ValueError(f"out has storage {out.storage!r}; expected {x.storage!r} like x")
        elif not isinstance(out, np.ndarray):
            raise TypeError(f"out must be a numpy array of shape {x.shape} and dtype {x.dtype}; got {_describe(out)}")
        else:
            _refuse_subclass("out", out)
        if out.dtype != x.dtype:
            raise TypeError(f"out must have dtype {x.dtype} (the dtype of x); got {out.dtype}")
        if out.shape != x.shape:
            raise ValueError(f"out must have shape {x.shape} (the shape of x); got {out.shape}")
        if isinstance(out, np.ndarray) and not out.flags.writeable:
            raise ValueError("out must be writeable; got a read-only array")

    if freqs.dtype in COMPLEX_FREQS_DTYPES:
        c = freqs.reshape(n_freq_rows, half) if per_row else freqs.reshape(0, 0)
        pairs = np.stack([c.real, c.imag], axis=-1).astype(pairs_dtype)
    else:
        pairs = freqs.reshape(n_freq_rows, half, 2) if per_row else freqs.reshape(0, 0, 2)

    return Request(
        x=x,
        freqs=freqs,
        freqs_pairs=pairs,
        n_tokens=n_tokens,
        channels=channels,
        n_freq_rows=n_freq_rows,
        token_rows=token_rows,
        positions=pos32,
        n_rot=n_rot,
        inverse=bool(inverse),
        storage=storage,
        out=out,
    )
