"""Buffers and 3D storage images with their memory.

Host-visible memory is mapped once for the buffer's life; numpy views of it
are made only inside vkrope and never handed to users (copy out by default),
so no view outlives the memory behind it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import binding as b
from .context import Context


class Buffer:
    """A VkBuffer with its own VkDeviceMemory.

    `host_visible=True` asks for HOST_VISIBLE | HOST_COHERENT memory (device-
    local too when the device has such a type) and maps it persistently;
    otherwise the memory is DEVICE_LOCAL and reached through copies.
    """

    def __init__(self, ctx: Context, size: int, host_visible: bool, usage: int | None = None) -> None:
        vk = b.vk()
        ctx.check_open()
        self.ctx = ctx
        self.size = int(size)
        self.handle: Any = None
        self.memory: Any = None
        self._mapped: Any = None
        if usage is None:
            usage = (
                vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT
                | vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
                | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT
            )
        info = vk.VkBufferCreateInfo(size=self.size, usage=usage, sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE)
        self.handle = b.call("vkCreateBuffer", ctx.handle, info, None)
        b.track("VkBuffer", +1)
        try:
            req = vk.vkGetBufferMemoryRequirements(ctx.handle, self.handle)
            if host_visible:
                required = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
                preferred = required | vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
            else:
                required = preferred = vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
            type_index = ctx.memory_type(req.memoryTypeBits, required, preferred)
            flags = ctx.memory_properties.memoryTypes[type_index].propertyFlags
            self.device_local = bool(flags & vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)
            self.host_visible = bool(flags & vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)
            alloc = vk.VkMemoryAllocateInfo(allocationSize=req.size, memoryTypeIndex=type_index)
            self.memory = b.call("vkAllocateMemory", ctx.handle, alloc, None)
            b.track("VkDeviceMemory", +1)
            b.call("vkBindBufferMemory", ctx.handle, self.handle, self.memory, 0)
            if host_visible:
                self._mapped = b.map_memory(ctx.handle, self.memory, self.size)
        except BaseException:
            self.destroy()
            raise
        ctx.adopt(self)

    def view(self, dtype: Any, count: int, offset: int = 0) -> np.ndarray:
        """A numpy view of `count` items of the mapped memory (internal use;
        never return it to a caller)."""
        return np.frombuffer(self._mapped, dtype=dtype, count=count, offset=offset)

    def destroy(self) -> None:
        """Unmap, destroy the buffer, free the memory (idempotent)."""
        vk = b.vk()
        device = self.ctx.handle
        if self._mapped is not None:
            self._mapped = None
            if device is not None:
                vk.vkUnmapMemory(device, self.memory)
        handle, self.handle = self.handle, None
        if handle is not None:
            vk.vkDestroyBuffer(device, handle, None)
            b.track("VkBuffer", -1)
        memory, self.memory = self.memory, None
        if memory is not None:
            vk.vkFreeMemory(device, memory, None)
            b.track("VkDeviceMemory", -1)


class Image3D:
    """A 3D storage image (optimal tiling, device-local) with its view."""

    def __init__(self, ctx: Context, extent: tuple[int, int, int], vk_format: int) -> None:
        vk = b.vk()
        ctx.check_open()
        self.ctx = ctx
        self.extent = extent
        self.format = vk_format
        self.handle: Any = None
        self.memory: Any = None
        self.view_handle: Any = None
        self.layout = vk.VK_IMAGE_LAYOUT_UNDEFINED
        w, h, d = extent
        info = vk.VkImageCreateInfo(
            imageType=vk.VK_IMAGE_TYPE_3D,
            format=vk_format,
            extent=vk.VkExtent3D(width=w, height=h, depth=d),
            mipLevels=1,
            arrayLayers=1,
            samples=vk.VK_SAMPLE_COUNT_1_BIT,
            tiling=vk.VK_IMAGE_TILING_OPTIMAL,
            usage=vk.VK_IMAGE_USAGE_STORAGE_BIT | vk.VK_IMAGE_USAGE_TRANSFER_SRC_BIT | vk.VK_IMAGE_USAGE_TRANSFER_DST_BIT,
            sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE,
            initialLayout=vk.VK_IMAGE_LAYOUT_UNDEFINED,
        )
        self.handle = b.call("vkCreateImage", ctx.handle, info, None)
        b.track("VkImage", +1)
        try:
            req = vk.vkGetImageMemoryRequirements(ctx.handle, self.handle)
            type_index = ctx.memory_type(req.memoryTypeBits, vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)
            alloc = vk.VkMemoryAllocateInfo(allocationSize=req.size, memoryTypeIndex=type_index)
            self.memory = b.call("vkAllocateMemory", ctx.handle, alloc, None)
            b.track("VkDeviceMemory", +1)
            b.call("vkBindImageMemory", ctx.handle, self.handle, self.memory, 0)
            rng = vk.VkImageSubresourceRange(
                aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT, baseMipLevel=0, levelCount=1, baseArrayLayer=0, layerCount=1
            )
            view_info = vk.VkImageViewCreateInfo(
                image=self.handle, viewType=vk.VK_IMAGE_VIEW_TYPE_3D, format=vk_format, subresourceRange=rng
            )
            self.view_handle = b.call("vkCreateImageView", ctx.handle, view_info, None)
            b.track("VkImageView", +1)
        except BaseException:
            self.destroy()
            raise
        ctx.adopt(self)

    def destroy(self) -> None:
        """Destroy the view, the image and its memory (idempotent)."""
        vk = b.vk()
        device = self.ctx.handle
        view, self.view_handle = self.view_handle, None
        if view is not None:
            vk.vkDestroyImageView(device, view, None)
            b.track("VkImageView", -1)
        handle, self.handle = self.handle, None
        if handle is not None:
            vk.vkDestroyImage(device, handle, None)
            b.track("VkImage", -1)
        memory, self.memory = self.memory, None
        if memory is not None:
            vk.vkFreeMemory(device, memory, None)
            b.track("VkDeviceMemory", -1)
