"""`vkrope.DeviceArray`: an array that lives in a Vulkan device's memory.

It sits in the runtime (below the operators, which bind its resource) and
calls back into its owner (a `vkrope.Device`) for downloads, copies and
release; it imports nothing of vkrope's."""

from __future__ import annotations

import math
import numbers
import weakref
from typing import Any, Callable

import numpy as np


MADE_BY_DEVICE = object()  # what a Device passes DeviceArray's constructor: no other caller has it


# A DeviceArray's own attributes (DeviceArray.__setattr__ refuses any other).
_FIELDS = frozenset({"_owner", "_resource", "_released", "_shape", "_dtype", "_storage", "_size"})


class DeviceArray:
    """An array resident on a `vkrope.Device` (CuPy-style).

    Made by `Device.asarray` and returned by `Device.apply` when `x` is one.
    `get()` (or `np.asarray(arr)`) copies it back to a new numpy array. Its
    device memory returns to the device's pool when the array is garbage
    collected, or at once with `release()`; closing the device invalidates it.
    `copy.copy` / `copy.deepcopy` give a new array with its own device
    memory; pickling raises TypeError (pickle `arr.get()`). numpy's operators
    and functions work on a host copy (each one copies it back, as `get()`).
    It takes no attribute of its user's, as numpy's ndarray.
    """

    # (its attributes, declared for type checkers: __init__ writes them, __setattr__ refuses others)
    _owner: Any
    _resource: Any
    _released: bool
    _shape: tuple[int, ...]
    _dtype: np.dtype
    _storage: str
    _size: int

    def __init__(self, owner: Any, resource: Any, shape: tuple[int, ...], dtype: np.dtype, storage: str, *,
                 made: object = None) -> None:
        if made is not MADE_BY_DEVICE:  # (one made by hand would hold no memory, or another array's: a double free)
            raise TypeError("DeviceArrays come from a Device: Device.asarray, or an operation's result; the "
                            "constructor is the device's own")
        shape = tuple(int(s) for s in shape)
        self.__dict__.update(  # (written past __setattr__, which refuses a user's attributes)
            _owner=owner,  # the vkrope.Device
            _resource=resource,  # runtime resource (buffer or image) holding the data; None when empty
            _released=False, _shape=shape, _dtype=np.dtype(dtype), _storage=storage, _size=math.prod(shape))

    def __setattr__(self, name: str, value: Any) -> None:
        """A DeviceArray takes no attribute of its user's (as numpy's ndarray): the runtime holds its
        attributes (to take its memory back should its __del__ be interrupted), so one naming the array itself
        would keep it, and its device memory, until the device closes."""
        if name not in _FIELDS:
            if isinstance(getattr(type(self), name, None), property):  # (its own, read-only: sized for them)
                raise AttributeError(f"property {name!r} of 'DeviceArray' object has no setter (the array's memory "
                                     "was sized for it)")
            raise AttributeError(f"a DeviceArray takes no attribute of its user's ({name!r}), as numpy's ndarray "
                                 "takes none; keep what goes with it beside it (one naming the array would keep it, "
                                 "and its device memory, until the device closes)")
        self.__dict__[name] = value

    # Read-only: the memory behind the array was sized for them.
    @property
    def shape(self) -> tuple[int, ...]:
        """The array's shape."""
        return self._shape

    @property
    def dtype(self) -> np.dtype:
        """float32, float16 or bfloat16 (`ml_dtypes.bfloat16`); a KV cache's also float8_e4m3fn / float8_e5m2."""
        return self._dtype

    @property
    def storage(self) -> str:
        """"buffer" or "texture3d"."""
        return self._storage

    @property
    def ndim(self) -> int:
        """Number of axes."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        return self._size

    @property
    def nbytes(self) -> int:
        """Bytes of data (without padding)."""
        return self.size * self.dtype.itemsize

    @property
    def device(self) -> Any:
        """The `vkrope.Device` holding this array."""
        return self._owner

    def get(self) -> np.ndarray:
        """Copy the data back into a new numpy array."""
        return self._owner._download(self)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if copy is False:  # numpy 2: np.asarray(arr, copy=False) must not copy
            raise ValueError(
                "a DeviceArray lives on the device; a copy is always needed: use np.asarray(arr) or arr.get()"
            )
        a = self.get()
        return a if dtype is None else a.astype(dtype, copy=False)

    @property
    def resource(self) -> Any:
        """The runtime resource (Buffer or Image3D) holding the data: what
        operators bind (None for an empty or released array)."""
        return self._resource

    @property
    def released(self) -> bool:
        """Whether the array's device memory is gone: `release()` ran, or its
        `Device` was closed (the array is unusable then)."""
        return self._released or bool(self._owner is not None and self._owner.closed)

    @property
    def state(self) -> str:
        """"live", "released" (`release()` ran) or "closed" (its Device was
        closed: that says more, so it wins over a later release)."""
        if self._owner is not None and self._owner.closed:
            return "closed"
        return "released" if self._released else "live"

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        # numpy's operators, ufuncs and reductions run on a host copy, as np.asarray(arr) and np.mean take one:
        # x + arr failed with numpy's words about sequences while arr + x copied. None writes into one (out=).
        # (`ufunc.at` writes into its first input: on a host copy, thrown away, so the write was lost silently)
        if any(isinstance(o, DeviceArray) for o in kwargs.get("out", ()) or ()) or \
                (method == "at" and inputs and isinstance(inputs[0], DeviceArray)):
            name = getattr(ufunc, "__name__", ufunc)
            how = f"{name}.at cannot write into a DeviceArray (its first argument)" if method == "at" else \
                f"{name} cannot write into a DeviceArray (out=)"
            raise TypeError(f"numpy's {how}: it lives on the device; write into a numpy array and upload it with "
                            "Device.asarray")
        return getattr(ufunc, method)(*(i.get() if isinstance(i, DeviceArray) else i for i in inputs), **kwargs)

    # == and != with a number, a numpy array, a list or a tuple compare element-wise on a host copy, as numpy's do
    # (object's == compared identities: `arr == 1.0` was False, silently); anything else, another DeviceArray
    # included, by identity (`a == b` is `a is b`: the runtime keeps arrays in sets; compare a.get() == b.get()).
    def __eq__(self, other: Any) -> Any:
        return self.get() == other if _numeric(other) else NotImplemented

    def __ne__(self, other: Any) -> Any:
        return self.get() != other if _numeric(other) else NotImplemented

    __hash__ = object.__hash__  # (by identity, as before: defining == would drop it)

    def __copy__(self) -> "DeviceArray":
        # A new array with its own device memory, copied on the device
        # (sharing the resource would give it back to the pool twice).
        return self._owner._copy_array(self)

    def __deepcopy__(self, memo: dict) -> "DeviceArray":
        return self.__copy__()

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise TypeError("a DeviceArray cannot be pickled: it lives in device memory; pickle arr.get()")

    def release(self) -> None:
        """Give the device memory back now (idempotent); the array is unusable
        after. Waits for a call running on its device in another thread
        (which may use it); inside a call in this thread (a signal handler or
        a finalizer), whose call may use the memory, it goes back when that
        call has ended (at the device's next call, transfer or trim)."""
        self._release(deferrable=True)

    def _release(self, deferrable: bool = False) -> None:
        self._released = True
        if self._owner is not None:
            self._owner._release_array(self, deferrable)

    def __del__(self) -> None:
        try:
            self._release()  # (a collection inside a call: of an array no call holds, given back at once)
        except Exception:
            pass

    def __len__(self) -> int:
        return self.shape[0]

    def __bool__(self) -> bool:
        # (without it, truth was len()'s: `if arr:` or `assert arr == 0` style code passed silently, where numpy
        # raises for more than one value; a DeviceArray's values are on the device, so no truth is read at all)
        raise TypeError(f"the truth value of a DeviceArray {self.shape} is not defined: its values are on the "
                        "device; test arr.get() (with numpy's any() or all())")

    def __repr__(self) -> str:
        state = {"live": "", "released": ", released", "closed": ", device closed"}[self.state]
        return f"<vkrope.DeviceArray shape={self.shape} dtype={self.dtype} storage={self.storage}{state}>"


def _numeric(other: Any) -> bool:
    """Whether == with `other` compares values, as numpy's == does (any number, Fraction and Decimal too, a
    numpy scalar or array, a list or tuple), not identities."""
    return isinstance(other, (numbers.Number, np.generic, np.ndarray, list, tuple))


# --- objects a memo keeps by identity (ops/repeat.py's structures, runtime/execute.py's kept calls) ---------
def weak_refs(objects: list[Any], forget: Callable[[], object]) -> tuple[weakref.ref, ...]:
    """Weak references to `objects`; `forget()` runs when the first of them dies (a memo entry is dropped with its
    objects, not kept until the memo fills: it may hold a call's tables)."""
    return tuple(weakref.ref(o, lambda _: forget()) for o in objects)


def all_usable(refs: tuple[weakref.ref, ...]) -> bool:
    """Every referenced object alive (so objects of the same ids are they: an id is reused only after its object
    died), and every DeviceArray among them live (not released, its device open)."""
    for r in refs:
        a = r()
        if a is None or (isinstance(a, DeviceArray) and a.state != "live"):
            return False
    return True
