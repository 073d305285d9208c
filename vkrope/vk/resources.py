"""Buffers and 3D storage images with their memory.

Host-visible memory is mapped once for the buffer's life; numpy views of it
are made only inside vkrope and never handed to users (copy out by default),
so no view outlives the memory behind it.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ..errors import OutOfDeviceMemoryError
from . import binding as b
from .context import Context

# Unique per created buffer / image (ids of freed objects are reused; these are not).
_serials = itertools.count(1)


def default_usage() -> int:
    """Storage buffer, and source and destination of copies."""
    vk = b.vk()
    return vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT


def rgba_format(texel: str) -> tuple[int, str]:
    """(Vulkan format, its GLSL name) of a width-packed image's texels: 'float32', 'float16', or 'bits16'
    (16-bit words the kernels widen themselves: bfloat16's)."""
    vk = b.vk()
    return {"float32": (vk.VK_FORMAT_R32G32B32A32_SFLOAT, "rgba32f"),
            "float16": (vk.VK_FORMAT_R16G16B16A16_SFLOAT, "rgba16f"),
            "bits16": (vk.VK_FORMAT_R16G16B16A16_UINT, "rgba16ui")}[texel]


def memory_flags(host_visible: bool, staging: bool) -> tuple[int, int]:
    """(required, preferred) memory property flags of a buffer. A staging
    buffer prefers host-cached memory: the CPU reads it at memory speed,
    while device-local host-visible memory (behind the PCIe BAR) is
    write-combined and read back at tens of MB/s (#35: on the H200 a
    256 KiB numpy call took 9 ms, a 32 MiB texture3d call 590 ms)."""
    vk = b.vk()
    if not host_visible:
        return vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
    required = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
    return required, required | (vk.VK_MEMORY_PROPERTY_HOST_CACHED_BIT if staging
                                 else vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)


class Buffer:
    """A VkBuffer with its own VkDeviceMemory.

    `host_visible=True` asks for HOST_VISIBLE | HOST_COHERENT memory and maps
    it persistently: device-local too when the device has such a type, or,
    for a `staging` buffer (one only copies reach), host-cached; otherwise
    the memory is DEVICE_LOCAL and reached through copies.
    """

    # (a class attribute, not isinstance: the runtime's pool search makes no call, runtime/array_memory.py)
    is_image = False

    handle: Any
    memory: Any
    _mapped: Any

    def __init__(self, ctx: Context, size: int, host_visible: bool, usage: int | None = None,
                 staging: bool = False) -> None:
        vk = b.vk()
        ctx.check_open()
        limit = ctx.info.max_memory_allocation_size
        if limit and size > limit:
            # Past the limit drivers may fail in odd ways (lavapipe crashes on
            # a vkCmdCopyBuffer over 2 GiB); refuse it cleanly instead.
            raise OutOfDeviceMemoryError(
                f"a buffer of {size} bytes exceeds the device's maxMemoryAllocationSize of {limit} bytes",
                "vkAllocateMemory", "VK_ERROR_OUT_OF_DEVICE_MEMORY",
            )
        self._start(ctx, size)
        ctx.adopt(self)  # first: whatever is created below has an owner
        try:
            info = vk.VkBufferCreateInfo(size=self.size, usage=usage or default_usage(),
                                         sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE)
            b.create(self, "handle", "VkBuffer", "vkCreateBuffer", ctx.handle, info, None)
            req = vk.vkGetBufferMemoryRequirements(ctx.handle, self.handle)
            type_index = ctx.memory_type(req.memoryTypeBits, *memory_flags(host_visible, staging))
            flags = ctx.memory_properties.memoryTypes[type_index].propertyFlags
            self.host_visible = bool(flags & vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)
            alloc = vk.VkMemoryAllocateInfo(allocationSize=req.size, memoryTypeIndex=type_index)
            ctx.allocate_memory(self, alloc)
            b.call("vkBindBufferMemory", ctx.handle, self.handle, self.memory, 0)
            if host_visible:
                self._mapped = b.map_memory(ctx.handle, self.memory, self.size)
        except BaseException:
            ctx.release(self)
            raise

    def _start(self, ctx: Context, size: int) -> None:
        """The state every buffer starts from (nothing created yet)."""
        self.ctx = ctx
        self.serial = next(_serials)
        self.size = int(size)
        self.handle = None
        self.memory = None
        self._mapped = None
        self.host_visible = False

    def view(self, dtype: Any, count: int, offset: int = 0) -> np.ndarray:
        """A numpy view of `count` items of the mapped memory (internal use;
        never return it to a caller)."""
        return np.frombuffer(self._mapped, dtype=dtype, count=count, offset=offset)

    def destroy(self) -> None:
        """Unmap, destroy the buffer, free the memory (idempotent)."""
        # Freeing mapped memory unmaps it (no separate vkUnmapMemory to be
        # interrupted before the free).
        self._mapped = None
        b.destroy_handles(self, self.ctx.handle, (
            ("handle", "vkDestroyBuffer", "VkBuffer"),
            ("memory", "vkFreeMemory", "VkDeviceMemory"),
        ), memory_of=self.ctx)


class Image3D:
    """A 3D storage image (optimal tiling, device-local) with its view."""

    is_image = True  # (see Buffer.is_image)

    def __init__(self, ctx: Context, extent: tuple[int, int, int], vk_format: int) -> None:
        vk = b.vk()
        ctx.check_open()
        self.ctx = ctx
        self.serial = next(_serials)
        self.extent = extent
        self.format = vk_format
        self.handle: Any = None
        self.memory: Any = None
        self.view_handle: Any = None
        w, h, d = extent
        half = vk_format == vk.VK_FORMAT_R16G16B16A16_SFLOAT
        self.size = w * h * d * (8 if half else 16)  # bytes of its texels
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
        ctx.adopt(self)  # first: whatever is created below has an owner
        try:
            b.create(self, "handle", "VkImage", "vkCreateImage", ctx.handle, info, None)
            req = vk.vkGetImageMemoryRequirements(ctx.handle, self.handle)
            limit = ctx.info.max_memory_allocation_size
            if limit and req.size > limit:  # (as Buffer: refused before the driver is asked)
                raise OutOfDeviceMemoryError(
                    f"a 3D image of {w} x {h} x {d} texels needs {req.size} bytes, more than the device's "
                    f"maxMemoryAllocationSize of {limit} bytes", "vkAllocateMemory", "VK_ERROR_OUT_OF_DEVICE_MEMORY")
            type_index = ctx.memory_type(req.memoryTypeBits, vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)
            alloc = vk.VkMemoryAllocateInfo(allocationSize=req.size, memoryTypeIndex=type_index)
            ctx.allocate_memory(self, alloc)
            b.call("vkBindImageMemory", ctx.handle, self.handle, self.memory, 0)
            rng = vk.VkImageSubresourceRange(
                aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT, baseMipLevel=0, levelCount=1, baseArrayLayer=0, layerCount=1
            )
            view_info = vk.VkImageViewCreateInfo(
                image=self.handle, viewType=vk.VK_IMAGE_VIEW_TYPE_3D, format=vk_format, subresourceRange=rng
            )
            b.create(self, "view_handle", "VkImageView", "vkCreateImageView", ctx.handle, view_info, None)
        except BaseException:
            ctx.release(self)
            raise

    def destroy(self) -> None:
        """Destroy the view, the image and its memory (idempotent)."""
        b.destroy_handles(self, self.ctx.handle, (
            ("view_handle", "vkDestroyImageView", "VkImageView"),
            ("handle", "vkDestroyImage", "VkImage"),
            ("memory", "vkFreeMemory", "VkDeviceMemory"),
        ), memory_of=self.ctx)


# The results (VulkanError.result) of an import a driver will not make of this memory (a pointer, an offset or
# a format it refuses: not worth trying again), and of a passing shortage (objects, or the driver's unknown).
IMPORT_REFUSED = ("VK_ERROR_INVALID_EXTERNAL_HANDLE", "VK_ERROR_INVALID_EXTERNAL_HANDLE_KHR",
                  "VK_ERROR_FORMAT_NOT_SUPPORTED")
TOO_MANY_OBJECTS = "VK_ERROR_TOO_MANY_OBJECTS"
SHORTAGE = ("VK_ERROR_UNKNOWN", TOO_MANY_OBJECTS)


class ImportedBuffer(Buffer):
    """A buffer over existing host memory (VK_EXT_external_memory_host):
    the device reads and writes the caller's numpy memory with no copy.

    The imported range is the whole pages around `[address, address +
    nbytes)`; `offset` is where the data starts inside the buffer. The owner
    must destroy it before that memory can be freed (vkrope does so as soon as
    the call that imported it has finished, or, for an import kept for an
    array passed again, holds a reference to the array while it lives).
    """

    def __init__(self, ctx: Context, address: int, nbytes: int, holder: list | None = None) -> None:  # noqa: D107
        # `holder` (the call's list of imports) gets this object before it
        # has a handle: whatever interrupts the caller, it can release it.
        self.handle = self.memory = self._mapped = None
        self.ctx = ctx
        if holder is not None:
            holder.append(self)
        vk = b.vk()
        ctx.check_open()
        align = ctx.info.min_imported_host_pointer_alignment
        start = address // align * align
        end = -(-(address + nbytes) // align) * align
        self._start(ctx, end - start)
        self.offset = address - start
        handle_type = vk.VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT
        external = vk.VkExternalMemoryBufferCreateInfo(handleTypes=handle_type)
        info = vk.VkBufferCreateInfo(pNext=external, size=self.size, usage=default_usage(),
                                     sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE)
        ctx.adopt(self)  # first: whatever is created below has an owner
        try:
            b.create(self, "handle", "VkBuffer", "vkCreateBuffer", ctx.handle, info, None)
            pointer = vk.ffi.cast("void *", start)
            props = vk.ffi.new("VkMemoryHostPointerPropertiesEXT*")
            props.sType = vk.VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT
            get_props = b.call("vkGetDeviceProcAddr", ctx.handle, "vkGetMemoryHostPointerPropertiesEXT")
            b.call_fn("vkGetMemoryHostPointerPropertiesEXT", get_props, ctx.handle, handle_type, pointer, props)
            req = vk.vkGetBufferMemoryRequirements(ctx.handle, self.handle)
            type_index = ctx.memory_type(req.memoryTypeBits & props.memoryTypeBits, 0)
            import_info = vk.VkImportMemoryHostPointerInfoEXT(handleType=handle_type, pHostPointer=pointer)
            alloc = vk.VkMemoryAllocateInfo(pNext=import_info, allocationSize=self.size, memoryTypeIndex=type_index)
            ctx.allocate_memory(self, alloc)
            b.call("vkBindBufferMemory", ctx.handle, self.handle, self.memory, 0)
        except BaseException:
            ctx.release(self)
            raise
