"""The benchmark's timings: a checked request's kernel seconds (`time_request`), and its two ceilings,
timed on the device with timestamp queries:
a vkCmdCopyBuffer and the texel-copy shader (glsl/texel_copy.glsl), each
over device-local work buffers that the runtime keeps for the purpose.

Past a quarter of maxMemoryAllocationSize (or one binding's range, for the
shader) a ceiling is timed on that many bytes and scaled linearly: copies
that large already run at full bandwidth. `copy_timed_bytes` and
`texel_copy_timed_bytes` say how many bytes a ceiling was timed on, so that
a scaled one is reported as scaled, not as a measurement of the whole
tensor."""

from __future__ import annotations

import math
import time
from typing import Any, Callable

from ..runtime import fit
from ..runtime.engine import GROWTH, Runtime
from ..runtime.manifest import find
from ..runtime.steps import WRITE, Launch, arg

WORKGROUP = 64


def _cap(limits: Any) -> int:
    return max(GROWTH, fit.allocation_limit(limits) // 4)


def copy_timed_bytes(limits: Any, nbytes: int) -> int:
    """The bytes a vkCmdCopyBuffer ceiling of `nbytes` is timed on, on a device of `limits` (its
    VkPhysicalDeviceLimits as read, or a benchmark JSON's device facts of the same names): `nbytes`, or a quarter
    of maxMemoryAllocationSize where `nbytes` is more (its time then scaled linearly)."""
    return min(nbytes, _cap(limits))


def texel_copy_timed_bytes(limits: Any, nbytes: int, half: bool) -> int:
    """The bytes the texel-copy ceiling of `nbytes` (16-bit texels where `half`) is timed on: `nbytes`, or what
    one binding holds (maxStorageBufferRange, at most a quarter of maxMemoryAllocationSize, in whole texels)
    where `nbytes` is more (its time then scaled linearly)."""
    texel = 8 if half else 16
    cap = min(_cap(limits), limits.max_storage_buffer_range) // texel * texel
    return nbytes if nbytes <= cap else cap


def _copy_seconds(rt: Runtime, nbytes: int) -> float | None:
    """GPU seconds of one vkCmdCopyBuffer of `nbytes` (it reads and writes
    them: 2 * nbytes moved) between two device buffers."""
    timed = copy_timed_bytes(rt.limits, nbytes)
    if timed < nbytes:
        seconds = _copy_seconds(rt, timed)
        return None if seconds is None else seconds * nbytes / timed
    src = rt.work_buffer("bench_src", nbytes, host_visible=False)
    dst = rt.work_buffer("bench_dst", nbytes, host_visible=False)
    rt.drain()
    s = rt.scratch
    s.begin()
    s.timestamp_begin()
    s.copy_buffer(src, dst, nbytes)
    s.timestamp_end()
    s.end()
    return rt.stream.submit_and_wait([s], want_time=True)


def _texel_copy_seconds(rt: Runtime, nbytes: int, half: bool) -> float | None:
    """GPU seconds of the texel-copy shader over a tensor of `nbytes`
    (float16 texels of 8 bytes when `half`, else float32 ones of 16): one
    invocation per texel, 2 * nbytes moved. The floor of a one-texel
    kernel over the same tensor."""
    texel = 8 if half else 16
    timed = texel_copy_timed_bytes(rt.limits, nbytes, half)
    if timed < nbytes:
        seconds = _texel_copy_seconds(rt, timed, half)
        return None if seconds is None else seconds * nbytes / timed
    texels = max(1, -(-nbytes // texel))
    size = texels * texel
    src = rt.work_buffer("bench_src", size, host_visible=False)
    dst = rt.work_buffer("bench_dst", size, host_visible=False)
    groups = min(rt.limits.max_compute_work_group_count[0], math.ceil(texels / WORKGROUP))
    stride = groups * WORKGROUP
    launch = Launch(find("texel_copy", x="16" if half else "32").name, (("local_size_x", WORKGROUP),),
                    (("texels", texels), ("row_stride", stride)),
                    (arg(dst, 0, size, WRITE), arg(src, 0, size)), (groups, math.ceil(texels / stride), 1))
    return rt.submit((launch,), timed=True, cache=False)


def time_request(dev: Any, req: Any, result: Any, op: Any = None) -> float | None:
    """Kernel seconds of a checked numpy request of `op` (default: the interleaved operator) run into `result`,
    its one output, through the same checks as every call (None without timestamps)."""
    return dev._timed(req, result, op)


def time_copy(dev: Any, nbytes: int) -> float | None:
    """GPU seconds of a device-to-device vkCmdCopyBuffer of `nbytes` on `dev`."""
    return dev._on_runtime(_copy_seconds, nbytes)


def time_texel_copy(dev: Any, nbytes: int, half: bool) -> float | None:
    """GPU seconds of the texel-copy shader over `nbytes` of 16-bit (`half`) or float32 texels on `dev` (the
    roofline)."""
    return dev._on_runtime(_texel_copy_seconds, nbytes, half)


def timed_bytes(dev: Any, nbytes: int, copied: int, half: bool) -> tuple[int, int]:
    """(texel-copy, copy) bytes that `time_texel_copy(dev, nbytes, half)` and `time_copy(dev, copied)` time: fewer
    than asked where that ceiling is scaled."""
    return dev._on_runtime(lambda rt: (texel_copy_timed_bytes(rt.limits, nbytes, half),
                                       copy_timed_bytes(rt.limits, copied)))


def empty_submission_seconds(rt: Runtime, calls: int) -> list[float]:
    """Host seconds of `calls` submissions of an empty command buffer, each waited for, through the same
    binding and stream as every vkrope call: the floor under any call made this way."""
    rt.drain()
    s = rt.scratch
    s.begin()
    s.end()
    out = []
    for _ in range(calls):
        t0 = time.perf_counter()
        rt.stream.submit_and_wait([s])
        out.append(time.perf_counter() - t0)
    return out


def best_seconds(fn: Callable[[], object], repeats: int = 5) -> float:
    """The best wall-clock seconds of `repeats` calls of `fn`, after one warm-up call (pipelines, buffers,
    caches): the demo's end-to-end times."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best
