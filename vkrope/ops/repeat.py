"""The checks of a call's structure, made once for arguments that repeat.

A decode loop calls one operation with the same arrays, spec and flags at
every step, and only its positions change. A front end therefore checks its
arguments in two parts: the structure (every argument but the per-call
data: what it derives from their shapes, dtypes, storage and values), and
the per-call data (positions, slots). `Structures` keeps the first part by
the identity of the arguments it was derived from, so that a call that
repeats them checks only its per-call data.

Only arguments whose checked facts cannot change are kept by identity:
DeviceArrays (shape, dtype, storage and device fixed at birth; whether they
are still alive is checked again at every call, here and under the device's
lock), frequency specs and ModelRopes (frozen, their arrays read-only), and
tuples of them; None, bools, numbers and strings by value. A numpy array
(whose shape can be set in place, and whose data a structure may read) or
any other argument makes the call check everything, as before.

The kept structures hold weak references to those arguments, never strong
ones, and an entry goes when the first of its objects dies (a DeviceArray
the caller drops gives its memory back as it did, and whatever its
structure held goes with it). A structure must hold no DeviceArray either:
the per-call part is given the arguments again. It may hold a spec (a
small immutable host object, which its lowering and plans hold too).
"""

from __future__ import annotations

import weakref
from typing import Any, Callable, Generic, TypeVar

import numpy as np

from ..freqs import FrequencySpec
from ..models import ModelRope
from ..runtime.array import DeviceArray, all_usable, weak_refs

S = TypeVar("S")
# Kept by value: immutable, and equal only to values of their own type here (the key holds the type).
_VALUES = (type(None), bool, int, float, str, np.bool_, np.integer, np.floating)
# Kept by identity: nothing checked about them can change while they live.
_OBJECTS = (DeviceArray, FrequencySpec, ModelRope)
# Structures kept per front end; past that the memo starts again (a model has at most a few hundred layers, each
# with its own caches).
MAX_KEPT = 512
# Tuples kept inside tuples, at most (a call's keywords and a (cos, sin) pair are two deep).
MAX_DEPTH = 4


def key_of(args: tuple, objects: list[Any], depth: int = 0) -> tuple | None:
    """What identifies these arguments (collecting the objects kept by identity into `objects`), or None when one
    of them cannot be kept (tuples nested past MAX_DEPTH: no signature nests so deep, and the front end's own
    check names the argument)."""
    parts: list[Any] = []
    for a in args:
        t = type(a)
        if t is DeviceArray:  # (the usual kinds first, by their exact type)
            objects.append(a)
            parts.append(id(a))
        elif t is bool or t is str or a is None:
            parts.append((t, a))
        elif isinstance(a, _OBJECTS):
            objects.append(a)
            parts.append(id(a))
        elif isinstance(a, _VALUES):
            # (0.0 and -0.0 are equal: the key tells them apart by their text)
            parts.append((type(a), a) if a or not isinstance(a, (float, np.floating)) else (type(a), a, repr(a)))
        elif type(a) is tuple and depth < MAX_DEPTH:
            inner = key_of(a, objects, depth + 1)
            if inner is None:
                return None
            parts.append(inner)
        else:
            return None
    return tuple(parts)


class Structures(Generic[S]):
    """`check(*args)` (a front end's structure check), kept for arguments
    that repeat: called again only for arguments it has not seen, or seen
    with a DeviceArray that is no longer alive (so its error is the front
    end's own)."""

    def __init__(self, check: Callable[..., S]) -> None:
        self._check = check
        self._kept: dict[tuple, tuple[tuple[weakref.ref, ...], S]] = {}

    def __call__(self, *args: Any) -> S:
        objects: list[Any] = []
        key = key_of(args, objects)
        if key is None:
            return self._check(*args)
        hit = self._kept.get(key)
        # (a DeviceArray no longer live: checked again, so the error is the front end's own)
        if hit is not None and all_usable(hit[0]):
            return hit[1]
        structure = self._check(*args)
        if len(self._kept) >= MAX_KEPT:
            self._kept.clear()
        # (each dict operation is atomic: threads need no lock, and the forgetting may run in any of them)
        self._kept[key] = (weak_refs(objects, lambda: self._kept.pop(key, None)), structure)
        return structure

    def clear(self) -> None:
        """Forget every kept structure."""
        self._kept.clear()

    def __len__(self) -> int:
        return len(self._kept)


__all__ = ["Structures", "MAX_KEPT", "key_of"]
