"""Recording steps (runtime/steps.py) into a command buffer, with the
barriers derived from what each step reads and writes.

A barrier goes in front of a step exactly when one of its ranges overlaps a
range an earlier step of the same recording wrote (read after write, write
after write) or read (write after read); nothing else is ordered, so the
chunks of one tensor run back to back. Images are transitioned to the
layout each step needs and back to GENERAL at the end (resident images
rest in GENERAL between submissions). A leading barrier orders the
recording after earlier submissions, a trailing one makes its writes
visible to the host and to later submissions.
"""

from __future__ import annotations

from typing import Any, Callable

from ..vk import binding as b
from ..vk.commands import Recording
from ..vk.pipeline import ComputePipeline
from ..vk.resources import Image3D
from .manifest import STORAGE_IMAGE, load
from .steps import UPDATE, WRITE, Arg, Copy, ImageCopy, Launch, Step, accesses


def _stage_access(step: Step, a: Arg) -> tuple[int, int]:
    vk = b.vk()
    if isinstance(step, Launch):
        access = {WRITE: vk.VK_ACCESS_SHADER_WRITE_BIT, UPDATE: vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT}
        return vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, access.get(a.access, vk.VK_ACCESS_SHADER_READ_BIT)
    access = vk.VK_ACCESS_TRANSFER_WRITE_BIT if a.access == WRITE else vk.VK_ACCESS_TRANSFER_READ_BIT
    return vk.VK_PIPELINE_STAGE_TRANSFER_BIT, access


def _layout_for(step: Step) -> int:
    vk = b.vk()
    if isinstance(step, ImageCopy):
        return vk.VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL if step.to_image else vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL
    return vk.VK_IMAGE_LAYOUT_GENERAL


def record(rec: Recording, steps: tuple[Step, ...], pipeline: Callable[[str, tuple[int, ...]], ComputePipeline],
           timed: bool) -> None:
    """Record `steps` into `rec` (begin to end). `pipeline(kernel, spec)`
    returns the cached pipeline of a launch (spec: the constants' values in
    id order). With `timed`, timestamps
    bracket the launches."""
    vk = b.vk()
    all_cmds = vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT
    mem_rw = vk.VK_ACCESS_MEMORY_READ_BIT | vk.VK_ACCESS_MEMORY_WRITE_BIT
    rec.begin()
    rec.barrier(all_cmds, vk.VK_ACCESS_MEMORY_WRITE_BIT, all_cmds, mem_rw)  # after earlier submissions
    steps_stages = vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | vk.VK_PIPELINE_STAGE_TRANSFER_BIT
    steps_access = (vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT | vk.VK_ACCESS_TRANSFER_READ_BIT
                    | vk.VK_ACCESS_TRANSFER_WRITE_BIT)
    pending: list[tuple[Arg, int, int]] = []  # (range, stage, access) since the last barrier
    images: dict[int, Image3D] = {}
    layouts: dict[int, int] = {}  # per image serial, in this recording; every image starts in GENERAL
    launches = [i for i, s in enumerate(steps) if isinstance(s, Launch)]
    first, last = (launches[0], launches[-1]) if launches else (-1, -1)
    for i, step in enumerate(steps):
        touched = [(a,) + _stage_access(step, a) for a in accesses(step)]
        hazards = [p for p in pending for t in touched if p[0].overlaps(t[0]) and (p[0].writes or t[0].writes)]
        if hazards:
            # Made visible to every stage a step can use (compute and
            # transfer), not just this step's: the ranges leave `pending`, so
            # a later step of another stage (a copy reading what a launch
            # wrote, after a launch read it) must be covered too.
            rec.barrier(_union(h[1] for h in hazards), _union(h[2] for h in hazards), steps_stages, steps_access)
            pending = [p for p in pending if p not in hazards]
        for a, stage, _ in touched:
            res = a.resource
            if isinstance(res, Image3D):
                images[a.serial] = res
                want = _layout_for(step)
                now = layouts.get(a.serial, vk.VK_IMAGE_LAYOUT_GENERAL)
                if now != want:  # one transition covering every use of it in this step
                    access = _union(t[2] for t in touched if t[0].serial == a.serial)
                    rec.image_layout(res, now, want, all_cmds, mem_rw, stage, access)
                    layouts[a.serial] = want
        if timed and i == first:
            rec.timestamp_begin()
        _record_step(rec, step, pipeline, layouts)
        if timed and i == last:
            rec.timestamp_end()
        pending += touched
    for serial, image in images.items():
        now = layouts.get(serial, vk.VK_IMAGE_LAYOUT_GENERAL)
        if now != vk.VK_IMAGE_LAYOUT_GENERAL:
            rec.image_layout(image, now, vk.VK_IMAGE_LAYOUT_GENERAL, all_cmds, mem_rw, all_cmds, mem_rw)
    rec.barrier(all_cmds, vk.VK_ACCESS_MEMORY_WRITE_BIT, all_cmds | vk.VK_PIPELINE_STAGE_HOST_BIT,
                mem_rw | vk.VK_ACCESS_HOST_READ_BIT)
    rec.end()


def _union(bits: Any) -> int:
    out = 0
    for v in bits:
        out |= v
    return out


def _record_step(rec: Recording, step: Step, pipeline: Callable[[str, tuple[int, ...]], ComputePipeline],
                 layouts: dict[int, int]) -> None:
    if isinstance(step, Copy):
        rec.copy_buffer(step.src.resource, step.dst.resource, step.dst.size or step.dst.resource.size,
                        src_offset=step.src.offset, dst_offset=step.dst.offset)
    elif isinstance(step, ImageCopy):
        rec.copy_buffer_image(step.buffer.resource, step.image.resource, step.to_image, layouts[step.image.serial],
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
