"""Device memory of `DeviceArray`s: allocation (buffers from the runtime's
reuse pool, or 3D images), release, uploads and downloads, device copies."""

from __future__ import annotations

import math
import weakref
from typing import Any

import numpy as np

from ..vk.resources import Buffer, Image3D
from .engine import Runtime
from .layout import MIN_BUFFER
from .layout import image_bytes, packed_view, padded_bytes, tensor_extent
from .steps import WRITE, Copy, ImageCopy, Step, arg


class _Held:
    """Where `new_resource` puts memory for a caller that passes no array."""

    _resource: Any = None


def new_resource(rt: Runtime, storage: str, shape: tuple[int, ...], dtype: np.dtype,
                 into: Any = None) -> Buffer | Image3D:
    """Device memory for an array of `shape` / `dtype`: a buffer of whole
    texels (from the pool when one fits) or a width-packed 3D image; with
    `into` (a DeviceArray) also handed to it, and noted in `rt.held` with
    the array (weakly) and its attributes. Memory from the pool is found, moved out and handed
    over with no call and no allocation in between: Python runs a signal
    handler or a garbage collection (either may change the pool, through
    the reentrant lock) only at those, so the index found is still the
    memory's, and the memory is in the pool or in the array, never in both
    or neither. Before new memory is made, that of arrays that died holding
    theirs is taken back when one is marked so (`noting_ref`, `reclaim_dead`). (New memory can be lost to an
    interruption as the allocation returns: it is then released with the
    device.)"""
    dtype = np.dtype(dtype)
    if rt.returned:
        take_back(rt)
    into = _Held() if into is None else into
    state = into.__dict__  # (the array's attributes: reclaim_dead takes the memory out of them)
    ref = None if isinstance(into, _Held) else noting_ref(rt, into, state)
    held = rt.held if ref is not None else {}  # (a caller's temporary is its own to give back)
    pool: list[Any] = rt.pool  # (Buffer or Image3D, told apart by is_image: isinstance is a call)
    image = storage != "buffer"
    size = 0 if image else max(MIN_BUFFER, padded_bytes(math.prod(shape), dtype.itemsize))
    extent, fmt = ((tensor_extent(shape, rt.limits.max_image_dimension_3d), rt.image_format(dtype)) if image
                   else ((0, 0, 0), 0))
    for again in (False, True):
        for i, res in enumerate(pool):  # (the same image again: a decode loop over resident images replays)
            if res.is_image == image and (res.extent == extent and res.format == fmt if image
                                          else size <= res.size <= 2 * size):
                del pool[i]
                state["_resource"] = res  # (a dict's item: no call, as DeviceArray.__setattr__ is)
                held[res.serial] = (res, ref, state)
                return res  # type: ignore[no-any-return]
        if again or not (rt.held.dead and reclaim_dead(rt)):
            break
        take_back(rt)
    res = rt.new_image(extent, fmt) if image else Buffer(rt.ctx, size, host_visible=rt.unified)
    state["_resource"] = res
    held[res.serial] = (res, ref, state)
    return res


def noting_ref(rt: Runtime, arr: Any, state: dict) -> weakref.ref:
    """A weak reference to `arr` whose callback marks `rt.held` when the array dies still holding its memory
    (`state`, its attributes: its `__del__` did not give it back), so that allocations look for such memory
    only then (`reclaim_dead` walks every array)."""
    held = rt.held

    def died(_: Any) -> None:
        if state.get("_resource") is not None:
            held.dead = True

    return weakref.ref(arr, died)


def reclaim_dead(rt: Runtime) -> bool:
    """Take back the memory of arrays that died holding it (a signal
    handler's exception in `__del__` before it gave the memory back: the
    array is gone, the memory was noted in `rt.held` with it); whether any
    was. An array whose weak reference is dead may not be finalised yet (the
    cycle collector clears every weak reference of its garbage before it
    runs any `__del__`), or may be revived by a traceback that holds its
    frame: the memory is taken out of its attributes too, so its `__del__`
    finds none to give back and a revived array is released. From the check
    to the move there is no call, so the array's own release cannot run in
    between."""
    found = rt.held.dead = False  # (an array that dies during the walk marks it again)
    try:
        # (the keys, copied with no allocation a cycle collection could start in between: list(items())
        # makes a tuple per item, and a collection may run an array's __del__, which deletes its entry
        # mid-copy; CPython 3.11's dict.copy then even makes a broken copy. An entry gone since: skipped)
        for serial in list(rt.held):
            entry = rt.held.get(serial)
            if entry is None:
                continue
            res, ref, state = entry
            if ref() is not None:
                continue
            if serial in rt.held and rt.held[serial][0] is res and "_resource" in state and state["_resource"] is res:
                state["_resource"] = None
                state["_released"] = True
                del rt.held[serial]
                rt.returned += [res]
                found = True
    except BaseException:
        rt.held.dead = True  # (an interrupted walk: the arrays it did not reach are looked at next time)
        raise
    return found


def free_resource(rt: Runtime, res: Buffer | Image3D) -> None:
    """Take back the memory of a temporary (see `take_back`)."""
    rt.returned += [res]
    take_back(rt)


def take_back(rt: Runtime) -> None:
    """Move the memory of released arrays (`rt.returned`) on: to the reuse
    pool (buffers and images alike, bounded in bytes and in count), what
    falls out of it to the graveyard (destroyed once no submission can use
    it). Each move looks, takes out and puts in with no allocation before
    the put (a call's own work comes before Python runs a signal handler or
    a collection, which may release arrays and so take back memory here
    again, through the reentrant lock): every resource is in exactly one
    list, whatever interrupts (in two, it could be handed out twice; a list
    built for `+=` let a collection's finaliser move one memory twice, #35)."""
    returned, pool, graveyard = rt.returned, rt.pool, rt.graveyard
    while returned:
        res = returned[-1]
        del returned[-1]
        (pool if res.handle is not None else graveyard).append(res)
    while len(pool) > rt.pool_count or sum(p.size for p in pool) > rt.POOL_BYTES:
        res = pool[0]
        del pool[0]
        graveyard.append(res)
    if not rt.stream.in_flight:
        rt.drain()


def transfer(rt: Runtime, res: Buffer | Image3D, data: np.ndarray, upload: bool) -> None:
    """Copy numpy `data` into `res` (upload) or `res` into `data`."""
    rt.drain()
    if isinstance(res, Buffer) and res.host_visible and rt.unified:
        # (On a discrete GPU, mapped device-local memory is write-combined
        # and slow to read: go through staging there.)
        view = res.view(data.dtype, data.size).reshape(data.shape)
        if upload:
            np.copyto(view, data, casting="no")
        else:
            np.copyto(data, view)
        rt.counts["bytes_uploaded" if upload else "bytes_read_back"] += data.nbytes
        return
    if isinstance(res, Buffer):
        nbytes = max(MIN_BUFFER, padded_bytes(data.size, data.itemsize))
        host = rt.work_buffer("host_transfer", nbytes, host_visible=True)
        view = host.view(data.dtype, data.size).reshape(data.shape)
        h, r = arg(host, 0, nbytes, WRITE if not upload else "read"), arg(res, 0, nbytes, WRITE if upload else "read")
        steps: tuple[Step, ...] = (Copy(h, r),) if upload else (Copy(r, h),)
    else:
        host = rt.work_buffer("host_transfer", image_bytes(res.extent, data.itemsize), host_visible=True)
        view = packed_view(host, res.extent, data.dtype, data.shape)
        steps = (ImageCopy(arg(host, access="read" if upload else WRITE), arg(res, access=WRITE if upload else "read"),
                           to_image=upload),)
    if upload:
        np.copyto(view, data, casting="no")
    rt.submit(steps)
    if not upload:
        np.copyto(data, view)
    rt.counts["bytes_uploaded" if upload else "bytes_read_back"] += data.nbytes

def copy_steps(rt: Runtime, src: Buffer | Image3D, dst: Buffer | Image3D, nbytes: int,
               via: str = "image_copy") -> tuple[Step, ...]:
    """The steps that copy one array's data (`nbytes`, padded to whole
    texels, for buffers; whole images of one extent, through a device-local
    work buffer, role `via`) into another's, inside a submission. Pool
    buffers may be larger than the data: only the data is copied."""
    if isinstance(src, Buffer) and isinstance(dst, Buffer):
        if nbytes > min(src.size, dst.size):
            raise AssertionError(f"copy of {nbytes} bytes between buffers of {src.size} and {dst.size}")
        return (Copy(arg(src, 0, nbytes), arg(dst, 0, nbytes, WRITE)),)
    assert isinstance(src, Image3D) and isinstance(dst, Image3D)
    if src.extent != dst.extent:
        raise AssertionError(f"copy between images of extents {src.extent} and {dst.extent}")
    host = rt.work_buffer(via, image_bytes(src.extent, 4), host_visible=False)
    return (ImageCopy(arg(host, access=WRITE), arg(src), to_image=False),
            ImageCopy(arg(host), arg(dst, access=WRITE), to_image=True))


def copy_resource(rt: Runtime, src: Buffer | Image3D, dst: Buffer | Image3D, nbytes: int) -> None:
    """Device-side copy of one array's data into another's (see `copy_steps`)."""
    steps = copy_steps(rt, src, dst, nbytes)
    rt.submit(steps)
