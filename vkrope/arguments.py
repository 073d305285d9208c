"""Argument checks every operator shares (each operator module in
vkrope/ops checks the rest of its own arguments).

Everything here runs on the host before any GPU work. Wrong types or dtypes
raise `TypeError`, wrong shapes, sizes and values raise `ValueError`; each
message names the argument, what was given and what was expected.
"""

from __future__ import annotations

import operator
import reprlib
from typing import Any

import numpy as np
import numpy.ma  # noqa: F401  (numpy imports it lazily, at vkrope's first call: a fork then left the child the import lock held)

from .errors import DeviceClosedError
from .spec_checks import MAX_INT, MAX_PAIRS
from .words import brief, typed
from .runtime.dtypes import (
    CACHE_DTYPE_NAMES, TENSOR_DTYPE_NAMES, TENSOR_DTYPES, Dtypes, asarray_hint, convert_hint, is_16bit, is_fp8, is_int,
    refuse_subclass, swapped_of,
)
from .runtime.array import DeviceArray

STORAGES = ("buffer", "texture3d")  # where a tensor may live
STORAGE_CHOICES = ("auto", *STORAGES)  # what a call may ask for
MAX_ROWS = 2**31  # rows of a cos / sin table or freqs: the kernels read a row by an int32 index
# The first rows of a numpy table read to tell one of transformers' layouts holding each value twice (a table may
# be a broadcast view of 2^40 rows, read whole by no check)
REPEATS_READ = 64


# (a few items of a long sequence and a cut number: repr of a 5-million-item list took over a second)
class _Short(reprlib.Repr):
    """reprlib's cut repr, with an array inside a sequence or dict shown by its shape and dtype (not its data)."""

    def repr_ndarray(self, x: np.ndarray, level: int) -> str:  # (reprlib dispatches on the type's name)
        return f"<array of shape {x.shape} and dtype {x.dtype}>"


_SHORT = _Short()  # (its keyword arguments are Python 3.12's)
_SHORT.maxlist = _SHORT.maxtuple = _SHORT.maxdict = _SHORT.maxset = 8
_SHORT.maxlevel, _SHORT.maxstring, _SHORT.maxlong, _SHORT.maxother = 3, 120, 40, 160


def describe(a: Any) -> str:
    """A short description of an argument for error messages."""
    if isinstance(a, np.ndarray):
        return f"an array of shape {a.shape} and dtype {a.dtype}"
    try:
        text = _SHORT.repr(a)
    except ValueError:  # (an int past Python's digit limit for repr, alone or inside a sequence)
        return typed(a)  # (freqs' words for it: "an int of 16610 bits")
    if len(text) > 160:  # (cut where it says so, not mid-value)
        size = f"{len(a)} items" if isinstance(a, (list, tuple)) else f"{len(text)} characters"
        text = f"{text[:120]}... ({size})"
    kind = type(a).__name__
    named = text.startswith((f"{kind}(", f"np.{kind}("))  # (a dataclass's repr, numpy's scalars' name their type)
    return text if named else f"{kind} {text}"


def check_row_index(name: str, highest: int) -> None:
    """A ValueError naming `name` where the highest table row a call reads is past an int32 index, as the
    kernels read rows (a memory-mapped or broadcast numpy table may have more rows: those wrapped)."""
    if highest >= MAX_ROWS:
        raise ValueError(f"{name}: row {highest} is past {MAX_ROWS - 1}, the last a kernel reads (by an int32 index)")


def int_arg(name: str, value: Any, minimum: int) -> int:
    """An int (not a bool) in [minimum, 2^64 - 1], named `name` in the errors (the bound keeps every later
    message that prints it short: Python refuses to print an int of more than 4300 digits)."""
    if not is_int(value):
        raise TypeError(f"{name} must be an int >= {minimum}; got {describe(value)}")
    value = operator.index(value)
    if value < minimum or value > MAX_INT:
        raise ValueError(f"{name} must be >= {minimum} and at most 2^64 - 1; got {brief(value)}" if value > MAX_INT
                         else f"{name} must be >= {minimum}; got {brief(value)}")
    return value


def check_plain_array(name: str, a: Any) -> np.ndarray:
    """`a` must be a plain numpy array (not a matrix or masked array)."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{name} must be a numpy array; got {describe(a)}{asarray_hint(name, a)}")
    refuse_subclass(name, a)
    return a


def check_alive(name: str, a: Any) -> None:
    """A DeviceArray argument must still hold its memory. Released:
    ValueError; its Device closed: `DeviceClosedError` saying when and why.
    One message per case, from every entry point."""
    state = a.state
    if state == "live":
        return
    if state == "released":
        raise ValueError(f"{name} is a released DeviceArray (release() gave its memory back); pass a live one, "
                         "e.g. the data uploaded again with Device.asarray")
    if state == "closed":
        raise DeviceClosedError(
            f"{name} is a DeviceArray of a vkrope.Device that was closed ({a.device.closed_why}); its device memory "
            "went with it: upload the data again to an open Device")


def check_on_device(name: str, a: Any, device: Any, whose: str = "the one running this call") -> None:
    """A DeviceArray argument must be usable and live on `device` (`whose`
    it is, in the message; None: a device not made yet): a ValueError naming
    the argument and both devices."""
    check_alive(name, a)
    if a.device is not device and a.device.closing:  # (another thread's close() waits for a call in flight)
        raise DeviceClosedError(f"{name} is a DeviceArray of a vkrope.Device being closed (close() was called); "
                                "its device memory goes with it: upload the data again to an open Device")
    if a.device is not device:
        named = "" if device is None else f" ({device!r})"
        # (the argument itself: apply_many's names say `calls[i]: ` first, a table's end in "(cos)")
        code = name.rsplit(": ", 1)[-1].split(" (", 1)[0]
        raise ValueError(f"{name} lives on another vkrope.Device ({a.device!r}) than {whose}{named}; copy "
                         f"it there with that device's asarray({code}), which copies it through the host")


def check_array(a: Any, name: str, storage: str) -> Any:
    """An array to upload (`Device.asarray`): a plain numpy array (or a
    DeviceArray) of float32, float16 or bfloat16, with at least one axis (two for
    texture3d, whose images hold [..., N, C]); or of an fp8 dtype (a KV
    cache) in a buffer."""
    if isinstance(a, DeviceArray):
        check_alive(name, a)
    else:
        check_plain_array(name, a)
    if is_fp8(a.dtype):  # a KV cache's: bytes in 32-bit words, no image format holds them
        if storage != "buffer":
            raise ValueError(f"{name}: a {a.dtype} array is a KV cache, held in a buffer; got storage {storage!r} "
                             "(pass storage='buffer')")
    elif a.dtype not in TENSOR_DTYPES:
        raise TypeError(f"{name} must have dtype {CACHE_DTYPE_NAMES}; got {a.dtype} "
                        f"({convert_hint(name, a.dtype, TENSOR_DTYPES)})")
    if a.ndim < (2 if storage == "texture3d" else 1):
        raise ValueError(f"{name} must have at least {'2 axes' if storage == 'texture3d' else '1 axis'} for storage "
                         f"{storage!r}; got shape {a.shape}")
    return a


def check_resident_table_dtype(name: str, t: Any, x: Any, x_name: str = "x") -> None:
    """A resident table is bound where it is, so the kernel reads it in its
    own dtype: a 16-bit one only beside x (named `x_name`) of that dtype."""
    if is_16bit(t.dtype) and t.dtype != x.dtype:
        raise TypeError(f"{name} is a {t.dtype} DeviceArray but {x_name} is {x.dtype}: the kernel reads 16-bit "
                        f"tables only of {x_name}'s dtype; upload them as float32")


def check_x(x: Any, name: str = "x", why_even: str = "interleaved real/imaginary pairs") -> Any:
    """x (a numpy array or a DeviceArray) of float32, float16 or bfloat16 with at least
    2 axes and even C (`why_even` says why, in the error)."""
    if isinstance(x, DeviceArray):
        check_alive(name, x)
    elif not isinstance(x, np.ndarray):
        raise TypeError(f"{name} must be a numpy array of {TENSOR_DTYPE_NAMES}; got {describe(x)}"
                        f"{asarray_hint(name, x)}")
    else:
        refuse_subclass(name, x)
    if x.dtype not in TENSOR_DTYPES:
        raise TypeError(
            f"{name} must have dtype {TENSOR_DTYPE_NAMES}; got {x.dtype} "
            f"({convert_hint(name, x.dtype, TENSOR_DTYPES, device=isinstance(x, DeviceArray))})"
        )
    if x.ndim < 2:
        raise ValueError(f"{name} must have at least 2 axes [..., N, C]; got shape {x.shape}")
    if x.shape[-1] % 2:
        raise ValueError(
            f"{name} must have an even last axis C ({why_even}); got C = {x.shape[-1]} "
            f"in shape {x.shape}"
        )
    if x.size // 2 > MAX_PAIRS:  # noqa: SIM102
        raise ValueError(f"{name} has {x.size} values; vkrope handles at most {2 * MAX_PAIRS} per call")
    return x


def check_storage(storage: Any) -> str:
    """`storage` is one of STORAGE_CHOICES."""
    if not isinstance(storage, str):
        raise TypeError(f"storage must be one of {STORAGE_CHOICES}; got {describe(storage)}")
    if storage not in STORAGE_CHOICES:
        raise ValueError(f"storage must be one of {STORAGE_CHOICES}; got {brief(storage)}")
    return storage


def check_storage_of(name: str, x: Any, storage: Any) -> str:
    """The storage a call on tensor `x` runs with: a DeviceArray's own
    (`storage` may only be "auto" or repeat it), else `storage` with "auto"
    meaning buffers (README, Storage)."""
    storage = check_storage(storage)
    if isinstance(x, DeviceArray):
        if storage not in ("auto", x.storage):
            raise ValueError(f"storage={storage!r} but {name} is a {x.storage} DeviceArray")
        return x.storage
    return "buffer" if storage == "auto" else storage


def check_out(out: Any, x: Any, name: str = "out", x_name: str = "x") -> Any:
    """`out` (None, or like x: numpy with numpy x, a DeviceArray of the same
    device and storage with a DeviceArray x; x's shape and dtype; writeable);
    errors name them `name` and `x_name`."""
    if out is None:
        return None
    if isinstance(x, DeviceArray) != isinstance(out, DeviceArray):
        want = f"a DeviceArray ({x_name} is one)" if isinstance(x, DeviceArray) else f"a numpy array ({x_name} is one)"
        raise TypeError(f"{name} must be {want}; got {describe(out)}")
    if isinstance(out, DeviceArray):
        check_on_device(name, out, x.device, x_name)
        if out.storage != x.storage:
            raise ValueError(f"{name} has storage {out.storage!r}; expected {x.storage!r} like {x_name}")
    elif not isinstance(out, np.ndarray):
        raise TypeError(f"{name} must be a numpy array of shape {tuple(x.shape)} and dtype {x.dtype}; got "
                        f"{describe(out)}")
    else:
        refuse_subclass(name, out)
    if out.dtype != x.dtype:
        raise TypeError(f"{name} must have dtype {x.dtype} (the dtype of {x_name}); got {out.dtype}"
                        + (" (its bytes are swapped: vkrope writes in the machine's byte order)"
                           if swapped_of(out.dtype, (x.dtype,)) else ""))
    if tuple(out.shape) != tuple(x.shape):
        raise ValueError(f"{name} must have shape {tuple(x.shape)} (the shape of {x_name}); got {tuple(out.shape)}")
    if isinstance(out, np.ndarray) and not out.flags.writeable:
        raise ValueError(f"{name} must be writeable; got a read-only array")
    overlap = overlaps_itself(out) if isinstance(out, np.ndarray) else False
    if overlap:
        raise ValueError(f"{name} has elements that share memory (strides {out.strides} over shape {out.shape}: "
                         "a broadcast or as_strided view); which result would be kept is not defined: pass an "
                         "array whose elements are apart")
    if overlap is None:
        raise ValueError(f"{name} has strides {out.strides} over shape {out.shape} that do not nest (an as_strided "
                         f"view), too many elements ({out.size}) to check one by one that none shares memory with "
                         "another: pass an array whose strides nest (np.empty_like(x), or a transpose of one)")
    return out


def overlaps_itself(a: np.ndarray) -> bool | None:
    """Whether two elements of `a` share a byte. Strides that nest (each axis's stride at least the span of
    the axes with smaller strides) cannot overlap: the usual case, decided at once, as are a zero stride and
    elements more than their bytes can hold apart; any other (a view made with as_strided) by every element's
    offset, up to EXACT_OVERLAP_LIMIT elements (their offsets take 8 bytes each); None past it (not decided)."""
    if a.size <= 1:
        return False
    span = a.itemsize
    for stride, n in sorted((abs(st), n) for st, n in zip(a.strides, a.shape) if n > 1):
        if stride < span:
            break
        span += stride * (n - 1)
    else:
        return False
    extent = a.itemsize + sum(abs(st) * (n - 1) for st, n in zip(a.strides, a.shape))
    if any(st == 0 and n > 1 for st, n in zip(a.strides, a.shape)) or extent < a.size * a.itemsize:
        return True  # (a repeated element, or fewer bytes from the first to the last than the elements take)
    if a.size > EXACT_OVERLAP_LIMIT:
        return None
    offsets = np.zeros((), np.int64)
    for st, n in zip(a.strides, a.shape):
        offsets = np.add.outer(offsets, np.arange(n, dtype=np.int64) * st)
    ordered = np.sort(offsets, axis=None)
    return bool(np.any(np.diff(ordered) < a.itemsize))


EXACT_OVERLAP_LIMIT = 1 << 22  # elements whose offsets overlaps_itself compares one by one (32 MiB of them)


def check_table_array(name: str, t: Any, dtypes: Dtypes) -> Any:
    """A table: a plain numpy array, or a buffer DeviceArray, of `dtypes`."""
    if isinstance(t, DeviceArray):
        check_alive(name, t)
        if t.storage != "buffer":
            raise ValueError(f"{name} must be a buffer DeviceArray (tables are read as buffers); got {t.storage}")
    else:
        check_plain_array(name, t)
    if np.dtype(t.dtype) not in dtypes:
        raise TypeError(f"{name} must have dtype {' or '.join(dtypes.names)}; got {t.dtype} "
                        f"({convert_hint(name, t.dtype, dtypes, device=isinstance(t, DeviceArray))})")
    return t
