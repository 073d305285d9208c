"""Recording steps (runtime/steps.py) into a command buffer, with the
barriers derived from what each step reads and writes.

A barrier goes in front of a step exactly when one of its ranges overlaps a
range an earlier step since the last barrier wrote (read after write, write
after write) or read (write after read), and orders every use since that
barrier; nothing else is ordered, so the chunks of one tensor run back to
back. Images are transitioned to the
layout each step needs and back to GENERAL at the end (resident images
rest in GENERAL between submissions). A leading barrier orders the
recording after earlier submissions, a trailing one makes its writes
visible to the host and to later submissions.
"""

from __future__ import annotations

from typing import Callable

from ..vk import sync
from ..vk.commands import Recording
from ..vk.pipeline import ComputePipeline
from ..vk.resources import Image3D
from .manifest import STORAGE_IMAGE, load
from .steps import Arg, Copy, ImageCopy, Launch, Step, accesses


_Touch = tuple[Arg, int, int]  # (range, stage, access)


class _Pending:
    """The ranges touched since the last barrier, kept per resource and
    direction (read / written), each list with the span it covers, and the
    union of their stages and accesses. A step's hazards are looked for
    among its own resources' ranges only, and a list whose span misses the
    step's range is skipped whole: chunks of one tensor run in order, so a
    chunk's range misses the earlier chunks' span, O(1). A barrier is made
    for everything pending (one global memory barrier of their union), which
    then starts empty: a chunk that overlaps the one before (its binding
    rounded down to the offset alignment) finds one range, not all of
    them. One list of every range since the last barrier, barriers keeping
    the ranges they did not name, made recording quadratic (an adversary's
    2048 scattered positions over a resident table past one binding, 1138
    launches, 15 s; a reviewer's 8192 two-channel tokens, 1.9 M compares)."""

    def __init__(self) -> None:
        self.lists: dict[tuple[int, bool], list[Arg]] = {}
        self.spans: dict[tuple[int, bool], tuple[int, int]] = {}
        self.stages = self.access = 0

    def hazard(self, touched: list[_Touch]) -> bool:
        """Whether a step touching `touched` must wait for a pending range: one overlapping one of its ranges,
        where either writes (read after write, write after write, write after read)."""
        for t in touched:
            arg = t[0]
            for writes in ((True, False) if arg.writes else (True,)):
                key = (arg.serial, writes)
                lo, hi = self.spans.get(key, (0, 0))
                if lo < arg.end and arg.offset < hi and any(p.overlaps(arg) for p in self.lists[key]):
                    return True
        return False

    def add(self, touched: list[_Touch]) -> None:
        """Keep a recorded step's ranges."""
        for arg, stage, access in touched:
            key = (arg.serial, arg.writes)
            self.lists.setdefault(key, []).append(arg)
            lo, hi = self.spans.get(key, (arg.offset, arg.end))
            self.spans[key] = (min(lo, arg.offset), max(hi, arg.end))
            self.stages |= stage
            self.access |= access

    def clear(self) -> None:
        """Forget every range: a barrier just ordered them all."""
        self.lists.clear()
        self.spans.clear()
        self.stages = self.access = 0


def _layout_for(step: Step) -> str:
    if isinstance(step, ImageCopy):
        return sync.TO_IMAGE if step.to_image else sync.FROM_IMAGE
    return sync.GENERAL


def record(rec: Recording, steps: tuple[Step, ...], pipeline: Callable[[str, tuple[int, ...]], ComputePipeline],
           timed: bool) -> None:
    """Record `steps` into `rec` (begin to end). `pipeline(kernel, spec)`
    returns the cached pipeline of a launch (spec: the constants' values in
    id order). With `timed`, timestamps
    bracket the launches."""
    rec.begin()
    sync.after_earlier_submissions(rec)
    pending = _Pending()  # since the last barrier
    images: dict[int, Image3D] = {}
    layouts: dict[int, str] = {}  # per image serial, in this recording; every image starts in GENERAL
    launches = [i for i, s in enumerate(steps) if isinstance(s, Launch)]
    first, last = (launches[0], launches[-1]) if launches else (-1, -1)
    for i, step in enumerate(steps):
        touched = [(a,) + sync.use(isinstance(step, Launch), a.access) for a in accesses(step)]
        if pending.hazard(touched):  # (to every stage a step can use: a copy may read, after a launch, what
            # another wrote; from every use pending, which the barrier then orders all)
            sync.before_any_step(rec, pending.stages, pending.access)
            pending.clear()
        for a, stage, _ in touched:
            res = a.resource
            if isinstance(res, Image3D):
                images[a.serial] = res
                want = _layout_for(step)
                now = layouts.get(a.serial, sync.GENERAL)
                if now != want:  # one transition covering every use of it in this step
                    sync.transition(rec, res, now, want, stage, sync.union(t[2] for t in touched
                                                                           if t[0].serial == a.serial))
                    layouts[a.serial] = want
        if timed and i == first:
            rec.timestamp_begin()
        _record_step(rec, step, pipeline, layouts)
        if timed and i == last:
            rec.timestamp_end()
        pending.add(touched)
    for serial, image in images.items():
        now = layouts.get(serial, sync.GENERAL)
        if now != sync.GENERAL:
            sync.transition(rec, image, now, sync.GENERAL)
    sync.visible_to_host_and_later(rec)
    rec.end()


def _record_step(rec: Recording, step: Step, pipeline: Callable[[str, tuple[int, ...]], ComputePipeline],
                 layouts: dict[int, str]) -> None:
    if isinstance(step, Copy):
        rec.copy_buffer(step.src.resource, step.dst.resource, step.dst.size or step.dst.resource.size,
                        src_offset=step.src.offset, dst_offset=step.dst.offset)
    elif isinstance(step, ImageCopy):
        rec.copy_buffer_image(step.buffer.resource, step.image.resource, step.to_image,
                              sync.layout(layouts[step.image.serial]),
                              step.buffer.offset)
    else:
        kernel = load(step.kernel)
        if len(step.args) != len(kernel.bindings):
            raise AssertionError(f"{step.kernel}: {len(kernel.bindings)} bindings, the launch gives {len(step.args)}")
        for a, (name, kind, access) in zip(step.args, kernel.bindings):
            if a.access != access:  # the barriers are derived from these tags: they must be the kernel's
                raise AssertionError(f"{step.kernel}: binding {name} is {access}, the launch says {a.access}")
            if (kind == STORAGE_IMAGE) != isinstance(a.resource, Image3D):
                raise AssertionError(f"{step.kernel}: binding {name} is a {kind}, the launch binds "
                                     f"{type(a.resource).__name__}")
        pipe = pipeline(step.kernel, kernel.spec_values(dict(step.spec)))
        dset = rec.new_set(pipe)
        sets = [a.resource if isinstance(a.resource, Image3D) else
                (a.resource, a.offset, a.size or a.resource.size - a.offset) for a in step.args]
        limit = pipe.ctx.info.max_storage_buffer_range  # (the device's, or a test's forced one: a plan past it is
        # a defect a larger real limit would hide)
        for (name, _, _), res in zip(kernel.bindings, sets):
            if not isinstance(res, Image3D) and res[2] > limit:
                raise AssertionError(f"{step.kernel}: binding {name} spans {res[2]} bytes, past the device's "
                                     f"maxStorageBufferRange {limit}")
        pipe.write_set(dset, sets)
        rec.bind(pipe, dset)
        if kernel.push_constants:
            rec.push_constants(pipe, kernel.pack(dict(step.push)))
        rec.dispatch(*step.grid)


__all__ = ["record"]
