"""Command recording and submission: a command pool with one command buffer,
a fence for bounded waits, and a timestamp query pool."""

from __future__ import annotations

import os
from typing import Any

from . import binding as b
from .context import Context
from .pipeline import ComputePipeline
from .resources import Buffer, Image3D

# Bounded wait for one submission; raise instead of hanging forever.
DEFAULT_TIMEOUT_S = float(os.environ.get("VKROPE_TIMEOUT_S", "60"))


class CommandStream:
    """Records into one primary command buffer and submits it, waiting on a
    fence. Not thread-safe: its owner serialises use."""

    def __init__(self, ctx: Context) -> None:
        vk = b.vk()
        ctx.check_open()
        self.ctx = ctx
        self.pool: Any = None
        self.fence: Any = None
        self.queries: Any = None
        self.cmd: Any = None
        self.timestamps_written = False
        try:
            pool_info = vk.VkCommandPoolCreateInfo(
                flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                queueFamilyIndex=ctx.info.compute_queue_family,
            )
            self.pool = b.call("vkCreateCommandPool", ctx.handle, pool_info, None)
            b.track("VkCommandPool", +1)
            alloc = vk.VkCommandBufferAllocateInfo(
                commandPool=self.pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1
            )
            self.cmd = b.call("vkAllocateCommandBuffers", ctx.handle, alloc)[0]
            self.fence = b.call("vkCreateFence", ctx.handle, vk.VkFenceCreateInfo(), None)
            b.track("VkFence", +1)
            if ctx.timestamps:
                qinfo = vk.VkQueryPoolCreateInfo(queryType=vk.VK_QUERY_TYPE_TIMESTAMP, queryCount=2)
                self.queries = b.call("vkCreateQueryPool", ctx.handle, qinfo, None)
                b.track("VkQueryPool", +1)
        except BaseException:
            self.destroy()
            raise
        ctx.adopt(self)

    # --- recording ------------------------------------------------------
    def begin(self) -> None:
        """Start recording (resets the buffer's previous contents)."""
        vk = b.vk()
        b.call("vkResetCommandBuffer", self.cmd, 0)
        info = vk.VkCommandBufferBeginInfo(flags=vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT)
        b.call("vkBeginCommandBuffer", self.cmd, info)
        self.timestamps_written = False

    def timestamp_begin(self) -> None:
        """Reset the query pool and write the first timestamp."""
        if self.queries is None:
            return
        vk = b.vk()
        vk.vkCmdResetQueryPool(self.cmd, self.queries, 0, 2)
        vk.vkCmdWriteTimestamp(self.cmd, vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, self.queries, 0)

    def timestamp_end(self) -> None:
        """Write the second timestamp once all earlier work is done."""
        if self.queries is None:
            return
        vk = b.vk()
        vk.vkCmdWriteTimestamp(self.cmd, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, self.queries, 1)
        self.timestamps_written = True

    def bind(self, pipeline: ComputePipeline, set_index: int) -> None:
        """Bind a compute pipeline and one of its descriptor sets."""
        vk = b.vk()
        vk.vkCmdBindPipeline(self.cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.handle)
        sets = b.array("VkDescriptorSet", [pipeline.sets[set_index]])
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
        """Copy `size` bytes between buffers."""
        vk = b.vk()
        region = vk.VkBufferCopy(srcOffset=src_offset, dstOffset=dst_offset, size=size)
        vk.vkCmdCopyBuffer(self.cmd, src.handle, dst.handle, 1, [region])

    def image_layout(self, image: Image3D, new_layout: int, src_stage: int, src_access: int,
                     dst_stage: int, dst_access: int) -> None:
        """Transition `image` to `new_layout` with the given dependency."""
        vk = b.vk()
        rng = vk.VkImageSubresourceRange(
            aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT, baseMipLevel=0, levelCount=1, baseArrayLayer=0, layerCount=1
        )
        ib = vk.VkImageMemoryBarrier(
            srcAccessMask=src_access,
            dstAccessMask=dst_access,
            oldLayout=image.layout,
            newLayout=new_layout,
            srcQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED,
            dstQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED,
            image=image.handle,
            subresourceRange=rng,
        )
        vk.vkCmdPipelineBarrier(self.cmd, src_stage, dst_stage, 0, 0, None, 0, None, 1, [ib])
        image.layout = new_layout

    def copy_buffer_image(self, buffer: Buffer, image: Image3D, to_image: bool, buffer_offset: int = 0,
                          z_offset: int = 0, depth: int | None = None) -> None:
        """Copy tightly packed texels between a buffer and slices of an image."""
        vk = b.vk()
        w, h, d = image.extent
        layers = vk.VkImageSubresourceLayers(
            aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT, mipLevel=0, baseArrayLayer=0, layerCount=1
        )
        region = vk.VkBufferImageCopy(
            bufferOffset=buffer_offset,
            bufferRowLength=0,
            bufferImageHeight=0,
            imageSubresource=layers,
            imageOffset=vk.VkOffset3D(x=0, y=0, z=z_offset),
            imageExtent=vk.VkExtent3D(width=w, height=h, depth=d if depth is None else depth),
        )
        if to_image:
            vk.vkCmdCopyBufferToImage(self.cmd, buffer.handle, image.handle, image.layout, 1, [region])
        else:
            vk.vkCmdCopyImageToBuffer(self.cmd, image.handle, image.layout, buffer.handle, 1, [region])

    # --- submission -----------------------------------------------------
    def submit_and_wait(self, timeout_s: float | None = None) -> float | None:
        """End recording, submit, wait at most `timeout_s` seconds; return the
        GPU time between the two timestamps in seconds when they were written."""
        vk = b.vk()
        ctx = self.ctx
        b.call("vkEndCommandBuffer", self.cmd)
        cmds = b.array("VkCommandBuffer", [self.cmd])
        submit = vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=cmds)
        b.call("vkResetFences", ctx.handle, 1, [self.fence])
        b.call("vkQueueSubmit", ctx.queue, 1, [submit], self.fence)
        timeout = DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s
        b.wait_fence(ctx.handle, self.fence, int(timeout * 1e9))
        if not self.timestamps_written:
            return None
        data = vk.ffi.new("uint64_t[2]")
        b.call(
            "vkGetQueryPoolResults",
            ctx.handle,
            self.queries,
            0,
            2,
            16,
            data,
            8,
            vk.VK_QUERY_RESULT_64_BIT | vk.VK_QUERY_RESULT_WAIT_BIT,
        )
        bits = ctx.info.timestamp_valid_bits
        mask = (1 << bits) - 1 if bits < 64 else (1 << 64) - 1
        ticks = (int(data[1]) - int(data[0])) & mask
        return ticks * ctx.info.timestamp_period_ns * 1e-9

    def destroy(self) -> None:
        """Destroy the query pool, the fence and the pool with its buffer."""
        vk = b.vk()
        device = self.ctx.handle
        queries, self.queries = self.queries, None
        if queries is not None:
            vk.vkDestroyQueryPool(device, queries, None)
            b.track("VkQueryPool", -1)
        fence, self.fence = self.fence, None
        if fence is not None:
            vk.vkDestroyFence(device, fence, None)
            b.track("VkFence", -1)
        pool, self.pool = self.pool, None
        self.cmd = None
        if pool is not None:
            vk.vkDestroyCommandPool(device, pool, None)
            b.track("VkCommandPool", -1)
