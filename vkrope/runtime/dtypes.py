"""The tensor dtypes vkrope computes in, and how kernels name them.

bfloat16 is `ml_dtypes.bfloat16` (numpy has none of its own; JAX, ONNX's
reference evaluator and TensorFlow use this one). On the device it is
16-bit words: kernels widen it to float32 exactly and round once on store
(glsl/common.glsl), so no device extension is needed."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

FLOAT32 = np.dtype(np.float32)
FLOAT16 = np.dtype(np.float16)
BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
# fp8 KV caches (vLLM's kv_cache_dtype "fp8_e4m3" / "fp8_e5m2"): one byte a
# value, four to a 32-bit word on the device (no 8-bit storage extension).
FLOAT8_E4M3FN = np.dtype(ml_dtypes.float8_e4m3fn)
FLOAT8_E5M2 = np.dtype(ml_dtypes.float8_e5m2)
FP8_DTYPES = (FLOAT8_E4M3FN, FLOAT8_E5M2)



def names(dtypes: tuple[np.dtype, ...]) -> str:
    """Dtypes in words for an error: "float32, float16 or bfloat16"."""
    return " or ".join(filter(None, (", ".join(d.name for d in dtypes[:-1]), dtypes[-1].name)))


# What x, q, k, out and resident tensors may hold.
TENSOR_DTYPES = (FLOAT32, FLOAT16, BFLOAT16)
TENSOR_DTYPE_NAMES = names(TENSOR_DTYPES)
# What a KV cache (and a DeviceArray) may hold besides: the fp8 formats.
CACHE_DTYPES = TENSOR_DTYPES + FP8_DTYPES
CACHE_DTYPE_NAMES = names(CACHE_DTYPES)
# What a table of frequencies, cos or sin may hold besides: float64 (rounded to float32 once, on the host).
FREQS_DTYPES = TENSOR_DTYPES + (np.dtype(np.float64),)

# Python and numpy real scalars an argument such as a base or eps may be
# (ml_dtypes' bfloat16 and float8 scalars are no np.floating; each is exact as a float).
REAL_SCALARS = (int, float, np.integer, np.floating, BFLOAT16.type, *(d.type for d in FP8_DTYPES))

# The value of a kernel grid's dtype axis ("x", "freqs") for each dtype.
_AXIS = {FLOAT32: "32", FLOAT16: "16", BFLOAT16: "b16", FLOAT8_E4M3FN: "e4m3", FLOAT8_E5M2: "e5m2"}


def axis(dtype: Any) -> str:
    """The variant-grid axis value ("32", "16", "b16"; caches also "e4m3", "e5m2") of a dtype."""
    return _AXIS[np.dtype(dtype)]


def convert_hint(name: str, dtype: Any, accepted: Any = ()) -> str:
    """How to turn an array of `dtype` into one vkrope takes (one of
    `accepted`): a two-byte void array is how np.load reads a saved
    bfloat16 array; a byte-swapped one of an accepted dtype ('>f4', from a
    big-endian machine) needs only its bytes in the machine's order."""
    dt = np.dtype(dtype)
    if dt.kind == "V" and dt.itemsize == 2 and dt.names is None:
        return (f"a bfloat16 array saved with np.save loads as {dt.str!r}: view it with "
                f"{name}.view(vkrope.bfloat16)")
    if swapped_of(dt, accepted):  # its name reads like a dtype vkrope takes: say what differs
        return f"its bytes are swapped; convert with {name}.astype(np.{dt.newbyteorder('=').name})"
    return f"convert with {name}.astype(np.float32)"


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
    return not dt.isnative and dt.newbyteorder("=") in tuple(np.dtype(a) for a in accepted)


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
    return d.itemsize == 2 and d in (FLOAT16, BFLOAT16)


__all__ = ["FLOAT32", "FLOAT16", "BFLOAT16", "FLOAT8_E4M3FN", "FLOAT8_E5M2", "FP8_DTYPES", "TENSOR_DTYPES",
           "TENSOR_DTYPE_NAMES", "CACHE_DTYPES", "CACHE_DTYPE_NAMES", "FREQS_DTYPES", "names", "REAL_SCALARS", "axis", "convert_hint", "asarray_hint",
           "swapped_of",
           "is_16bit", "is_fp8", "table_dtype"]
