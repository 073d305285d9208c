"""Running operator requests on a `Runtime`, wherever their tensors live.

Every call of every operator comes through `run_jobs`: one or more jobs
(a request, its plan and its outputs) in one submission. Each moved tensor
(runtime/operator.py) is placed by what it is:

- a DeviceArray: bound where it lives (an output that is also an input the
  kernel may not overwrite, or a table, goes through a temporary);
- a numpy array of 4 MiB or more on a device with VK_EXT_external_memory_host,
  C-contiguous and aligned: imported, so the kernel reads or writes the
  caller's memory (on a discrete GPU the import is the source or
  destination of a copy into device-local memory); on unified memory a
  smaller one that the caller passes again (64 KiB or more: a decode loop's
  `out`) is imported once and the import kept for later calls
  (runtime/imports.py; `may_import` says which);
- any other numpy array: a region of the submission's argument arena, one
  reused host-visible buffer that also holds the operators' small tables.
  Regions are laid out from the shapes alone, so a call that differs from
  the last one only in its data replays the same recorded command buffer.
  Texture3d tensors get an image, filled from (or read back into) their
  region with a buffer-image copy.

A numpy call larger than one allocation runs in row blocks
(`op.row_blocks`), one submission each. The operator is passed in; this
module knows none of them.
"""

from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import (DeviceLostError, DeviceTimeoutError, OutOfDeviceMemoryError, UnsupportedFeatureError,
                      VkropeError, VulkanError)
from ..vk.resources import IMPORT_REFUSED, SHORTAGE, TOO_MANY_OBJECTS, Buffer, ImportedBuffer
from .array_memory import copy_steps, free_resource, new_resource
from .engine import Runtime
from .left_running import LEFT_RUNNING, ends_within
from .layout import MIN_BUFFER
from . import imports as kept_imports
from .layout import image_bytes, packed_view, padded_bytes, same_view, tensor_extent
from . import fit
from .operator import Operator, Request, Tensor
from .steps import WRITE, Arg, Copy, ImageCopy, Step, arg
from .work_images import work_image

# Import numpy memory into the device (no copies) from this size on; smaller
# tensors are cheaper through the argument arena and a cached recording.
IMPORT_MIN_BYTES = 4 << 20
# Jobs with texture3d numpy tensors in one submission: each gets cached work
# images of its own slot, so a longer batch is split (images made for one
# call would count against maxMemoryAllocationCount and never replay).
IMAGE_JOBS = 8


@dataclass
class Job:
    """One operator call inside a submission: its request, its plan, and
    every moved tensor it writes (numpy array or DeviceArray), by name."""

    req: Any
    plan: Any
    outs: dict[str, Any]


def allocation_limit(rt: Runtime) -> int:
    """maxMemoryAllocationSize of the runtime's device (fit.allocation_limit)."""
    return fit.allocation_limit(rt.limits)


def plan_for(rt: Runtime, op: Operator, req: Request) -> Any:
    """`op.plan` for this device, memoised when the plan does not depend on
    the data (most of a small call's host cost); the memo is keyed by the
    operator too."""
    own = op.plan_key(req, rt.limits)
    if own is None:
        return op.plan(req, rt.limits)
    key = (getattr(op, "__name__", id(op)), own)
    pl = rt.memo.get(key)
    if pl is None:
        if len(rt.memo) >= 256:
            rt.memo.clear()
        pl = rt.memo[key] = op.plan(req, rt.limits)
    return pl


def moved(req: Any) -> list[Tensor]:
    """The tensors of a request that the runtime moves (not tables)."""
    return [t for t in req.tensors() if not t.table]


def run_jobs(rt: Runtime, op: Operator, calls: list[tuple[Any, dict[str, Any]]], want_time: bool = False) -> float | None:
    """Run (request, outs) calls in order, as few submissions as the
    staging allows: calls with nothing to compute are skipped, numpy
    tensors of one submission take at most half of one allocation (the
    rest is the tables' room), and a call past that alone runs in row
    blocks. Each call's tables are made first, and a call whose numpy
    tables alone pass one allocation is refused before any call runs.
    Returns the kernel seconds when asked (None without timestamps)."""
    budget = allocation_limit(rt) // 2
    seconds: float | None = None
    group: list[Job] = []
    group_tables: list[list[list[Any]]] = []
    used = images = 0

    def flush() -> None:
        nonlocal seconds, group, group_tables, used, images
        if group:
            t = _run_group(rt, op, group, want_time, group_tables)
            seconds = t if seconds is None else seconds + (t or 0.0)
        group, group_tables, used, images = [], [], 0, 0

    for step in _steps(rt, op, calls, budget):
        if step[0] == "blocks":
            flush()
            _, req, outs, limit = step
            t = _run_blocks(rt, op, req, outs, limit, want_time)
            seconds = t if seconds is None else seconds + (t or 0.0)
            continue
        _, job, tables, size, imaged = step
        if used + size > budget or images + imaged > IMAGE_JOBS:
            flush()
        group.append(job)
        group_tables.append(tables)
        used += size
        images += imaged
    flush()
    return seconds


def _steps(rt: Runtime, op: Operator, calls: list[tuple[Any, dict[str, Any]]], budget: int) -> list[tuple]:
    """Each call with something to compute: ("blocks", req, outs, block bytes) for one past the budget, else
    ("job", its Job, its tables, its numpy tensors' staged bytes, its image slots); a StagingTooLarge before
    any call runs where a job's numpy tables alone pass one allocation (it could run in no submission)."""
    out: list[tuple] = []
    limit = allocation_limit(rt)
    for req, outs in calls:
        if req.empty:
            continue
        numpy = _numpy_tensors(req, outs)
        sizes = _staged_sizes(rt, numpy, outs) if numpy else []
        if sum(sizes) > budget:
            out.append(("blocks", req, outs, budget // len(sizes)))
            continue
        job = Job(req, plan_for(rt, op, req), outs)
        tables = op.tables(req, job.plan)
        need = _arena_bytes(rt, [a.nbytes for seg in tables for a in seg if not isinstance(a, Arg)])
        if need > limit:
            raise StagingTooLarge(f"this call's tables need {need} bytes of staging, more than the device's "
                                  f"maxMemoryAllocationSize ({limit}); split the call")
        out.append(("job", job, tables, sum(sizes), _numpy_images(numpy)))
    return out


def _run_group(rt: Runtime, op: Operator, group: list[Job], want_time: bool,
               tables: list[list[list[Any]]]) -> float | None:
    """One submission of `group`, or, where the tables its jobs copy into the arena pass one allocation
    together (the budget counts the numpy tensors only), its halves in order; `tables`: each job's, made
    once (run_jobs). StagingTooLarge comes before any GPU work; it is raised for the whole group, nothing run,
    unless every job fits alone with all its numpy data in the arena (so no half can fail after another ran)."""
    try:
        return run(rt, op, group, want_time, tables)
    except StagingTooLarge:
        limit = allocation_limit(rt)
        if len(group) == 1 or any(_arena_bound(rt, job, t) > limit for job, t in zip(group, tables)):
            raise
    half = len(group) // 2
    first = _run_group(rt, op, group[:half], want_time, tables[:half])
    second = _run_group(rt, op, group[half:], want_time, tables[half:])
    return None if first is None and second is None else (first or 0.0) + (second or 0.0)


def _arena_bound(rt: Runtime, job: Job, tables: list[list[Any]]) -> int:
    """The most arena bytes one job's layout takes: its numpy tables and every numpy tensor staged (an
    import takes none)."""
    sizes = [a.nbytes for seg in tables for a in seg if not isinstance(a, Arg)]
    return _arena_bytes(rt, sizes + _staged_sizes(rt, _numpy_tensors(job.req, job.outs), job.outs))


def _arena_bytes(rt: Runtime, sizes: list[int]) -> int:
    """The arena bytes of regions of these sizes, each rounded as _Arena lays them out."""
    align = max(MIN_BUFFER, rt.limits.min_storage_buffer_offset_alignment)
    return sum(-(-max(MIN_BUFFER, n) // align) * align for n in sizes)


def _numpy_tensors(req: Any, outs: dict[str, Any]) -> list[Tensor]:
    """The moved tensors of a call (whose outputs are `outs`) that are numpy arrays in it."""
    return [t for t in moved(req) if isinstance(_value(t, outs), np.ndarray)]


def _numpy_images(numpy: list[Tensor]) -> int:
    """1 when a call's moved tensors whose values are numpy arrays (`numpy`) hold a texture3d one (it takes an
    image slot), else 0."""
    return int(any(t.storage == "texture3d" for t in numpy))


def _staged_sizes(rt: Runtime, numpy: list[Tensor], outs: dict[str, Any]) -> list[int]:
    """The bytes each numpy tensor of a call (`numpy`: its moved tensors
    whose values are numpy arrays) takes in the arena (an image's packed
    texels for texture3d: more than the values when rows fold)."""
    return [image_bytes(tensor_extent(t.shape, rt.limits.max_image_dimension_3d, t.name), v.itemsize)
            if t.storage == "texture3d" else padded_bytes(v.size, v.itemsize)
            for t in numpy for v in [_value(t, outs)]]


def _run_blocks(rt: Runtime, op: Operator, req: Any, outs: dict[str, Any], limit: int, want_time: bool) -> float | None:
    """A numpy call past one allocation, in row blocks (C-contiguous
    outputs: the blocks are views of them)."""
    targets = {k: v if not isinstance(v, np.ndarray) or v.flags.c_contiguous else np.empty(v.shape, v.dtype)
               for k, v in outs.items()}
    for k, v in targets.items():
        if v is not outs[k] and any(t.name == k and t.reads for t in moved(req)):
            np.copyto(v, outs[k])  # an updated tensor starts from its data
    seconds = _run_block_list(rt, op, op.row_blocks(req, targets, limit), limit, want_time)
    for k, v in targets.items():
        if v is not outs[k]:
            np.copyto(outs[k], v)
    return seconds if want_time else None


class StagingTooLarge(ValueError):
    """A submission's numpy arguments and tables need more staging than one
    allocation (raised before any GPU work)."""


def _run_block_list(rt: Runtime, op: Operator, blocks: list, limit: int, want_time: bool) -> float:
    """Each row block in its own submission. A block whose tables make its
    staging larger than an allocation (wide tables beside narrow tensors:
    float32 cos / sin with 16-bit x) is split again at half the size, before
    any of its GPU work; one past that at 64 KiB is refused."""
    seconds = 0.0
    for sub, sub_outs in blocks:
        if sub.empty:
            continue
        try:
            seconds += run(rt, op, [Job(sub, plan_for(rt, op, sub), sub_outs)], want_time) or 0.0
        except StagingTooLarge:
            if limit <= 64 << 10:
                raise
            seconds += _run_block_list(rt, op, op.row_blocks(sub, sub_outs, limit // 2), limit // 2, want_time)
    return seconds


# --- one submission -----------------------------------------------------------------
# Where a region's data comes from at each call: ("table", job, segment,
# entry) a numpy table of `op.tables`; ("tensor", job, name, extent) a numpy
# tensor's value (extent: its image's, texture3d); None: written, not filled.
Source = Any


@dataclass
class _Arena:
    """The submission's argument arena: regions for numpy tables and
    tensors in one host-visible buffer (with a device-local twin on a
    discrete GPU), read regions first, then written ones. Offsets follow
    from the sizes alone."""

    rt: Runtime
    reads: list[tuple[int, Source]] = field(default_factory=list)  # (bytes, where its data comes from)
    writes: list[tuple[int, Source]] = field(default_factory=list)
    host: Any = None
    bound: Any = None
    split: int = 0  # where the written regions start
    end: int = 0

    def add(self, nbytes: int, source: Source = None, written: bool = False) -> tuple[bool, int]:
        """A region of `nbytes` (filled from `source` before each
        submission); returns its handle for `place`."""
        regions = self.writes if written else self.reads
        regions.append((max(MIN_BUFFER, nbytes), source))
        return written, len(regions) - 1

    def layout(self) -> None:
        """Offsets for every region, and the buffers."""
        align = max(MIN_BUFFER, self.rt.limits.min_storage_buffer_offset_alignment)
        offsets: dict[tuple[bool, int], int] = {}
        end = 0
        for written, regions in ((False, self.reads), (True, self.writes)):
            if written:
                self.split = end
            for i, (size, _) in enumerate(regions):
                offsets[(written, i)] = end
                end = -(-(end + size) // align) * align
        self.end = end
        self.offsets = offsets
        limit = allocation_limit(self.rt)
        if end > limit:
            raise StagingTooLarge(f"this call's arguments need {end} bytes of staging, more than the device's "
                                  f"maxMemoryAllocationSize ({limit}); split the call")
        if end:
            self.host, self.bound = self.rt.staged("args", end)

    def place(self, handle: tuple[bool, int]) -> int:
        """The byte offset of a region (after `layout`)."""
        return self.offsets[handle]

    def fills(self) -> tuple[tuple[int, Source], ...]:
        """(offset, source) of every region filled before a submission."""
        return tuple((self.offsets[(written, i)], source) for written, regions in ((False, self.reads),
                                                                                   (True, self.writes))
                     for i, (_, source) in enumerate(regions) if source is not None)

    def steps(self) -> tuple[tuple[Step, ...], tuple[Step, ...]]:
        """(upload before the launches, download after): none on unified memory."""
        if not self.end or self.host is self.bound:
            return (), ()
        up: tuple[Step, ...] = (Copy(arg(self.host, 0, self.end), arg(self.bound, 0, self.end, WRITE)),)
        down: tuple[Step, ...] = ()
        if self.end > self.split:
            n = self.end - self.split
            down = (Copy(arg(self.bound, self.split, n), arg(self.host, self.split, n, WRITE)),)
        return up, down


@dataclass(frozen=True)
class Prepared:
    """One submission laid out: its steps, and per call the arena regions
    to fill (offset, source) and the numpy results to copy out (offset, job,
    name, shape, dtype, image extent). It depends on the shapes and places
    of the jobs' tensors, not on their data: a call that repeats the last
    one's layout (the hot path) fills and submits it again as it is."""

    steps: tuple[Step, ...]
    end: int  # arena bytes (0: no arena; else the runtime's "args" buffers, which the steps bind: a
    # larger arena replaces them, and Runtime.forget_recordings drops every Prepared with the recordings)
    fills: tuple[tuple[int, Source], ...]
    copies_out: tuple[tuple[int, int, str, tuple[int, ...], np.dtype, Any], ...]

    def submit(self, rt: Runtime, jobs: list[Job], tables: list[list[list[Any]]], want_time: bool,
               cache: bool) -> float | None:
        """Fill the arena with this call's data, submit, copy the numpy results out."""
        if not self.end:  # (nothing staged: every tensor resident, no table)
            return rt.submit(self.steps, timed=want_time, cache=cache)
        host = rt.staged("args", self.end)[0]
        for offset, source in self.fills:
            if source[0] == "table":
                a = tables[source[1]][source[2]][source[3]]
                if a.size:
                    host.view(a.dtype, a.size, offset)[:] = a.reshape(-1)
            else:
                job, name, extent = jobs[source[1]], source[2], source[3]
                a = _value(next(t for t in job.req.tensors() if t.name == name), job.outs)
                if a.size:
                    np.copyto(_view(host, offset, a.shape, a.dtype, extent), a, casting="no")
            rt.counts["bytes_uploaded"] += a.nbytes
        seconds = rt.submit(self.steps, timed=want_time, cache=cache)
        for offset, j, name, shape, dtype, extent in self.copies_out:
            out = jobs[j].outs[name]
            np.copyto(out, _view(host, offset, shape, dtype, extent))
            rt.counts["bytes_read_back"] += out.nbytes
        return seconds


def _value(t: Tensor, outs: dict[str, Any]) -> Any:
    """Tensor `t`'s value in a call whose outputs are `outs`: its output (a moved tensor it writes), or what was
    passed."""
    return outs[t.name] if t.writes and not t.table else t.value


def _view(host: Buffer, offset: int, shape: tuple[int, ...], dtype: np.dtype,
          extent: tuple[int, int, int] | None) -> np.ndarray:
    """A tensor's region as a numpy view: flat texels, or an image's packed texel rows."""
    if extent is not None:
        return packed_view(host, extent, dtype, shape, offset)
    size = math.prod(shape)
    return host.view(dtype, size, offset).reshape(shape)


# Prepared submissions kept per runtime (the hot path), least recently used out first: one per
# recording kept, so a loop over many layers' caches replays.
MAX_PREPARED = Runtime.MAX_RECORDINGS


def run(rt: Runtime, op: Operator, jobs: list[Job], want_time: bool = False,
        tables: list[list[list[Any]]] | None = None) -> float | None:
    """One submission for `jobs` (each within one allocation; `tables`: their op.tables, made here if not
    given); returns the kernel seconds when asked. A call whose layout repeats a kept one's
    (`hot_key`) fills and submits that one; any other is laid out anew."""
    imports: list[ImportedBuffer] = []
    temporaries: list[Any] = []
    timed_out: DeviceTimeoutError | None = None
    rt.imports.begin_call()
    rt.in_call = True
    rt.images_in_call.clear()
    try:
        tables = [op.tables(job.req, job.plan) for job in jobs] if tables is None else tables
        key = hot_key(rt, op, jobs, tables)
        prepared = rt.prepared.get(key) if key is not None else None
        if key is not None and prepared is not None:
            return submit_kept(rt, key, prepared, jobs, tables, want_time)
        try:
            prepared = _prepare(rt, jobs, tables, imports, temporaries)
        except OutOfDeviceMemoryError as exc:
            if exc.result != TOO_MANY_OBJECTS or rt.arena_only:
                raise
            prepared = _prepare_through_the_arena(rt, jobs, tables, imports, temporaries)
        # Per-call resources (imports, temporaries): their serials never come
        # back, so a recording over them never replays, nor does the layout.
        cache = not imports and not temporaries
        if cache and key is not None:
            rt.prepared[key] = prepared
            while len(rt.prepared) > MAX_PREPARED:
                rt.prepared.popitem(last=False)
        return prepared.submit(rt, jobs, tables, want_time, cache=cache)
    except DeviceTimeoutError as exc:  # (the wait for this call's work: release_call's own would be a second)
        timed_out = exc
        raise
    finally:
        rt.in_call = False
        release_call(rt, imports, temporaries, keep=(jobs, tables), timed_out=timed_out)


def _prepare_through_the_arena(rt: Runtime, jobs: list[Job], tables: list[list[list[Any]]],
                               imports: list[ImportedBuffer], temporaries: list[Any]) -> Prepared:
    """The call laid out again at maxMemoryAllocationCount, with no imports:
    on a discrete GPU an import needs a device-local buffer beside it, one
    allocation more than the arena, which grows in place of its buffers
    (#35: the H200 path refused a big numpy call at a count of 3 that the
    unified path served). The first attempt's imports go first, and every
    device-local buffer kept beside an import (this attempt's, or an
    interrupted call's: the arena-only layout uses none); a new call number
    makes the kept imports it found idle, so reclaim may release them."""
    release_call(rt, imports, temporaries)
    rt.release_import_companions()
    rt.imports.begin_call()
    rt.arena_only = True
    try:
        return _prepare(rt, jobs, tables, imports, temporaries)
    finally:
        rt.arena_only = False


def submit_kept(rt: Runtime, key: tuple, prepared: Prepared, jobs: list[Job], tables: list[list[list[Any]]],
                 want_time: bool) -> float | None:
    """The hot path: a kept layout (under `key`) filled with this call's data and submitted again."""
    rt.prepared.move_to_end(key)
    rt.counts["hot_calls"] += 1
    return prepared.submit(rt, jobs, tables, want_time, cache=True)


def hot_key(rt: Runtime, op: Operator, jobs: list[Job], tables: list[list[list[Any]]]) -> tuple | None:
    """What a submission's layout (`_prepare`) depends on, data aside: per
    job its plan, each moved tensor's shape and dtype (numpy: placed in the
    arena) or resource (DeviceArray: bound where it is; the same resource
    named twice is the same array, which decides what needs a temporary),
    the resources of the tables the caller passed, and the sizes (numpy) or
    ranges (resident) of the kernel's tables. None where a tensor may be
    imported or is a texture3d numpy tensor: those layouts are made per call."""
    parts: list[Any] = [getattr(op, "__name__", id(op))]
    for job, job_tables in zip(jobs, tables):
        tensors: list[Any] = []
        for t in job.req.tensors():
            v = _value(t, job.outs)
            if isinstance(v, np.ndarray):
                if not t.table and (t.storage != "buffer" or may_import(rt, v.nbytes)):
                    return None
                tensors.append((t.name, v.shape, v.dtype.str) if not t.table else None)
            elif v is not None:
                tensors.append((t.name, v.resource.serial if v.resource is not None else None))  # (None: empty)
        segs = tuple(tuple(a if isinstance(a, Arg) else a.nbytes for a in seg) for seg in job_tables)
        parts.append((job.plan, tuple(tensors), segs))
    return tuple(parts)


def _prepare(rt: Runtime, jobs: list[Job], tables: list[list[list[Any]]],
             imports: list[ImportedBuffer], temporaries: list[Any]) -> Prepared:
    """One submission laid out: its steps, the regions its data fills and the numpy results it gives."""
    arena = _Arena(rt)
    # Tables first: an output may alias a numpy table, and their data is
    # copied into the arena before anything is written.
    job_tables: list[list[list[Any]]] = []
    for j, segs in enumerate(tables):
        job_tables.append([[a if isinstance(a, Arg) else (arena.add(a.nbytes, ("table", j, s, e)), a.nbytes)
                            for e, a in enumerate(seg)] for s, seg in enumerate(segs)])
    placed: list[tuple[dict[str, Any], list[Any], list[Any]]] = []
    copies_out: list[tuple[Any, int, str, tuple[int, ...], np.dtype, Any]] = []  # (region, job, name, ...)
    slot = 0  # the image slot of the next job with texture3d numpy tensors (run_jobs keeps them < IMAGE_JOBS)
    for i, job in enumerate(jobs):
        before: list[Any] = []
        after: list[Any] = []
        where = _place_job(rt, i, slot, job, arena, imports, temporaries, before, after, copies_out)
        slot += _numpy_images(_numpy_tensors(job.req, job.outs))
        placed.append((where, before, after))
    arena.layout()
    up, down = arena.steps()
    bound = arena.bound
    # Each job's own steps around its launches, job after job: a later job
    # that reads (or writes) what an earlier one wrote through a temporary
    # is ordered after that copy (the recorder derives the barriers).
    body: list[Step] = []
    for job, segs, (where, before, after) in zip(jobs, job_tables, placed):
        resolved = {name: ((bound, arena.place(loc[1])) if loc[0] == "arena" else loc[1]) for name, loc in where.items()}
        args = [[a if isinstance(a, Arg) else arg(bound, arena.place(a[0]), max(MIN_BUFFER, a[1])) for a in seg]
                for seg in segs]
        body += _resolve(before, arena)
        body += job.plan.launches(resolved, args)
        body += _resolve(after, arena)
    return Prepared(steps=tuple(up) + tuple(body) + tuple(down), end=arena.end,
                    fills=arena.fills(),
                    copies_out=tuple((arena.place(handle), j, name, shape, dtype, extent)
                                     for handle, j, name, shape, dtype, extent in copies_out))


def _resolve(steps: list[Any], arena: _Arena) -> list[Step]:
    """Steps whose buffer side is an arena region, made concrete."""
    out: list[Step] = []
    for s in steps:
        if isinstance(s, tuple) and s[0] == "image":  # ("image", handle, size, image, to_image)
            _, handle, size, image, to_image = s
            buf = arg(arena.bound, arena.place(handle), size, "read" if to_image else WRITE)
            out.append(ImageCopy(buf, arg(image, access=WRITE if to_image else "read"), to_image=to_image))
        else:
            out.append(s)
    return out


def _place_job(rt: Runtime, i: int, slot: int, job: Job, arena: _Arena, imports: list[ImportedBuffer],
               temporaries: list[Any], before: list[Any], after: list[Any], copies_out: list) -> dict[str, Any]:
    """Where each moved tensor of `job` lives: ("arena", region) or
    ("at", (resource, offset)); the steps around the launches that move
    them (into `before` / `after`), and the numpy results to copy out."""
    tensors = moved(job.req)
    values = {t.name: _value(t, job.outs) for t in tensors}
    numpy = [t for t in tensors if isinstance(values[t.name], np.ndarray)]
    # Big numpy outputs are imported (unless they overlap another output:
    # the host copies then decide, in order).
    imported: dict[str, ImportedBuffer] = {}
    for t in numpy:
        v = values[t.name]
        if t.writes and not any(u is not t and u.writes and np.shares_memory(v, values[u.name]) for u in numpy):
            buf = _import(rt, t, v, imports)
            if buf is not None:
                imported[t.name] = buf
    # An input that is the very memory of an imported output the kernel may
    # write over shares its import (in place); any other input overlapping
    # an imported output is staged in the arena before the kernel writes.
    shared: dict[str, str] = {}
    for t in numpy:
        if t.reads and not t.writes:
            for name in imported:
                if same_view(values[t.name], values[name]) and job.plan.may_alias(name, t.name):
                    shared[t.name] = name
    where: dict[str, Any] = {}
    for t in tensors:
        v = values[t.name]
        if t.name in shared:
            continue
        if isinstance(v, np.ndarray):
            starts_full = t.reads or t.name in shared.values()
            where[t.name] = _place_numpy(rt, i, slot, t, v, starts_full, values, imported, arena, imports, before,
                                         after, copies_out)
        elif v.resource is None and t.storage == "buffer":
            # (an empty DeviceArray holds no memory: a stand-in region the kernel reads and writes none of,
            # bound beside the tensors that hold work: the decode step's q of no heads beside its k)
            where[t.name] = ("arena", arena.add(0, None, written=t.writes))
        else:
            where[t.name] = ("at", (v.resource, 0))
    for name, into in shared.items():
        where[name] = where[into]
    # A written DeviceArray that is also an input the kernel may not write
    # over (a table, or a tensor its plan cannot alias): through a temporary.
    tables = [t.value for t in job.req.tensors() if t.table]
    for t in tensors:
        v = values[t.name]
        if not t.writes or isinstance(v, np.ndarray) or v.resource is None:  # (empty: its stand-in, above)
            continue
        clash = any(v is u for u in tables) or any(
            u is not t and u.reads and values[u.name] is v and not job.plan.may_alias(t.name, u.name) for u in tensors)
        if clash:
            tmp = new_resource(rt, t.storage, t.shape, t.dtype)
            temporaries.append(tmp)
            nbytes = padded_bytes(v.size, v.dtype.itemsize)
            via = f"image_copy:{i}:{t.name}"  # (its own work buffer: no other step of the call resizes it)
            if t.reads:  # an updated tensor starts from its data
                before.extend(copy_steps(rt, v.resource, tmp, nbytes, via))
            where[t.name] = ("at", (tmp, 0))
            after.extend(copy_steps(rt, tmp, v.resource, nbytes, via))
    return where


def _place_numpy(rt: Runtime, i: int, slot: int, t: Tensor, v: np.ndarray, starts_full: bool,
                 values: dict[str, Any], imported: dict[str, ImportedBuffer], arena: _Arena,
                 imports: list[ImportedBuffer], before: list[Any], after: list[Any], copies_out: list) -> Any:
    """The place of numpy tensor `t` (holding data before the kernel runs
    when `starts_full`)."""
    nbytes = padded_bytes(v.size, v.itemsize)
    if t.storage == "texture3d":
        extent = tensor_extent(t.shape, rt.limits.max_image_dimension_3d, t.name)
        size = image_bytes(extent, v.itemsize)
        image = work_image(rt, f"{slot}:{t.name}", extent, v.dtype)
        handle = arena.add(size, ("tensor", i, t.name, extent) if starts_full else None, written=t.writes)
        if starts_full:
            before.append(("image", handle, size, image, True))
        if t.writes:
            after.append(("image", handle, size, image, False))
            copies_out.append((handle, i, t.name, t.shape, v.dtype, extent))
        return ("at", (image, 0))
    if t.name in imported:
        buf = imported[t.name]
        if rt.unified:
            if not starts_full and v.nbytes >= IMPORT_MIN_BYTES:
                _prefault(v)  # the device writes it directly (a kept import's pages were, when it was made)
            return ("at", (buf, buf.offset))
        dev = rt.import_companion(i, t.name, nbytes)
        if starts_full:
            before.append(Copy(arg(buf, buf.offset, v.nbytes), arg(dev, 0, v.nbytes, WRITE)))
        after.append(Copy(arg(dev, 0, v.nbytes), arg(buf, buf.offset, v.nbytes, WRITE)))
        return ("at", (dev, 0))
    if not t.writes and not any(np.shares_memory(v, values[n]) for n in imported):
        x_buf = _import(rt, t, v, imports)
        if x_buf is not None:
            if rt.unified:
                return ("at", (x_buf, x_buf.offset))
            dev = rt.import_companion(i, t.name, nbytes)
            before.append(Copy(arg(x_buf, x_buf.offset, v.nbytes), arg(dev, 0, v.nbytes, WRITE)))
            return ("at", (dev, 0))
    handle = arena.add(nbytes, ("tensor", i, t.name, None) if starts_full else None, written=t.writes)
    if t.writes:
        copies_out.append((handle, i, t.name, t.shape, v.dtype, None))
    return ("arena", handle)


def may_import(rt: Runtime, nbytes: int) -> bool:
    """Whether a numpy buffer tensor of `nbytes` may be imported rather than
    staged in the arena: from IMPORT_MIN_BYTES on (an import for the call),
    and on unified memory from kept_imports.MIN_BYTES on (kept for later
    calls). Not kept on a discrete GPU: there the kernel reads a device-local
    copy either way, so a kept import saves one host copy (~10 us at 256 KiB)
    but makes the call's layout anew each time (`hot_key`): on the H200
    the numpy (1, 256, 256) call cost 22.7x an empty submission so, 16.8x
    through the arena's replayed layout (#35)."""
    if rt.arena_only or not rt.ctx.external_memory_host:
        return False
    return nbytes >= (kept_imports.MIN_BYTES if rt.unified else IMPORT_MIN_BYTES)


def _import(rt: Runtime, t: Tensor, a: np.ndarray, imports: list[ImportedBuffer]) -> ImportedBuffer | None:
    """`a`'s memory as a buffer, or None where it goes through the arena.

    Imported: a C-contiguous writeable buffer tensor on a device with
    VK_EXT_external_memory_host, at an offset the device accepts, that is
    big (an import for this call: registered in `imports` before it has a
    handle, so whatever interrupts the call releases it) or passed before
    (an import kept for later calls, runtime/imports.py, which decides).
    None too when the driver refuses this memory, and for a kept import
    when it fails for any reason but a lost device (the arena serves)."""
    if not (t.storage == "buffer" and may_import(rt, a.nbytes) and a.flags.c_contiguous and a.flags.writeable):
        return None  # (before reading the address: that costs microseconds)
    kept = a.nbytes < IMPORT_MIN_BYTES
    address = a.ctypes.data
    if kept:
        buf = rt.imports.find(a, address)  # the common case of a decode loop: nothing else to check
        if buf is not None:
            rt.counts["bytes_imported"] += a.nbytes
            return buf
    info = rt.limits
    if not (info.min_imported_host_pointer_alignment > 0 and
            (address % info.min_imported_host_pointer_alignment) % info.min_storage_buffer_offset_alignment == 0):
        return None
    if kept and not rt.imports.reused(a):
        return None
    try:
        if kept:
            buf = rt.imports.make(a, address)  # (on unified memory only: may_import)
            if t.writes:
                _prefault(a)  # once: later calls find its pages mapped (a prefault of 256 KiB costs ~35 us)
        else:
            buf = ImportedBuffer(rt.ctx, address, a.nbytes, holder=imports)
        rt.counts["bytes_imported"] += a.nbytes
        return buf
    except (VulkanError, UnsupportedFeatureError) as exc:
        result = getattr(exc, "result", "")
        refused = result in IMPORT_REFUSED or isinstance(exc, UnsupportedFeatureError)
        if kept:
            rt.imports.forget_failed()
            if isinstance(exc, (DeviceLostError, DeviceTimeoutError)):
                raise
            rt.imports.refuse(a, remember=refused)  # (a passing shortage: tried again two calls on)
            return None
        if not refused and result not in SHORTAGE:
            raise  # device loss, out of memory: the caller must see them
        if imports and imports[-1].handle is None:
            rt.ctx.release(imports[-1])  # released before forgotten
            imports.pop()
        return None


def release_call(rt: Runtime, imports: list[ImportedBuffer], temporaries: list[Any], keep: Any = None,
                 timed_out: DeviceTimeoutError | None = None) -> None:
    """The device reads and writes the caller's memory: it must be done with
    it before the imports go and the call returns or raises. drain()
    re-raises an interruption only after the device is done; after a failed
    wait (`timed_out`: the call's own, which is not waited for again),
    `_settled` waits once more, bounded: work still running then keeps
    everything it may use (`keep`: the call's jobs and tables, which hold
    the caller's arrays) in LEFT_RUNNING. Kept imports past their bounds go
    once the device is done with them."""
    try:
        if timed_out is None:
            if imports or temporaries or rt.imports.kept:
                rt.drain()
            rt.imports.trim()
        elif not _settled(rt, timed_out):  # (the call's exception goes on as it is)
            _leave_running(keep, imports, temporaries)
    except VkropeError as exc:
        if not _settled(rt, exc):
            _leave_running(keep, imports, temporaries)
        raise
    finally:
        rt.imports.forget_failed()
        while imports:
            rt.ctx.release(imports[-1])  # released before forgotten
            imports.pop()
        while temporaries:
            free_resource(rt, temporaries[-1])
            temporaries.pop()


def _leave_running(keep: Any, imports: list[ImportedBuffer], temporaries: list[Any]) -> None:
    """Keep what work still running may use (LEFT_RUNNING), so that nothing of it is released."""
    LEFT_RUNNING.append((keep, imports[:], temporaries[:]))
    imports.clear()
    temporaries.clear()


def _settled(rt: Runtime, exc: VkropeError) -> bool:
    """Whether the device is done after a failed wait: a lost one (whose wait ends at once), or a timed-out
    one whose work ends within one more wait of the same bound (at least a second: it may only be slow).
    Never an unbounded wait: vkDeviceWaitIdle after a timeout hung the call as long as the work ran, and a
    hung GPU's for ever, whatever VKROPE_TIMEOUT_S said (an adversary's: 14 s at a bound of 0.5 s)."""
    if isinstance(exc, DeviceTimeoutError):
        done = ends_within(rt, exc.seconds)
        exc.waited_again = not done  # (the owner abandons the device without a third wait)
        return done
    try:
        rt.ctx.wait_idle()
    except VkropeError:
        pass
    return True


_MADV_POPULATE_WRITE = 23  # Linux >= 5.14
_madvise: Any = None


def _prefault(a: np.ndarray) -> None:
    """Map every page of `a` before the device writes it.

    A fresh result array is untouched memory. Left alone, lavapipe's worker
    threads take its page faults during the kernel, which made that kernel
    take 17 to 90 ms instead of 17 (fp32 8x4096x256, 32 MiB out); mapping the
    pages first costs ~3 ms and keeps the kernel at its usual time. Best
    effort: a no-op where madvise or MADV_POPULATE_WRITE is missing."""
    global _madvise
    if _madvise is None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
            _madvise = libc.madvise
        except (OSError, AttributeError):
            _madvise = False
    if _madvise:
        start = a.ctypes.data // 4096 * 4096
        _madvise(start, a.ctypes.data + a.nbytes - start, _MADV_POPULATE_WRITE)


__all__ = ["IMPORT_MIN_BYTES", "Job", "run", "run_jobs", "plan_for", "allocation_limit", "moved", "hot_key",
           "may_import", "submit_kept", "release_call"]
