"""Whole calls kept (#32, #35): a call that repeats a kept call's very
arguments (the same DeviceArrays and specs, equal values: ops/repeat.py's
key) is submitted again as it is, without its front end, its checks or its
layout (Device._operate).

A call is kept when every tensor it moves was a DeviceArray given to it,
and it returned one of them; or when the one output it made for itself is
what it returned (`y = dev.apply(dx, table)`). Such a call's layout binds
the memory of the result it made; the result is the caller's from then on,
so a replay may only use that memory again once the caller has let the
result go and its memory is back in the runtime's pool. A kept call
remembers the memory (by its serial, never reused) of its last
MADE_LAYOUTS layouts, and a replay takes one of those back from the pool
by serial, or none (the call then runs in full and is kept anew): no live
array is ever written, and no other memory is taken. A loop that drops
each result before the next call replays on one buffer; `y = op(...)`,
whose last result is alive during the call, on two, in turn.
"""

from __future__ import annotations

import weakref  # (KeptCall's references)
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .array import DeviceArray, all_usable, weak_refs
from .array_memory import free_resource, noting_ref, take_back
from .engine import Runtime
from .execute import Job, hot_key, moved, plan_for, release_call, submit_kept
from .operator import Operator

# Calls kept per runtime; past that the memo starts again (more than the recordings kept).
MAX_KEPT_CALLS = 1024
# Layouts (one per result memory) a call that makes its result keeps: two serve `y = op(...)` loops.
MADE_LAYOUTS = 2


@dataclass(frozen=True)
class Made:
    """The one output a kept call makes for itself and returns: the array a replay returns."""

    storage: str
    shape: tuple[int, ...]
    dtype: np.dtype


@dataclass(frozen=True)
class KeptCall:
    """A kept call: the objects its arguments were keyed by (weakly: a kept
    call keeps nothing alive), its kept layouts (`execute.hot_key`), each
    with the serial of the result memory it binds (None: it returns one of
    its arguments), newest first; its tables (they follow from the arguments
    alone), and which of those objects it returned (an index), or the
    output it makes (`Made`)."""

    refs: tuple[weakref.ref, ...]
    layouts: tuple[tuple[int | None, tuple], ...]
    tables: list[list[Any]]
    result: int | Made


def keep_call(rt: Runtime, key: tuple, objects: list[Any], op: Operator, req: Any, outs: dict[str, Any],
              result: Any) -> None:
    """After a call of one request ran (under the device's lock, as every
    use of the runtime): keep it under `key` (what identifies its
    arguments, `objects` those kept by identity, ops/repeat.py) when every
    tensor it moves was a DeviceArray given to it, or the one output made
    for it (in `outs`, by name) that it returned as it is, it returned one
    of those, and its layout is kept; else nothing."""
    which: int | Made | None = next((i for i, o in enumerate(objects) if o is result), None)
    if req.empty:
        return
    res = result.resource if isinstance(result, DeviceArray) else None
    written = {}
    for t in moved(req):
        v = t.value
        if v is None and t.writes and which is None and res is not None and outs.get(t.name) is result:
            which, v = Made(t.storage, tuple(t.shape), np.dtype(t.dtype)), result
        if v is None or isinstance(v, np.ndarray):
            return  # (an output made for the call and not returned alone, or numpy data: every call has its own)
        if t.writes:
            written[t.name] = v
    if which is None:
        return
    # (references made only for a call that can be kept: each has a callback)
    refs = weak_refs(objects, lambda: rt.kept_calls.pop(key, None))
    if not all_usable(refs):
        return  # (another thread may have released an argument once the call was done)
    plan = plan_for(rt, op, req)
    tables = [op.tables(req, plan)]
    hot = hot_key(rt, op, [Job(req, plan, written)], tables)
    if hot is None or hot not in rt.prepared:
        return
    serial = res.serial if isinstance(which, Made) and res is not None else None
    layouts: tuple[tuple[int | None, tuple], ...] = ((serial, hot),)
    before = rt.kept_calls.get(key)
    if serial is not None and before is not None and before.result == which:
        layouts += tuple(lay for lay in before.layouts if lay[0] != serial)[:MADE_LAYOUTS - 1]
    if len(rt.kept_calls) >= MAX_KEPT_CALLS:
        rt.kept_calls.clear()
    rt.kept_calls[key] = KeptCall(refs, layouts, tables, which)


def replay(rt: Runtime, key: tuple, objects: list[Any], wrap: Callable[[Made], DeviceArray]) -> tuple[bool, Any]:
    """Submit again the call kept under `key`, when there is one, every
    object it was made from is alive (so `objects`, of the same ids, are
    they), every DeviceArray among them usable (they are this runtime's: the
    call that was kept checked it, and an array never changes device), its
    layout still kept, and (a call that makes its result) the memory one of
    its layouts binds is back in the pool: (True, its result: one of
    `objects`, or an array `wrap(made)` makes empty, which then takes that
    memory). Else (False, None): the call is checked and run as any other
    (and fails as any other would). Whatever interrupts it, the memory taken
    from the pool is held by the pool, by this call or by the array, never
    by two (a second hand-back would give one buffer to two arrays) nor by
    none."""
    kept = rt.kept_calls.get(key)
    if kept is None or not all_usable(kept.refs):
        return False, None
    if not isinstance(kept.result, Made):
        hot = kept.layouts[0][1]
        if hot not in rt.prepared:
            return False, None
        _submit(rt, hot, kept.tables)
        return True, objects[kept.result]
    out = wrap(kept.result)
    state = out.__dict__  # (noted with the memory it takes: array_memory.reclaim_dead)
    ref = noting_ref(rt, out, state)
    if rt.returned:
        take_back(rt)  # (memory of arrays released since: into the pool, where it is looked for)
    taken: list[Any] = [None]  # (the memory between the pool and the array: held here, handed back if not on)
    try:
        hot = _take_from_pool(rt, kept, taken)
        if hot is None:
            return False, None
        _submit(rt, hot, kept.tables)
        # (one statement, no call in it: an interruption lands before the array holds the memory, or after)
        state["_resource"], taken[0] = taken[0], None  # (the runtime's own array; a dict's item: no call)
        rt.held[out._resource.serial] = (out._resource, ref, state)  # noqa: SLF001
        return True, out
    finally:
        if taken[0] is not None:
            free_resource(rt, taken[0])


def _take_from_pool(rt: Runtime, kept: KeptCall, taken: list[Any]) -> tuple | None:
    """A layout of `kept` still kept whose memory is in the pool: that memory moved into `taken[0]`, the
    layout returned; else None. Python runs a signal handler or a garbage collection (either may release
    arrays or take pool memory, through the reentrant lock) only at a call: the memory is found and moved
    with none in between, so the index is still its own and the memory is in the pool or in `taken`, never
    in both or neither (an index found before a call once gave a replay another array's memory, #35)."""
    pool = rt.pool
    for serial, hot in kept.layouts:
        if hot not in rt.prepared:
            continue
        for i, r in enumerate(pool):
            if r.serial == serial:
                del pool[i]
                taken[0] = r
                return hot
    return None


def _submit(rt: Runtime, hot: tuple, tables: list[list[Any]]) -> None:
    """A kept layout submitted again with the kept call's tables (no numpy tensor: nothing of a job is read)."""
    rt.imports.begin_call()
    rt.in_call = True
    try:
        submit_kept(rt, hot, rt.prepared[hot], [], tables, False)
    finally:
        rt.in_call = False
        release_call(rt, [], [])
    rt.counts["replayed_calls"] += 1


__all__ = ["MADE_LAYOUTS", "MAX_KEPT_CALLS", "KeptCall", "Made", "keep_call", "replay"]
