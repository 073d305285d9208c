"""Imports of numpy arrays that calls use again and again, kept between calls.

On unified memory only (execute.may_import: on a discrete GPU the kernel
reads a device-local copy either way, and the argument arena's replayed
layout costs less host time than a layout made anew each call, #35).
A decode loop passes the same numpy arrays on every step (its `out`, an
input it refills in place). Copying them through the argument arena costs
two copies a call; importing them (VK_EXT_external_memory_host) costs one
vkAllocateMemory, far more than one copy of a small array, so a per-call
import only pays for big arrays (execute.IMPORT_MIN_BYTES). Kept, an import
costs nothing from the second use on, and the kernel reads and writes the
caller's memory in place.

The rules that keep it safe:

- An array (C-contiguous, writeable, aligned, 64 KiB or more, its memory
  owned by numpy: not a mmap's, `frombuffer`'s or another library's) is
  imported when a call passes it as the same object a previous call did (a
  weak reference remembers the first sighting), so arrays made fresh for
  every call never pay for an import and are never pinned, even when one
  call uses them twice.
- A kept import holds a strong reference to its array: the memory the
  device may use cannot be freed or reused while the import exists
  (`ndarray.resize` then refuses, as for any referenced array;
  `resize(refcheck=False)`, which numpy leaves to the caller's word that
  nothing holds the memory, is undefined for an array vkrope keeps).
- At most `COUNT` arrays, pinning at most `BYTES` bytes (counting the whole
  array a kept view belongs to), are kept. A new one is admitted while
  there is room, or in place of one idle for `IDLE_CALLS` calls; otherwise
  it goes through the arena. So a loop over more arrays than that keeps a
  working set and copies the rest, rather than importing and evicting on
  every call.
- Entries go after a call (`trim`), never during one, so nothing a pending
  submission binds is destroyed; an entry leaves the lookup table before
  its import is released (an interruption cannot leave a destroyed import
  to be found). A buffer's serial is never reused, so a cached recording
  over an evicted import can never replay.
- `Device.trim()` and `close()` drop them all; at the device's allocation
  count the idle ones go first (`release_idle`).
- fork: a driver that pins the imported pages keeps the
  parent's pages on Linux 5.9 and later (pinned pages are copied for the
  child, not shared copy-on-write); on older kernels call `Device.trim()`
  before forking a process whose parent goes on writing kept arrays.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from ..vk.context import Context
from ..vk.resources import ImportedBuffer

# Smaller arrays go through the arena: their copies cost less than a page
# of imported memory is worth.
MIN_BYTES = 64 << 10


def _root(a: np.ndarray) -> np.ndarray | None:
    """The array that owns `a`'s memory, or None when no numpy array does
    (a mmap, bytes, or a buffer another library wraps without a base): a
    reference would not keep such memory alive, or would stop it closing."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a if a.base is None and a.flags.owndata else None


@dataclass
class Kept:
    """One kept import: the buffer, the array it pins (and that array's
    memory owner's size), where the memory was when imported, and the
    last call that used it."""

    buf: ImportedBuffer
    array: np.ndarray
    pinned_bytes: int
    where: tuple[int, int]
    last_call: int


class KeptImports:
    """The imports kept for reused numpy arrays of one device."""

    COUNT = 16
    BYTES = 64 << 20
    IDLE_CALLS = 64

    def __init__(self, ctx: Context) -> None:  # noqa: D107
        self.ctx = ctx
        self.kept: OrderedDict[int, Kept] = OrderedDict()  # by id(array), least recently used first
        self.seen: OrderedDict[int, tuple[weakref.ref, int]] = OrderedDict()  # arrays seen once: (ref, call)
        self.pending: list[ImportedBuffer] = []  # an import being made (released if interrupted)
        self.stale: list[Kept] = []  # out of the table, to release when no submission uses them
        self.refused: dict[int, weakref.ref] = {}  # arrays whose memory the driver would not import
        self.call = 0  # calls begun (execute.run counts them)

    def begin_call(self) -> None:
        """A call starts: sightings from now on are this call's."""
        self.call += 1

    def _pinned(self) -> int:
        return sum(k.pinned_bytes for k in self.kept.values())

    def _room(self, nbytes: int) -> bool:
        """Whether an array pinning `nbytes` may be admitted now: within the
        bounds, or in place of the least recently used entry when that one
        has been idle for IDLE_CALLS calls (trim evicts it after the call)."""
        if len(self.kept) < self.COUNT and self._pinned() + nbytes <= self.BYTES:
            return True
        lru = next(iter(self.kept.values()), None)
        return lru is not None and self.call - lru.last_call > self.IDLE_CALLS and nbytes <= self.BYTES

    def reused(self, a: np.ndarray) -> bool:
        """Whether `a` (not kept, MIN_BYTES or more: the caller checks that
        before reading the address) should be imported and kept now: passed
        as the same object by an earlier call, with room for it (remembering
        this sighting otherwise)."""
        root = _root(a)
        if root is None or root.nbytes > self.BYTES // 4:  # (a small view of a huge array pins all of it)
            return False
        key = id(a)
        no = self.refused.get(key)
        if no is not None and no() is a:
            return False
        ref = self.seen.get(key)
        if ref is not None and ref[0]() is a:
            return ref[1] < self.call and self._room(root.nbytes)  # (a sighting of this very call does not count)
        if ref is not None:
            del self.seen[key]  # (another array under a dead one's id)
        while len(self.seen) >= 4 * self.COUNT:
            # Full: the oldest sighting gives way only when idle or gone. Evicting it regardless kept nothing of a
            # loop over more arrays than the table holds (each was forgotten before it came round again); this
            # way the arrays seen first stay, come round, and make the working set.
            old_ref, old_call = next(iter(self.seen.values()))
            if old_ref() is not None and self.call - old_call <= self.IDLE_CALLS:
                return False
            self.seen.popitem(last=False)
        try:
            self.seen[key] = (weakref.ref(a), self.call)
        except TypeError:
            return False
        return False

    def find(self, a: np.ndarray, address: int) -> ImportedBuffer | None:
        """The kept import of `a`, if any (one that no longer matches its
        memory, after `ndarray.resize(refcheck=False)`, goes after the call)."""
        key = id(a)
        hit = self.kept.get(key)  # (the array itself: the strong reference keeps its id from being reused)
        if hit is None:
            return None
        if hit.where == (address, a.nbytes) and hit.buf.handle is not None:
            hit.last_call = self.call
            self.kept.move_to_end(key)
            return hit.buf
        self.stale.append(hit)  # (listed before it leaves the table: it is never in neither)
        del self.kept[key]
        return None

    def make(self, a: np.ndarray, address: int) -> ImportedBuffer:
        """Import `a` and keep it (VulkanError or UnsupportedFeatureError if
        the driver will not import the memory)."""
        root = _root(a)
        buf = ImportedBuffer(self.ctx, address, a.nbytes, holder=self.pending)
        self.kept[id(a)] = Kept(buf, a, root.nbytes if root is not None else a.nbytes, (address, a.nbytes), self.call)
        self.pending.remove(buf)  # (kept, then no longer pending: an interruption leaves it in both)
        self.seen.pop(id(a), None)
        return buf

    def refuse(self, a: np.ndarray, remember: bool) -> None:
        """The driver refused `a`'s memory: forget the sighting, and with
        `remember` never try it again (memory it cannot import, as opposed
        to a passing shortage)."""
        self.seen.pop(id(a), None)
        if remember:
            if len(self.refused) > 4 * self.COUNT:
                self.refused.clear()
            self.refused[id(a)] = weakref.ref(a)

    def forget_failed(self) -> None:
        """Release an import whose making was interrupted (and forget it,
        had it been kept already)."""
        if not self.pending:
            return
        for key, hit in list(self.kept.items()):
            if any(hit.buf is buf for buf in self.pending):
                del self.kept[key]
        while self.pending:
            self.ctx.release(self.pending[-1])  # released before forgotten
            self.pending.pop()

    def _release_stale(self) -> None:
        while self.stale:
            self.ctx.release(self.stale[-1].buf)  # released before forgotten
            self.stale.pop()

    def trim(self, count: int | None = None, nbytes: int | None = None) -> None:
        """Release the least recently used imports past the bounds (only
        when no submission uses them): each leaves the table first."""
        count = self.COUNT if count is None else count
        nbytes = self.BYTES if nbytes is None else nbytes
        while self.kept and (len(self.kept) > count or self._pinned() > nbytes):
            key = next(iter(self.kept))
            self.stale.append(self.kept[key])
            del self.kept[key]
        self._release_stale()

    def release_idle(self) -> None:
        """Release every import the current call has not used (the device
        is out of allocations; no submission is in flight)."""
        for key, hit in list(self.kept.items()):
            if hit.last_call < self.call:
                self.stale.append(hit)
                del self.kept[key]
        self._release_stale()

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

    def pinned(self) -> list[np.ndarray]:
        """The arrays whose memory kept imports use (what an abandoned
        device must keep alive)."""
        return [k.array for k in list(self.kept.values()) + self.stale]


__all__ = ["KeptImports", "MIN_BYTES"]
