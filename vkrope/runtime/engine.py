"""`Runtime`: everything one device needs to run any operator, and nothing
about any operator.

It owns (and registers with the context for release) the command stream,
the pipelines per (kernel variant, specialization constants), the recorded
command buffers per submission (a tuple of steps is its own key), the work
buffers and images reused across calls, the pool of device-array
buffers, and the imports kept for numpy arrays passed again. Submissions
are drained before anything they use is written by the host, re-recorded
or destroyed, so an interrupted call cannot corrupt the next one.
"""

from __future__ import annotations

import contextlib
import weakref
from collections import OrderedDict
from typing import Any

import numpy as np

from ..vk import sync
from ..vk.commands import CommandStream, Recording
from ..vk.context import Context, unified_memory
from ..vk.instance import PhysicalDeviceInfo
from ..vk.pipeline import ComputePipeline
from ..vk.resources import Buffer, Image3D, rgba_format
from .dtypes import BFLOAT16, FLOAT16
from .imports import KeptImports
from .manifest import load
from .steps import Step
from .layout import MIN_BUFFER
from .recorder import record
from . import work_images

# Buffers grow in steps of this many bytes so that nearby sizes reuse them.
GROWTH = 1 << 16

# The work roles of the device-local buffers kept beside imports on a discrete GPU (`import_companion`).
IMPORT_COMPANION = "dev:"


def _forget(items: list, item: Any) -> None:
    """`item` out of `items` by identity, if still there: a signal handler or a finaliser that uses the
    device during a release (through the reentrant lock) may add to the list, or drain it, meanwhile
    (destroying twice does nothing)."""
    with contextlib.suppress(ValueError):
        items.remove(item)


class HeldMemory(dict):
    """Arrays' memory by serial: (memory, a weak reference to the array, the array's attributes), noted as
    each array gets it and dropped as it gives it back (runtime/array_memory.py `reclaim_dead`); `dead`: an
    array may have died holding its memory (its weak reference's callback found it there) since the last
    look."""

    dead = False


class Runtime:
    """The operator-independent runtime of one `Context`."""

    # Device-array buffers kept for reuse after their arrays die: at most this many bytes, and this many
    # buffers (each is one of the device's maxMemoryAllocationCount allocations; a quarter of them at most).
    POOL_BYTES = 512 << 20
    POOL_COUNT = 64
    # Recorded command buffers kept, least recently used out first: enough for a decode loop's calls
    # over every layer of a deep model (a recording per layer's caches: 126 layers for Llama 3.1 405B,
    # two or three ops each), where fewer made every call evict the one the next call needs.
    MAX_RECORDINGS = 512

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.unified = unified_memory(ctx)
        # set while a call is laid out again at maxMemoryAllocationCount (execute.run): no imports
        self.arena_only = False
        # set while execute runs a call (run, replay): its device-local buffers are in use, not idle
        self.in_call = False
        self.images_in_call: set[str] = set()  # the work images the call in progress binds (work_images.py)
        self.stream = CommandStream(ctx)
        self.scratch = Recording(self.stream)  # re-recorded for one-off submissions
        self.recordings: OrderedDict[tuple, Recording] = OrderedDict()
        self.pipelines: dict[tuple, ComputePipeline] = {}
        self.work: dict[str, Any] = {}
        self.pool: list[Buffer | Image3D] = []
        self.returned: list[Any] = []  # memory of released arrays, on its way to the pool or the graveyard
        self.held = HeldMemory()  # arrays' memory by serial, with the array: array_memory.reclaim_dead
        self.graveyard: list[Any] = []  # released while work may be in flight: destroyed at the next drain
        self.unfinished: list[Recording] = []  # recordings being made (an interruption may orphan one)
        self.building = 0  # recordings in progress (a garbage collection may drain in the middle of one)
        self.memo: dict[tuple, Any] = {}  # operators' plans, by their own keys
        self.prepared: OrderedDict[tuple, Any] = OrderedDict()  # laid-out submissions, by execute.hot_key
        self.kept_calls: dict[tuple, Any] = {}  # whole calls over resident arrays, by their arguments (kept_calls.replay)
        self.imports = KeptImports(ctx)  # imports of numpy arrays that calls pass again
        # What Device.stats() reports: work done since the runtime was made.
        self.counts = {"submissions": 0, "recordings": 0, "pipelines": 0, "bytes_uploaded": 0, "bytes_read_back": 0,
                       "bytes_imported": 0, "hot_calls": 0, "replayed_calls": 0}
        # At maxMemoryAllocationCount, pooled buffers and idle imports go first. Weakly: a context outlives its
        # owner where a close was interrupted in the owner's finalizer (owner.py's _open), and through this
        # runtime's arrays it would keep the Device alive (a Device holding its own arrays was never freed).
        ctx.reclaim = weakref.WeakMethod(self.reclaim)

    @property
    def limits(self) -> PhysicalDeviceInfo:
        """The device's limits and features."""
        return self.ctx.info

    # --- submission -----------------------------------------------------------
    def drain(self) -> None:
        """Wait for the submission in flight (if any), then destroy what was
        released while it ran."""
        self.stream.drain()
        while self.graveyard:  # (released before forgotten: `_forget`)
            res = self.graveyard[-1]
            self.ctx.release(res)
            _forget(self.graveyard, res)
        while self.unfinished and not self.building:  # (not under a recording in progress: GC can get here)
            rec = self.unfinished[-1]
            if not rec.cached:  # orphaned by an interruption: never submitted
                self.ctx.release(rec)
            _forget(self.unfinished, rec)

    def submit(self, steps: tuple[Step, ...], timed: bool = False, cache: bool = True) -> float | None:
        """Record `steps` (cached on the tuple itself unless `cache` is False,
        for steps over per-call resources), submit and wait. With `timed`,
        returns the seconds between the timestamps around the launches."""
        self.drain()
        if cache:
            rec = self._recording((steps, timed))
        else:
            rec = self.scratch
            record(rec, steps, self.pipeline, timed)
            self.counts["recordings"] += 1
        self.counts["submissions"] += 1
        return self.stream.submit_and_wait([rec], want_time=timed)

    def _recording(self, key: tuple) -> Recording:
        rec = self.recordings.get(key)
        if rec is not None:
            self.recordings.move_to_end(key)
            return rec
        self.building += 1
        try:
            rec = Recording(self.stream, holder=self.unfinished)
            try:
                record(rec, key[0], self.pipeline, key[1])
            except BaseException:
                self.ctx.release(rec)
                raise
            # (cached before it leaves `unfinished`, still building: a signal handler's drain released
            # one that was then cached, and this remove raised ValueError, #35's adversaries)
            rec.cached = True
            self.recordings[key] = rec
            self.unfinished.remove(rec)
        finally:
            self.building -= 1
        self.counts["recordings"] += 1
        if len(self.recordings) > self.MAX_RECORDINGS:  # (the oldest goes at the next drain: not in flight)
            self.bury(self.recordings, next(iter(self.recordings)))
        return rec

    def forget_recordings(self) -> None:
        """Drop cached recordings and the laid-out submissions they were
        recorded from (before a resource they may bind goes away)."""
        self.drain()
        self.prepared.clear()
        self.kept_calls.clear()
        while self.recordings:
            self.bury(self.recordings, next(iter(self.recordings)))
        self.drain()

    def pipeline(self, name: str, spec: tuple[int, ...]) -> ComputePipeline:
        """The compute pipeline of kernel variant `name` with `spec`, built once."""
        key = (name, spec)
        pipe = self.pipelines.get(key)
        if pipe is None:
            kernel = load(name)
            if "storageBuffer16BitAccess" in kernel.required_features:
                self.ctx.require_16bit_storage()
            pipe = ComputePipeline(self.ctx, kernel.spirv, kernel.binding_kinds, kernel.push_constant_bytes, spec)
            self.pipelines[key] = pipe
            self.counts["pipelines"] += 1
        return pipe

    # --- work resources ---------------------------------------------------------
    def work_buffer(self, role: str, size: int, host_visible: bool) -> Buffer:
        """A buffer of at least `size` bytes for `role`, reused across calls
        (after the submission in flight has finished with it)."""
        self.drain()
        size = max(MIN_BUFFER, size)
        buf = self.work.get(role)
        if buf is not None and buf.size >= size:
            return buf
        if buf is not None:
            self.release_work(role)
        # (on a discrete GPU a host-visible work buffer is a staging one: only copies reach it)
        buf = Buffer(self.ctx, -(-size // GROWTH) * GROWTH, host_visible=host_visible,
                     staging=host_visible and not self.unified)
        self.work[role] = buf
        return buf

    def release_work(self, role: str) -> None:
        """Release the work buffer or image of `role` (after the submission in flight; its recordings go)."""
        self.drain()
        if role in self.work:
            self.forget_recordings()
            self.bury(self.work, role)
            self.drain()

    def bury(self, table: dict, key: Any) -> None:
        """`table[key]` (a work buffer or image, a recording) moved to the graveyard (destroyed at the next
        drain), with no call between taking it out and putting it there, so an interrupt leaves it in one of
        the two: popped, then destroyed, it was in neither (held until the device closed; trim did not give
        it back), and destroyed, then taken out, it was handed out again."""
        res = table[key]
        del table[key]
        self.graveyard.append(res)

    def import_companion(self, job: int, name: str, size: int) -> Buffer:
        """The device-local buffer a discrete GPU copies an import of tensor `name` of job `job` through."""
        return self.work_buffer(f"{IMPORT_COMPANION}{job}:{name}", size, host_visible=False)

    def release_import_companions(self) -> None:
        """Release every cached `import_companion` (none may be in use: no call is laid out with them)."""
        for role in [role for role in self.work if role.startswith(IMPORT_COMPANION)]:
            self.release_work(role)

    def staged(self, role: str, nbytes: int) -> tuple[Buffer, Buffer]:
        """(host-visible buffer to fill or read, buffer to bind). The same
        buffer on unified-memory devices: no staging copy there."""
        host = self.work_buffer(role if self.unified else "host_" + role, nbytes, host_visible=True)
        if self.unified:
            return host, host
        return host, self.work_buffer(role, nbytes, host_visible=False)

    def image_format(self, dtype: np.dtype) -> int:
        """The rgba format of a tensor dtype, checked usable as a storage image."""
        dt = np.dtype(dtype)  # (bfloat16 texels are its 16-bit words: the kernels widen them)
        fmt, name = rgba_format("float16" if dt == FLOAT16 else "bits16" if dt in BFLOAT16 else "float32")
        self.ctx.require_storage_image_format(fmt, name + " (bfloat16 texels)" * (dt in BFLOAT16))
        return fmt

    def new_image(self, extent: tuple[int, int, int], fmt: int) -> Image3D:
        """A 3D image in GENERAL layout, where images rest between submissions."""
        image = Image3D(self.ctx, extent, fmt)
        try:
            s = self.scratch
            self.drain()
            s.begin()
            sync.first_layout(s, image)
            s.end()
            self.stream.submit_and_wait([s])
        except BaseException:
            self.discard(image)
            raise
        return image

    def discard(self, res: Any) -> None:
        """Destroy `res` now, or once the submission in flight is done (a
        failed wait: the device is then closed, which waits for it)."""
        if self.stream.in_flight:
            self.graveyard.append(res)
        else:
            self.ctx.release(res)

    @property
    def pool_count(self) -> int:
        """How many buffers the reuse pool may keep on this device."""
        limit = self.ctx.info.max_memory_allocation_count
        return min(self.POOL_COUNT, limit // 4) if limit else self.POOL_COUNT

    def free_pool(self) -> None:
        """Destroy the pooled buffers and everything released (after the
        submission in flight)."""
        while self.pool:  # (to the graveyard, one move with no call: pooled memory is never destroyed in place)
            res = self.pool[-1]
            del self.pool[-1]
            self.graveyard.append(res)
        self.drain()

    def reclaim(self) -> None:
        """Give allocations back at the device's allocation count: the pooled buffers, the kept imports and
        work images the current call does not use, and, outside a call, the device-local buffers kept beside
        imports (on a discrete GPU they held the count: a later asarray was refused, #35)."""
        self.free_pool()
        self.imports.release_idle()
        work_images.release_idle(self)
        if not self.in_call:
            self.release_import_companions()

    def trim(self) -> None:
        """Free cached recordings, work buffers and images, pooled buffers,
        plans and kept imports (and with them the arrays they pin)."""
        self.forget_recordings()
        self.imports.clear()
        # Each buffer moved to the graveyard before anything destroys it (as free_pool does): released
        # first, an interrupt before the clear left destroyed buffers here, handed out again (a NULL binding).
        while self.work:
            self.bury(self.work, next(iter(self.work)))
        self.free_pool()
        self.memo.clear()
