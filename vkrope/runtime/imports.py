"""Imports of numpy arrays that calls use again and again, kept between calls.

A decode loop passes the same numpy arrays on every step (its `out`, an
input it refills in place). Copying them through the argument arena costs
two copies a call; importing them (VK_EXT_external_memory_host) costs one
vkAllocateMemory, far more than one copy of a small array, so a per-call
import only pays for big arrays (execute.IMPORT_MIN_BYTES). Kept, an import
costs nothing from the second use on, and the kernel reads and writes the
caller's memory in place.

The rules that keep it safe:

- An array is imported on its second sighting as the same object (a weak
  reference remembers the first), so arrays made fresh on every call never
  pay for an import and are never pinned.
- A kept import holds a strong reference to its array: the memory the
  device may use cannot be freed or reused while the import exists.
  (`ndarray.resize` then refuses, as for any referenced array.)
- At most `COUNT` arrays and `BYTES` bytes are kept; the least recently
  used go after each call (`trim`), never during one, so nothing a pending
  submission binds is destroyed. A buffer's serial is never reused, so a
  cached recording over an evicted import can never replay.
- `Device.trim()` and `close()` drop them all.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import Any

import numpy as np

from ..vk.context import Context
from ..vk.resources import ImportedBuffer

# Smaller arrays go through the arena: their copies cost less than a page
# of imported memory is worth.
MIN_BYTES = 64 << 10


def _owned_by_numpy(a: np.ndarray) -> bool:
    """Whether `a`'s memory belongs to a numpy array (not to a mmap, bytes or
    another exporter, which a kept reference would stop from closing)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a.base is None


class KeptImports:
    """The imports kept for reused numpy arrays of one device."""

    COUNT = 8
    BYTES = 64 << 20

    def __init__(self, ctx: Context) -> None:  # noqa: D107
        self.ctx = ctx
        # by id(array): (import, the array, its address and size when imported)
        self.kept: OrderedDict[int, tuple[ImportedBuffer, np.ndarray, tuple[int, int]]] = OrderedDict()
        self.seen: OrderedDict[int, weakref.ref] = OrderedDict()  # arrays seen once, by id
        self.pending: list[ImportedBuffer] = []  # an import being made (released if interrupted)
        self.stale: list[tuple[ImportedBuffer, np.ndarray, tuple[int, int]]] = []  # to release after the call
        self.refused: dict[int, weakref.ref] = {}  # arrays whose memory the driver would not import

    def reused(self, a: np.ndarray) -> bool:
        """Whether `a` (not kept) was seen before (remembering it if not)."""
        if MIN_BYTES > a.nbytes or not _owned_by_numpy(a):
            return False
        key = id(a)
        no = self.refused.get(key)
        if no is not None and no() is a:
            return False
        ref = self.seen.get(key)
        if ref is not None and ref() is a:
            return True
        try:
            self.seen[key] = weakref.ref(a)
        except TypeError:
            return False
        self.seen.move_to_end(key)
        while len(self.seen) > 4 * self.COUNT:
            self.seen.popitem(last=False)
        return False

    def find(self, a: np.ndarray, address: int) -> ImportedBuffer | None:
        """The kept import of `a`, if any (one that no longer matches its
        memory, after `ndarray.resize(refcheck=False)`, goes after the call)."""
        key = id(a)
        hit = self.kept.get(key)  # (the array itself: the strong reference keeps its id from being reused)
        if hit is None:
            return None
        if hit[2] == (address, a.nbytes):
            self.kept.move_to_end(key)
            return hit[0]
        del self.kept[key]
        self.stale.append(hit)
        return None

    def make(self, a: np.ndarray, address: int) -> ImportedBuffer:
        """Import `a` and keep it (VulkanError if the driver refuses the memory)."""
        buf = ImportedBuffer(self.ctx, address, a.nbytes, holder=self.pending)
        self.kept[id(a)] = (buf, a, (address, a.nbytes))  # kept, then no longer pending: an interruption
        self.pending.remove(buf)                           # in between leaves it in both (forget_failed)
        self.seen.pop(id(a), None)
        return buf

    def refuse(self, a: np.ndarray) -> None:
        """Remember that the driver refused `a`'s memory (not tried again)."""
        self.seen.pop(id(a), None)
        if len(self.refused) > 4 * self.COUNT:
            self.refused.clear()
        self.refused[id(a)] = weakref.ref(a)

    def forget_failed(self) -> None:
        """Release an import whose making was interrupted (and forget it,
        had it been kept already)."""
        if not self.pending:
            return
        for key, hit in list(self.kept.items()):
            if any(hit[0] is buf for buf in self.pending):
                del self.kept[key]
        while self.pending:
            self.ctx.release(self.pending[-1])  # released before forgotten
            self.pending.pop()

    def trim(self, count: int | None = None, nbytes: int | None = None) -> None:
        """Release the least recently used imports past the bounds (only
        when no submission uses them)."""
        count = self.COUNT if count is None else count
        nbytes = self.BYTES if nbytes is None else nbytes
        while self.stale:
            self.ctx.release(self.stale[-1][0])  # released before forgotten
            self.stale.pop()
        total = sum(hit[0].size for hit in self.kept.values())
        while self.kept and (len(self.kept) > count or total > nbytes):
            key = next(iter(self.kept))
            buf = self.kept[key][0]
            self.ctx.release(buf)  # released before forgotten
            del self.kept[key]
            total -= buf.size

    def clear(self) -> None:
        """Release every kept import."""
        self.trim(0, 0)
        self.seen.clear()
        self.refused.clear()

    def drop(self) -> None:
        """Forget everything (the context was closed, which destroyed the imports)."""
        self.kept.clear()
        self.stale.clear()
        self.seen.clear()
        self.refused.clear()

    def pinned(self) -> list[Any]:
        """The arrays whose memory kept imports use (what an abandoned
        device must keep alive)."""
        return [hit[1] for hit in list(self.kept.values()) + self.stale]


__all__ = ["KeptImports", "MIN_BYTES"]
