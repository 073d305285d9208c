"""Running an operator's plan on a `Runtime`, wherever its data lives.

- numpy in, numpy out, small: through reused staging buffers (or a work
  image for texture3d) and a recording cached per call shape;
- numpy in, numpy out, >= IMPORT_MIN_BYTES: the caller's memory imported
  (VK_EXT_external_memory_host), read and written in place on unified
  memory or used as the copy source and destination on a discrete GPU;
- larger than one allocation: in row blocks, one submission each;
- device-resident arrays: several jobs in one submission.

The operator is passed in (a module of vkrope/ops: `plan`, `plan_key`,
`tables`, `row_blocks`); this module knows none of them.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import VkropeError, VulkanError
from ..vk.resources import Buffer, ImportedBuffer
from .engine import MIN_BUFFER, Runtime
from .layout import image_bytes, packed_view, padded_bytes, same_view
from .steps import WRITE, Arg, Copy, ImageCopy, Step, arg

# Import numpy memory into the device (no copies) from this size on; smaller
# calls are cheaper through the cached staging buffers and recordings.
IMPORT_MIN_BYTES = 4 << 20


@dataclass
class Job:
    """One operator call inside a resident submission: its request and plan,
    and the device resources holding its input and receiving its output."""

    req: Any
    plan: Any
    x_res: Any
    out_res: Any


def plan_for(rt: Runtime, op: Any, req: Any, storage: str) -> Any:
    """`op.plan` for this device, memoised when the plan does not depend on
    the data (most of a small call's host cost)."""
    key = op.plan_key(req, storage)
    if key is None:
        return op.plan(req, storage, rt.limits)
    pl = rt.memo.get(key)
    if pl is None:
        if len(rt.memo) >= 256:
            rt.memo.clear()
        pl = rt.memo[key] = op.plan(req, storage, rt.limits)
    return pl


def pack_tables(rt: Runtime, segments: list[list[Any]]) -> tuple[tuple[Step, ...], list[list[Arg]]]:
    """Every table array into one argument buffer, each at an offset the
    device accepts for a binding; returns (the upload step, none on
    unified memory; the ranges of each segment's tables). Entries that are
    already `Arg`s (device-resident tables) are bound where they are."""
    align = max(MIN_BUFFER, rt.limits.min_storage_buffer_offset_alignment)
    offsets: list[list[Any]] = []
    end = 0
    for seg in segments:
        row: list[Any] = []
        for a in seg:
            if isinstance(a, Arg):
                row.append(a)
                continue
            row.append((end, max(MIN_BUFFER, a.nbytes)))
            end = -(-(end + max(MIN_BUFFER, a.nbytes)) // align) * align
        offsets.append(row)
    limit = rt.limits.max_memory_allocation_size
    if limit and end > limit:
        raise ValueError(f"this call's tables need {end} bytes, more than the device's maxMemoryAllocationSize "
                         f"({limit}); split the call")
    host, bound = rt.staged("args", end)
    for seg, row in zip(segments, offsets):
        for a, place in zip(seg, row):
            if not isinstance(a, Arg) and a.size:
                host.view(a.dtype, a.size, place[0])[:] = a
    used = max(MIN_BUFFER, end)  # the whole grow-only buffer need not cross the bus
    upload: tuple[Step, ...] = () if host is bound else (Copy(arg(host, 0, used), arg(bound, 0, used, WRITE)),)
    return upload, [[p if isinstance(p, Arg) else arg(bound, p[0], p[1]) for p in row] for row in offsets]


# --- numpy in, numpy out -----------------------------------------------------------
def run_numpy(rt: Runtime, op: Any, req: Any, storage: str, out: np.ndarray, want_time: bool) -> float | None:
    """Run `req` (numpy x) into numpy `out`; returns kernel seconds when asked."""
    limit = (rt.limits.max_memory_allocation_size or (1 << 31)) // 2  # x, and its staging or image
    if req.x.nbytes <= limit:
        return _run_block(rt, op, req, storage, out, want_time)
    target = out if out.flags.c_contiguous else np.empty(out.shape, out.dtype)
    seconds = 0.0
    for sub, sub_out in op.row_blocks(req, target, limit):
        seconds += _run_block(rt, op, sub, storage, sub_out, want_time) or 0.0
    if target is not out:
        np.copyto(out, target)
    return seconds if want_time else None


def _run_block(rt: Runtime, op: Any, req: Any, storage: str, out: np.ndarray, want_time: bool) -> float | None:
    pl = plan_for(rt, op, req, storage)
    # Tables first: `out` may alias them, and x may be copied into `out` below.
    head, table_args = pack_tables(rt, [list(t) for t in op.tables(req, pl)])
    if storage == "buffer" and _importable(rt, out):
        # Each import registers itself here before it has a handle, so the
        # finally below releases it whatever interrupts the call.
        imports: list[ImportedBuffer] = []
        try:
            try:
                _import(rt, req.x, out, pl.in_place, imports)
            except VulkanError as exc:
                if exc.result not in ("VK_ERROR_INVALID_EXTERNAL_HANDLE", "VK_ERROR_INVALID_EXTERNAL_HANDLE_KHR",
                                      "VK_ERROR_FORMAT_NOT_SUPPORTED", "VK_ERROR_UNKNOWN"):
                    raise  # device loss, out of memory: the caller must see them
            if imports and not any(imp.handle is None for imp in imports):
                return _run_imported(rt, req, pl, out, head, table_args, imports, want_time)
        finally:
            _release_imports(rt, imports)
        # The driver refused this memory: take the copy path.
    x = req.x
    if storage == "buffer":
        nbytes = padded_bytes(x.size, x.itemsize)
        x_host, x_loc, up = _staged_tensor(rt, "x", nbytes, upload=True)
        view = x_host.view(x.dtype, x.size).reshape(x.shape)
        if pl.in_place:
            out_host, out_loc, down = x_host, x_loc, _staged_download(rt, x_host, x_loc[0], nbytes)
        else:
            out_host, out_loc, down = _staged_tensor(rt, "out", nbytes, upload=False)
        out_view = out_host.view(x.dtype, x.size).reshape(x.shape)
    else:
        extent = pl.image_extent
        host = rt.work_buffer("host_x", image_bytes(extent, x.itemsize), host_visible=True)
        view = out_view = packed_view(host, extent, x.dtype, x.shape)
        image = rt.work_image("x_image", extent, x.dtype)
        out_image = image if pl.in_place else rt.work_image("out_image", extent, x.dtype)
        x_loc, out_loc = (image, 0), (out_image, 0)
        up = (ImageCopy(arg(host), arg(image, access=WRITE), to_image=True),)
        down = (ImageCopy(arg(host, access=WRITE), arg(out_image), to_image=False),)
    np.copyto(view, x, casting="no")
    steps = head + up + pl.launches(x_loc, out_loc, table_args) + down
    seconds = rt.submit(steps, timed=want_time)
    np.copyto(out, out_view)
    return seconds


def _staged_tensor(rt: Runtime, role: str, nbytes: int, upload: bool) -> tuple[Buffer, tuple[Any, int], tuple[Step, ...]]:
    """(host buffer, bound location, the copy step between them) of a staged tensor."""
    host, bound = rt.staged(role, nbytes)
    if host is bound:
        return host, (bound, 0), ()
    if upload:
        return host, (bound, 0), (Copy(arg(host, 0, nbytes), arg(bound, 0, nbytes, WRITE)),)
    return host, (bound, 0), _staged_download(rt, host, bound, nbytes)


def _staged_download(rt: Runtime, host: Buffer, bound: Buffer, nbytes: int) -> tuple[Step, ...]:
    return () if host is bound else (Copy(arg(bound, 0, nbytes), arg(host, 0, nbytes, WRITE)),)


def _importable(rt: Runtime, out: np.ndarray) -> bool:
    """Whether `out` can be imported: a device with VK_EXT_external_memory_host,
    a large C-contiguous writeable output at an offset the device accepts."""
    return rt.ctx.external_memory_host and out.nbytes >= IMPORT_MIN_BYTES and _import_ok(rt, out)


def _import_ok(rt: Runtime, a: np.ndarray) -> bool:
    info = rt.limits
    return (
        a.flags.c_contiguous
        and a.flags.writeable
        and info.min_imported_host_pointer_alignment > 0
        and (a.ctypes.data % info.min_imported_host_pointer_alignment) % info.min_storage_buffer_offset_alignment == 0
    )


def _import(rt: Runtime, x: np.ndarray, out: np.ndarray, in_place: bool, imports: list[ImportedBuffer]) -> None:
    """Import out, then x (only when it is importable and apart from out; an
    operator that cannot run in place then gets x staged), into `imports`."""
    ImportedBuffer(rt.ctx, out.ctypes.data, out.nbytes, holder=imports)
    if not same_view(x, out) and _import_ok(rt, x) and not np.shares_memory(x, out):
        ImportedBuffer(rt.ctx, x.ctypes.data, x.nbytes, holder=imports)


def _run_imported(rt: Runtime, req: Any, pl: Any, out: np.ndarray, head: tuple[Step, ...],
                  table_args: list[list[Arg]], imports: list[ImportedBuffer], want_time: bool) -> float | None:
    """The zero-copy path over imported `out` (and x). When x was not
    imported (strided, read-only, misaligned, overlapping out) it is copied
    into `out` once and rotated in place. The caller (_run_block) destroys
    the imports once the device is done with them, so no device view
    outlives the numpy memory."""
    x = req.x
    out_buf = imports[0]
    nbytes = x.nbytes
    x_loc: tuple[Any, int]
    pre: tuple[Step, ...] = ()
    if len(imports) == 2:
        x_loc = (imports[1], imports[1].offset)
        if rt.unified:
            _prefault(out)  # the device writes it directly
    elif pl.in_place:
        if not same_view(x, out):
            np.copyto(out, x, casting="no")
        x_loc = (out_buf, out_buf.offset)
    else:  # x apart from out, through staging
        host, x_loc, pre = _staged_tensor(rt, "x", padded_bytes(x.size, x.itemsize), upload=True)
        host.view(x.dtype, x.size).reshape(x.shape)[...] = x
    if rt.unified:
        steps = head + pre + pl.launches(x_loc, (out_buf, out_buf.offset), table_args)
    else:
        # Discrete: the kernel runs in device-local memory, imports are copy endpoints.
        dev_x = rt.work_buffer("dev_x", padded_bytes(x.size, x.itemsize), host_visible=False)
        dev_out = dev_x if pl.in_place else rt.work_buffer("dev_out", padded_bytes(x.size, x.itemsize),
                                                            host_visible=False)
        steps = (head + pre + (Copy(arg(x_loc[0], x_loc[1], nbytes), arg(dev_x, 0, nbytes, WRITE)),)
                 + pl.launches((dev_x, 0), (dev_out, 0), table_args)
                 + (Copy(arg(dev_out, 0, nbytes), arg(out_buf, out_buf.offset, nbytes, WRITE)),))
    return rt.submit(steps, timed=want_time, cache=False)


def _release_imports(rt: Runtime, imports: list[ImportedBuffer]) -> None:
    """The device writes the caller's memory: it must be done with it before
    the imports go and the call returns or raises. drain() re-raises an
    interruption only after the device is done; after a failed wait
    (timeout, loss) wait for the whole device."""
    try:
        rt.drain()
    except VkropeError:
        try:
            rt.ctx.wait_idle()
        except VkropeError:
            pass
        raise
    finally:
        while imports:
            rt.ctx.release(imports[-1])  # released before forgotten
            imports.pop()


# --- device-resident arrays ----------------------------------------------------------
def run_resident(rt: Runtime, op: Any, jobs: list[Job], want_time: bool = False) -> float | None:
    """Run jobs on device-resident resources in one submission (in order:
    a job that reads an earlier job's output is ordered after it)."""
    segments, counts = [], []
    for job in jobs:
        t = [list(s) for s in op.tables(job.req, job.plan)]
        segments += t
        counts.append(len(t))
    steps, table_args = pack_tables(rt, segments)
    start = 0
    for job, count in zip(jobs, counts):
        steps += job.plan.launches((job.x_res, 0), (job.out_res, 0), table_args[start:start + count])
        start += count
    return rt.submit(steps, timed=want_time)


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


__all__ = ["IMPORT_MIN_BYTES", "Job", "run_numpy", "run_resident", "plan_for", "pack_tables"]
