"""Command recording and submission.

`CommandStream` owns the command pool, the fence for bounded waits and a
timestamp query pool. A `Recording` owns one command buffer and the
descriptor pools its sets come from; it can be recorded once and submitted
many times (the runtime caches them per submission), or re-recorded per use.
"""

from __future__ import annotations

import math
import os
import threading
import time
from typing import Any

from . import binding as b
from .context import Context
from .instance import DEVICE_TYPE_NAMES
from .pipeline import ComputePipeline
from .resources import Buffer, Image3D
from ..errors import DeviceTimeoutError, VkropeError

# The bound on one wait for a submission when VKROPE_TIMEOUT_S is unset: a
# DeviceTimeoutError then, never a hang.
DEFAULT_TIMEOUT_S = 60.0
# Set (by tests) to bound every wait, whatever VKROPE_TIMEOUT_S says.
TIMEOUT_OVERRIDE_S: float | None = None
# CommandStream.in_flight when an interruption hit the submit itself.
MAYBE = "maybe"
# Descriptor sets per descriptor pool of a recording (more pools are added as needed).
SETS_PER_POOL = 64
# How long a wait polls the fence (vkGetFenceStatus) before it blocks in
# vkWaitForFences, per device type code (VkPhysicalDeviceType; absent: 0).
# A blocking wait on a GPU wakes tens of microseconds after the work ends,
# more than a decode-sized kernel takes (issue #35); polling ends the wait
# as the work does. Not on a CPU device: there the work runs on the cores a
# poll would take.
SPIN_S: dict[int, float] = {code: 200e-6 for code, name in DEVICE_TYPE_NAMES.items() if name.endswith("GPU")}


def environment_timeout() -> float:
    """The VKROPE_TIMEOUT_S environment variable (read when a device opens,
    so a bad value is a clear error at first use, not at import), else DEFAULT_TIMEOUT_S."""
    raw = os.environ.get("VKROPE_TIMEOUT_S", "").strip()
    if not raw:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= 1e6):
        raise ValueError(f"VKROPE_TIMEOUT_S must be a number of seconds in (0, 1e6]; got {raw!r}")
    return value


# Per thread, over every stream: the submissions it began, and its count at the last one known queued: what an
# interrupted call's exception says (device.note_submitted; an interrupted submit is settled by its fence, and
# stays unknown only where that fails: _settle_submit). Per
# thread, so that another thread's submissions are not counted as the call's; over every stream, so that a
# call whose default device another thread replaced is counted on both.
_MINE = threading.local()


def submissions() -> tuple[int, int]:
    """(begun, queued): the submissions the calling thread has begun, on any device, and that count at its last
    one known queued."""
    return getattr(_MINE, "begun", 0), getattr(_MINE, "queued", 0)


class CommandStream:
    """The command pool, one fence and a two-entry timestamp query pool.
    Not thread-safe: its owner serialises use."""

    def __init__(self, ctx: Context) -> None:
        vk = b.vk()
        ctx.check_open()
        self.ctx = ctx
        # (read once: the environment lookup cost more than a microsecond of every call)
        self._env_timeout_s = environment_timeout()
        self.pool: Any = None
        self.fence: Any = None
        self._fences: Any = None  # the fence in a cffi array, for the direct calls
        self.queries: Any = None
        self.in_flight: bool | str = False
        ctx.adopt(self)  # first: whatever is created below has an owner
        try:
            pool_info = vk.VkCommandPoolCreateInfo(
                flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                queueFamilyIndex=ctx.info.compute_queue_family,
            )
            b.create(self, "pool", "VkCommandPool", "vkCreateCommandPool", ctx.handle, pool_info, None)
            b.create(self, "fence", "VkFence", "vkCreateFence", ctx.handle, vk.VkFenceCreateInfo(), None)
            if ctx.timestamps:
                qinfo = vk.VkQueryPoolCreateInfo(queryType=vk.VK_QUERY_TYPE_TIMESTAMP, queryCount=2)
                b.create(self, "queries", "VkQueryPool", "vkCreateQueryPool", ctx.handle, qinfo, None)
        except BaseException:
            ctx.release(self)
            raise

    def submit_and_wait(self, recordings: list["Recording"], timeout_s: float | None = None,
                        want_time: bool = False) -> float | None:
        """Submit recorded command buffers in one vkQueueSubmit and wait at
        most `timeout_s` seconds. With `want_time`, return the GPU seconds
        between the timestamps the last recording wrote (else None)."""
        vk = b.vk()
        ctx = self.ctx
        if len(recordings) == 1:
            submit = recordings[0].submit_info()
        else:
            cmds = b.array("VkCommandBuffer", [r.cmd for r in recordings])  # (alive until the call returns)
            submit = b.array("VkSubmitInfo", [vk.VkSubmitInfo(commandBufferCount=len(recordings), pCommandBuffers=cmds)])
        timeout = self.timeout_s() if timeout_s is None else timeout_s
        self.drain(timeout)
        b.call_direct("vkResetFences", ctx.handle, 1, self.fences())
        # In flight from here until the fence is seen signalled: if anything
        # (a signal handler's exception, say) interrupts the wait below, the
        # next use of this stream drains it first, and the owner drains it
        # before releasing anything the submission uses. An exception that
        # lands around the submit itself leaves it unknown whether the work
        # was queued: MAYBE, which drain() settles with vkQueueWaitIdle. That
        # wait has no bound (a fence wait would hang for the whole timeout if
        # nothing was queued), so VKROPE_TIMEOUT_S does not cover the one
        # case of an interruption landing on the submit of a hung device.
        _MINE.begun = getattr(_MINE, "begun", 0) + 1  # (no call between it and the mark: an interruption finds
        self.in_flight = MAYBE  # both or neither)
        try:
            b.call_direct("vkQueueSubmit", ctx.queue, 1, submit, self.fence)
            self.in_flight = True
            _MINE.queued = _MINE.begun
        except VkropeError:
            self.in_flight = False  # the driver refused it: nothing was queued
            _MINE.begun -= 1
            raise
        except BaseException:
            self._settle_submit(timeout)
            raise
        self.drain(timeout)
        if not (want_time and recordings[-1].timed):
            return None
        data = vk.ffi.new("uint64_t[2]")
        flags = vk.VK_QUERY_RESULT_64_BIT | vk.VK_QUERY_RESULT_WAIT_BIT
        b.call("vkGetQueryPoolResults", ctx.handle, self.queries, 0, 2, 16, data, 8, flags)
        bits = ctx.info.timestamp_valid_bits
        mask = (1 << bits) - 1 if bits < 64 else (1 << 64) - 1
        return ((int(data[1]) - int(data[0])) & mask) * ctx.info.timestamp_period_ns * 1e-9

    def _settle_submit(self, timeout: float) -> None:
        """After an interruption around vkQueueSubmit (a signal handler's exception): once the queue is idle,
        the fence, reset before the submit, says whether the work was queued, and the thread's counts say so
        (the call's exception note is then definite: submitted, or nothing reached the device). A failure
        here leaves them unsure, as they were."""
        try:
            self.drain(timeout)
            queued = b.call_direct("vkGetFenceStatus", self.ctx.handle, self.fence) == b.vk().VK_SUCCESS
        except BaseException:  # noqa: BLE001  (the interruption being handled is what the caller sees)
            return
        if queued:
            _MINE.queued = _MINE.begun
        elif getattr(_MINE, "queued", 0) != _MINE.begun:  # (none queued yet: a thread's first submit)
            _MINE.begun -= 1  # (begun, never queued: not a submission)

    def timeout_s(self) -> float:
        """The bound on one wait: TIMEOUT_OVERRIDE_S when set, else VKROPE_TIMEOUT_S as read when the stream was
        made, else DEFAULT_TIMEOUT_S."""
        return TIMEOUT_OVERRIDE_S if TIMEOUT_OVERRIDE_S is not None else self._env_timeout_s

    def fences(self) -> Any:
        """The fence as the `VkFence[1]` the fence calls take (made once)."""
        if self._fences is None or self._fences[0] != self.fence:
            self._fences = b.array("VkFence", [self.fence])
        return self._fences

    def drain(self, timeout: float | None = None) -> None:
        """Wait until the last submission has finished (no-op when none is in
        flight). An exception raised while waiting (KeyboardInterrupt, a
        signal handler's) does not end the wait: it is re-raised once the
        device is done, so nothing the submission uses is freed or rewritten
        under it. Device loss and timeouts raise at once."""
        if not self.in_flight:
            return
        deadline = self.timeout_s() if timeout is None else timeout
        start = time.perf_counter()
        window = min(deadline, SPIN_S.get(self.ctx.info.type_code, 0.0))
        spin_until = start + window  # (once: an interrupted poll does not start again)
        interrupted: BaseException | None = None
        while self.in_flight:
            try:
                if self.in_flight is MAYBE:
                    b.call("vkQueueWaitIdle", self.ctx.queue)  # returns at once when nothing was queued
                elif not (window > 0 and self._signalled_by(spin_until)):
                    # (what is left of the bound: the poll's time, or an interrupted wait's, counts)
                    left = max(0.0, deadline - (time.perf_counter() - start))
                    b.wait_fence(self.ctx.handle, self.fences(), int(left * 1e9))
                self.in_flight = False
            except DeviceTimeoutError as exc:
                exc.seconds = deadline
                raise
            except VkropeError:
                raise
            except BaseException as exc:  # noqa: BLE001  (re-raised below)
                interrupted = interrupted or exc
        if interrupted is not None:
            raise interrupted

    def _signalled_by(self, until: float) -> bool:
        """Poll the fence until it is signalled (True) or `until` (perf_counter seconds) passes (False); at
        least once (a thread descheduled past `until` before its first look still looks)."""
        device, fence = self.ctx.handle, self.fence
        while True:
            if b.call_direct("vkGetFenceStatus", device, fence) == b.vk().VK_SUCCESS:
                return True
            if time.perf_counter() >= until:
                return False

    def destroy(self) -> None:
        """Destroy the query pool, the fence and the command pool (with every
        command buffer allocated from it)."""
        b.destroy_handles(self, self.ctx.handle, (
            ("queries", "vkDestroyQueryPool", "VkQueryPool"),
            ("fence", "vkDestroyFence", "VkFence"),
            ("pool", "vkDestroyCommandPool", "VkCommandPool"),
        ))


class Recording:
    """One primary command buffer and the descriptor sets its commands bind."""

    def __init__(self, stream: CommandStream, holder: list | None = None) -> None:
        # `holder` gets this object before it has a command buffer (see
        # ImportedBuffer): an interrupted caller can still release it.
        self.ctx = ctx = stream.ctx
        self.stream = stream
        self.cmd: Any = None
        # Descriptor pools per set shape (descriptor counts of a pipeline's set).
        self.pools: dict[tuple, list[DescriptorPool]] = {}
        self.timed = False
        self.cached = False  # set by the runtime's recording cache
        self._submit: Any = None  # (cffi command-buffer array, VkSubmitInfo), made once
        if holder is not None:  # complete enough to be released from here on
            holder.append(self)
        vk = b.vk()
        ctx.check_open()
        alloc = vk.VkCommandBufferAllocateInfo(
            commandPool=stream.pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1
        )
        ctx.adopt(self)  # first: whatever is created below has an owner
        try:
            b.create(self, "cmd", "VkCommandBuffer", "vkAllocateCommandBuffers", ctx.handle, alloc)
        except BaseException:
            ctx.release(self)
            raise

    # --- lifecycle ------------------------------------------------------
    def begin(self) -> None:
        """Start (re-)recording: resets the command buffer and frees this
        recording's descriptor sets."""
        vk = b.vk()
        b.call("vkResetCommandBuffer", self.cmd, 0)
        for pools in self.pools.values():
            for pool in pools:
                if pool.handle is not None:
                    pool.reset()
        b.call("vkBeginCommandBuffer", self.cmd, vk.VkCommandBufferBeginInfo(flags=0))
        self.timed = False

    def end(self) -> None:
        """Finish recording; the buffer can then be submitted any number of times."""
        b.call("vkEndCommandBuffer", self.cmd)

    def submit_info(self) -> Any:
        """A `VkSubmitInfo[1]` for this command buffer alone, as vkQueueSubmit
        takes it (kept with the array its pointer field points into)."""
        if self._submit is None:
            cmds = b.array("VkCommandBuffer", [self.cmd])
            self._submit = (cmds, b.array("VkSubmitInfo", [b.vk().VkSubmitInfo(commandBufferCount=1,
                                                                                pCommandBuffers=cmds)]))
        return self._submit[1]

    def new_set(self, pipeline: ComputePipeline) -> Any:
        """Allocate a descriptor set for `pipeline` from this recording's
        pools (sized for that pipeline's bindings)."""
        vk = b.vk()
        shape = pipeline.descriptor_counts()
        pools = self.pools.setdefault(shape, [])
        if not pools or pools[-1].used >= SETS_PER_POOL:
            pools.append(DescriptorPool(self.ctx, shape))
        pool = pools[-1]
        if pool.handle is None:  # created here, after it has its owner
            pool.create()
        layouts = b.array("VkDescriptorSetLayout", [pipeline.set_layout])
        alloc = vk.VkDescriptorSetAllocateInfo(descriptorPool=pool.handle, descriptorSetCount=1, pSetLayouts=layouts)
        dset = b.call("vkAllocateDescriptorSets", self.ctx.handle, alloc)[0]
        pool.used += 1
        return dset

    # --- commands -------------------------------------------------------
    def timestamp_begin(self) -> None:
        """Reset the query pool and write the first timestamp."""
        queries = self.stream.queries
        if queries is None:
            return
        vk = b.vk()
        vk.vkCmdResetQueryPool(self.cmd, queries, 0, 2)
        vk.vkCmdWriteTimestamp(self.cmd, vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries, 0)

    def timestamp_end(self) -> None:
        """Write the second timestamp once all earlier work is done."""
        queries = self.stream.queries
        if queries is None:
            return
        vk = b.vk()
        vk.vkCmdWriteTimestamp(self.cmd, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries, 1)
        self.timed = True

    def bind(self, pipeline: ComputePipeline, dset: Any) -> None:
        """Bind a compute pipeline and a descriptor set."""
        vk = b.vk()
        vk.vkCmdBindPipeline(self.cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.handle)
        sets = b.array("VkDescriptorSet", [dset])
        vk.vkCmdBindDescriptorSets(self.cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.layout, 0, 1, sets, 0, None)

    def push_constants(self, pipeline: ComputePipeline, data: bytes) -> None:
        """Set the pipeline's push-constant block."""
        vk = b.vk()
        ptr = vk.ffi.from_buffer(data)
        vk.vkCmdPushConstants(self.cmd, pipeline.layout, vk.VK_SHADER_STAGE_COMPUTE_BIT, 0, len(data), ptr)

    def dispatch(self, x: int, y: int, z: int = 1) -> None:
        """Dispatch x * y * z workgroups."""
        b.vk().vkCmdDispatch(self.cmd, x, y, z)

    def barrier(self, src_stage: int, src_access: int, dst_stage: int, dst_access: int) -> None:
        """A global memory barrier between two stages."""
        vk = b.vk()
        mb = vk.VkMemoryBarrier(srcAccessMask=src_access, dstAccessMask=dst_access)
        vk.vkCmdPipelineBarrier(self.cmd, src_stage, dst_stage, 0, 1, [mb], 0, None, 0, None)

    def copy_buffer(self, src: Buffer, dst: Buffer, size: int, src_offset: int = 0, dst_offset: int = 0) -> None:
        """Copy `size` bytes between buffers (checked here: an out-of-range
        copy corrupts a CPU driver's heap instead of failing)."""
        if size > src.size - src_offset or size > dst.size - dst_offset:
            raise AssertionError(f"copy of {size} bytes from {src.size - src_offset} / into {dst.size - dst_offset}")
        vk = b.vk()
        region = vk.VkBufferCopy(srcOffset=src_offset, dstOffset=dst_offset, size=size)
        vk.vkCmdCopyBuffer(self.cmd, src.handle, dst.handle, 1, [region])

    def image_layout(self, image: Image3D, old_layout: int, new_layout: int, src_stage: int, src_access: int,
                     dst_stage: int, dst_access: int) -> None:
        """Transition `image` from `old_layout` to `new_layout` with the given
        dependency. (The caller tracks layouts per recording: a recording may
        be replayed, so no layout is stored on the image.)"""
        vk = b.vk()
        rng = vk.VkImageSubresourceRange(
            aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT, baseMipLevel=0, levelCount=1, baseArrayLayer=0, layerCount=1
        )
        ib = vk.VkImageMemoryBarrier(
            srcAccessMask=src_access,
            dstAccessMask=dst_access,
            oldLayout=old_layout,
            newLayout=new_layout,
            srcQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED,
            dstQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED,
            image=image.handle,
            subresourceRange=rng,
        )
        vk.vkCmdPipelineBarrier(self.cmd, src_stage, dst_stage, 0, 0, None, 0, None, 1, [ib])

    def copy_buffer_image(self, buffer: Buffer, image: Image3D, to_image: bool, layout: int, offset: int = 0) -> None:
        """Copy tightly packed texels between a buffer (from byte `offset`, a
        multiple of the texel size) and a whole image in `layout`."""
        vk = b.vk()
        w, h, d = image.extent
        layers = vk.VkImageSubresourceLayers(
            aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT, mipLevel=0, baseArrayLayer=0, layerCount=1
        )
        region = vk.VkBufferImageCopy(
            bufferOffset=offset,
            bufferRowLength=0,
            bufferImageHeight=0,
            imageSubresource=layers,
            imageOffset=vk.VkOffset3D(x=0, y=0, z=0),
            imageExtent=vk.VkExtent3D(width=w, height=h, depth=d),
        )
        if to_image:
            vk.vkCmdCopyBufferToImage(self.cmd, buffer.handle, image.handle, layout, 1, [region])
        else:
            vk.vkCmdCopyImageToBuffer(self.cmd, image.handle, layout, buffer.handle, 1, [region])

    def destroy(self) -> None:
        """Free the command buffer and destroy the descriptor pools (idempotent)."""
        vk = b.vk()
        device = self.ctx.handle
        for pools in self.pools.values():
            for pool in pools:
                pool.destroy()
        self.pools = {}
        self._submit = None
        # As in binding.destroy_handles: no call between clearing and freeing.
        state = self.__dict__
        pending = state.get("_pending") or {}
        out = pending.get("cmd")
        cmd = state["cmd"]
        counted = cmd is not None
        if cmd is None and out is not None and out[0] != vk.ffi.NULL:
            cmd = out[0]  # allocated, not stored yet (an interrupted create)
        if cmd is None or self.stream.pool is None:
            return
        cmds = vk.ffi.new("VkCommandBuffer[1]", [cmd])
        free = vk.lib.vkFreeCommandBuffers
        state["cmd"] = None
        if out is not None:
            out[0] = vk.ffi.NULL
        if counted:
            b.LIVE["VkCommandBuffer"] -= 1
        free(device, self.stream.pool, 1, cmds)


class DescriptorPool:
    """One descriptor pool of a `Recording`: SETS_PER_POOL sets of one shape
    ((descriptor type, count) pairs); `used` counts sets since the last reset."""

    def __init__(self, ctx: Context, shape: tuple[tuple[int, int], ...]) -> None:
        self.ctx = ctx
        self.shape = shape
        self.handle: Any = None
        self.used = 0

    def create(self) -> None:
        """Create the Vulkan pool (once its owner holds this object)."""
        vk = b.vk()
        sizes = [vk.VkDescriptorPoolSize(type=t, descriptorCount=SETS_PER_POOL * n) for t, n in self.shape]
        info = vk.VkDescriptorPoolCreateInfo(maxSets=SETS_PER_POOL, poolSizeCount=len(sizes), pPoolSizes=sizes)
        b.create(self, "handle", "VkDescriptorPool", "vkCreateDescriptorPool", self.ctx.handle, info, None)

    def reset(self) -> None:
        """Free every set allocated from the pool."""
        b.call("vkResetDescriptorPool", self.ctx.handle, self.handle, 0)
        self.used = 0

    def destroy(self) -> None:
        """Destroy the pool and its sets (idempotent)."""
        b.destroy_handles(self, self.ctx.handle, (("handle", "vkDestroyDescriptorPool", "VkDescriptorPool"),))
