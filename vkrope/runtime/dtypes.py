"""The tensor dtypes vkrope computes in, and how kernels name them.

bfloat16 is `ml_dtypes.bfloat16` (numpy has none of its own; JAX, ONNX's
reference evaluator and TensorFlow use this one). On the device it is
16-bit words: kernels widen it to float32 exactly and round once on store
(glsl/common.glsl), so no device extension is needed."""

from __future__ import annotations

import functools
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

# ml_dtypes' dtypes vkrope takes, by name. This module is the only one that
# imports ml_dtypes, and only when one of them is asked for by name or once
# the caller has imported it (its import is slow: docs/PERFORMANCE.md,
# "Import time").
ML_NAMES = ("bfloat16", "float8_e4m3fn", "float8_e5m2")


def ml_loaded() -> bool:
    """Whether ml_dtypes is imported (by anyone): until then no array or scalar can be of its types."""
    module = sys.modules.get("ml_dtypes")  # (None there: an import someone blocked)
    # (a module still initialising is not: a child forked while a thread of its parent imported it holds
    # it half made, and importing it there would wait for that thread for ever)
    return module is not None and not getattr(getattr(module, "__spec__", None), "_initializing", False)


# Held while ml_dtypes is imported here; a fork waits for it, so no child is left with the import half done.
_IMPORTING = threading.Lock()
os.register_at_fork(before=_IMPORTING.acquire, after_in_parent=_IMPORTING.release,
                    after_in_child=_IMPORTING.release)


@functools.cache
def ml_dtype(name: str) -> np.dtype:
    """ml_dtypes' dtype `name` (one of ML_NAMES), importing ml_dtypes now if it is not yet."""
    with _IMPORTING:
        import ml_dtypes  # noqa: PLC0415  (see ML_NAMES)

    return np.dtype(getattr(ml_dtypes, name))


def _text(value: Any) -> Any:
    """A bytes name as text (numpy reads both); anything else as it is."""
    return value.decode("latin-1") if isinstance(value, bytes) else value


def as_dtype(value: Any) -> np.dtype:
    """np.dtype(value), where value may also name one of ml_dtypes' dtypes ("bfloat16") before
    ml_dtypes is imported."""
    text = _text(value)
    if isinstance(text, str) and text in ML_NAMES:
        return ml_dtype(text)
    return np.dtype(value)


class Dtypes:
    """A fixed set of dtypes by name, some of them ml_dtypes': `dtype in the_set` compares as a tuple of
    dtypes would, without importing ml_dtypes unless the caller has or the value is a name; iterating
    it gives every dtype (and imports ml_dtypes)."""

    def __init__(self, *names: str) -> None:
        self.names = names
        self.numpy = tuple(np.dtype(n) for n in names if n not in ML_NAMES)
        self.ml = tuple(n for n in names if n in ML_NAMES)
        self._ml_dtypes: tuple[np.dtype, ...] | None = None

    def __contains__(self, value: Any) -> bool:
        if value in self.numpy:  # (the tuple's own `in`: float32, the usual case, costs what it did)
            return True
        if not self.ml:
            return False
        if not ml_loaded() and _text(value) not in self.ml:  # (no value of its types exists yet; a name imports it)
            return False
        if self._ml_dtypes is None:
            self._ml_dtypes = tuple(ml_dtype(n) for n in self.ml)
        return value in self._ml_dtypes

    def __iter__(self) -> Iterator[np.dtype]:
        return (as_dtype(n) for n in self.names)

    def __add__(self, other: Any) -> Dtypes:
        more = other.names if isinstance(other, Dtypes) else tuple(np.dtype(d).name for d in other)
        return Dtypes(*self.names, *more)

    def __repr__(self) -> str:
        return f"Dtypes{self.names}"


FLOAT32 = np.dtype(np.float32)
FLOAT16 = np.dtype(np.float16)
# fp8 KV caches (vLLM's kv_cache_dtype "fp8_e4m3" / "fp8_e5m2"): one byte a
# value, four to a 32-bit word on the device (no 8-bit storage extension).
FP8_DTYPES = Dtypes("float8_e4m3fn", "float8_e5m2")
SIXTEEN_BIT = Dtypes("float16", "bfloat16")
BFLOAT16 = Dtypes("bfloat16")  # (`dtype in BFLOAT16`: no dtype object until ml_dtypes is imported)


def names(dtypes: Dtypes) -> str:
    """Dtypes in words for an error: "float32, float16 or bfloat16"."""
    n = dtypes.names
    return " or ".join(filter(None, (", ".join(n[:-1]), n[-1])))


# What x, q, k, out and resident tensors may hold.
TENSOR_DTYPES = Dtypes("float32", "float16", "bfloat16")
TENSOR_DTYPE_NAMES = names(TENSOR_DTYPES)
# What a KV cache (and a DeviceArray) may hold besides: the fp8 formats.
CACHE_DTYPES = TENSOR_DTYPES + FP8_DTYPES
CACHE_DTYPE_NAMES = names(CACHE_DTYPES)
# What a table of frequencies, cos or sin may hold besides: float64 (rounded to float32 once, on the host).
FREQS_DTYPES = TENSOR_DTYPES + (np.dtype(np.float64),)


def is_integer_dtype(dtype: Any) -> bool:
    """A signed or unsigned integer dtype, as positions and rows are: not bool, and not timedelta64, which numpy
    files under np.integer."""
    return np.dtype(dtype).kind in "iu"


def is_real_float_dtype(dtype: Any) -> bool:
    """numpy's own floating dtypes (float16 to longdouble, either byte order) and bfloat16: the floats a table,
    a weight or a position may hold. Not ml_dtypes' fp8 and narrower types, which are no such numbers (numpy
    files float8_e5m2 as kind "f" and float8_e4m3fn as raw bytes: read by kind, one was taken and not the
    other)."""
    dt = np.dtype(dtype)
    return dt.type in (np.float16, np.float32, np.float64, np.longdouble) or dt in BFLOAT16


def is_int(value: Any) -> bool:
    """A Python or numpy integer, as a count, an index or a flag's 0 / 1 is: not a bool, and not a timedelta64,
    which numpy files under np.integer."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.timedelta64))


def table_values(a: np.ndarray, dtype: Any, name: str | None = None) -> np.ndarray:
    """`a` (table rows) as a C-contiguous array of `dtype`, no numpy warning leaking; with `name`, a
    ValueError naming it where a finite value of a wider `a` (float64) rounds to an infinity, as no float32
    holds it (inf and NaN are data). The one rule for every float64 table, applied by each front end to the
    rows its call reads (a broadcast or memory-mapped table's others, an empty call's, are not read for it);
    the kernels convert the rows they bind without it."""
    with np.errstate(over="ignore", under="ignore"):
        out = np.ascontiguousarray(a, dtype=dtype)
    if name is not None and a.dtype.itemsize > out.dtype.itemsize and a.dtype.kind == "f" \
            and not np.isfinite(out).all():
        past = np.isinf(out) & np.isfinite(a)
        if past.any():
            raise ValueError(f"{name} must hold values within {out.dtype}'s range (the kernel reads {out.dtype}; "
                             f"rounding would make them infinite); got {float(a[past].flat[0])!r}")
    return out


def frozen(a: np.ndarray) -> np.ndarray:
    """A read-only copy of `a` that cannot be made writeable again (its memory is an immutable bytes object):
    an array kept and shared across calls (a spec's frequencies, a cached structure), which a caller's
    `flags.writeable = True` would otherwise let them change under every equal spec."""
    return np.frombuffer(np.ascontiguousarray(a).tobytes(), a.dtype).reshape(a.shape)


def without_repeats(a: np.ndarray) -> np.ndarray:
    """A view of `a` with each zero-stride axis (a broadcast one: every entry along it the same) cut to one
    entry: the same values, so their range is found without reading a broadcast array's every entry."""
    return a[tuple(slice(0, 1) if st == 0 and n > 1 else slice(None) for st, n in zip(a.strides, a.shape))]


def is_real_scalar(value: Any) -> bool:
    """A Python or numpy real scalar, as an argument such as a base or eps may be (ml_dtypes' bfloat16 and
    float8 scalars are no np.floating; each is exact as a float). A bool is one: callers refuse it."""
    if isinstance(value, (int, float, np.integer, np.floating)):
        return not isinstance(value, np.timedelta64)  # (an np.integer to numpy)
    return ml_loaded() and isinstance(value, tuple(ml_dtype(n).type for n in ML_NAMES))  # (ml_dtype: cached)


# The value of a kernel grid's dtype axis ("x", "freqs") for each dtype.
_AXIS = {"float32": "32", "float16": "16", "bfloat16": "b16", "float8_e4m3fn": "e4m3", "float8_e5m2": "e5m2"}


def axis(dtype: Any) -> str:
    """The variant-grid axis value ("32", "16", "b16"; caches also "e4m3", "e5m2") of a dtype."""
    return _AXIS[np.dtype(dtype).name]  # (of a dtype the call's checks took: its name says which)


def convert_hint(name: str, dtype: Any, accepted: Any = (), to: str = "float32", device: bool = False) -> str:
    """How to turn an array of `dtype` into one vkrope takes (one of
    `accepted`; else a cast to `to`): a two-byte void array is how np.load
    reads a saved bfloat16 array; a byte-swapped one of an accepted dtype
    ('>f4', from a big-endian machine) needs only its bytes in the machine's
    order; a DeviceArray (`device`) has no astype: it is converted on the host."""
    dt = np.dtype(dtype)
    if device:
        return f"a DeviceArray converts on the host: Device.asarray({name}.get().astype(np.{to}))"
    if dt.kind == "V" and dt.itemsize == 2 and dt.names is None:
        return (f"a bfloat16 array saved with np.save loads as {dt.str!r}: view it with "
                f"{name}.view(vkrope.bfloat16)")
    if dt.type is np.void and dt.itemsize == 1 and dt.names is None:  # (which fp8 format: the file's; ml_dtypes'
        # own float8 types are kind "V" too, and are numbers astype converts)
        return (f"a float8 array saved with np.save loads as {dt.str!r}: view it with "
                f"{name}.view(vkrope.float8_e4m3fn) or {name}.view(vkrope.float8_e5m2), as it was written")
    if swapped_of(dt, accepted):  # its name reads like a dtype vkrope takes: say what differs
        return f"its bytes are swapped; convert with {name}.astype(np.{dt.newbyteorder('=').name})"
    if dt.names is not None:  # (astype refuses a record of several values, and keeps a subarray's first only)
        return f"a structured array (fields {', '.join(map(repr, dt.names)) or 'none'}): pass one field, as a " \
               "float array"
    if dt.kind == "V" and dt.type is np.void:  # (raw bytes: astype fails, a view is a guess of their meaning;
        # ml_dtypes' float8, int4, ... are numbers astype converts)
        return "raw bytes (numpy void): pass a float array"
    if dt.kind in "SU":  # (astype parses numbers only)
        return "a string array: pass a float array"
    if dt.kind == "c":  # (astype would drop the imaginary part, without an error; what the parts mean is the
        return "a complex array: pass real values (a cast to float32 would drop the imaginary part)"  # caller's)
    return f"convert with {name}.astype(np.{to})"


def asarray_hint(name: str, value: Any) -> str:
    """How to pass `value` where a numpy array is needed: a list or tuple,
    or an array of another library (torch, JAX: `__array__` or `.numpy`),
    converts with np.asarray; anything else gets no hint."""
    if isinstance(value, (np.ndarray, np.generic)):
        return ""  # (a numpy scalar: np.asarray makes a 0-d array, which no argument taking arrays takes)
    if isinstance(value, (list, tuple)) or hasattr(type(value), "__array__") or hasattr(type(value), "numpy"):
        return f" (convert it with np.asarray({name}))"
    return ""


def swapped_of(dtype: Any, accepted: Any) -> bool:
    """Whether `dtype` is one of `accepted` in the other byte order."""
    dt = np.dtype(dtype)
    return not dt.isnative and dt.newbyteorder("=") in accepted


def table_dtype(x_dtype: Any, *table_dtypes: Any) -> str:
    """The dtype a kernel reads a table in beside x: x's 16-bit dtype when
    every table has it (read as it is), else float32 (converted on the host)."""
    x = np.dtype(x_dtype)
    if x.itemsize != 2:  # (float32 x, the usual case, decided without comparing dtypes)
        return "float32"
    same = is_16bit(x) and all(np.dtype(t) == x for t in table_dtypes)
    return x.name if same else "float32"


def is_fp8(dtype: Any) -> bool:
    """float8_e4m3fn or float8_e5m2 (KV caches only)."""
    return np.dtype(dtype) in FP8_DTYPES


def is_16bit(dtype: Any) -> bool:
    """float16 or bfloat16: stored as 16-bit values (16-bit storage)."""
    d = np.dtype(dtype)
    return d.itemsize == 2 and d in SIXTEEN_BIT


__all__ = ["ML_NAMES", "ml_loaded", "ml_dtype", "as_dtype", "Dtypes", "FLOAT32", "FLOAT16", "FP8_DTYPES",
           "SIXTEEN_BIT", "BFLOAT16", "TENSOR_DTYPES", "TENSOR_DTYPE_NAMES", "CACHE_DTYPES", "CACHE_DTYPE_NAMES", "FREQS_DTYPES",
           "names", "is_real_scalar", "axis", "convert_hint", "asarray_hint", "swapped_of", "is_16bit", "is_fp8",
           "table_dtype", "refuse_subclass"]


def refuse_subclass(name: str, a: Any) -> None:
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
