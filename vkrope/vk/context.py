"""One logical device and everything created on it.

`Context` owns the instance, the logical device and its compute queue, and
every child object (buffers, images, pipelines, command pools, fences, query
pools). Children register with their context; `Context.close()` waits for
the device to go idle and destroys them in reverse creation order, then the
device, then the instance. Each child's `destroy()` is idempotent (swap the
handle to None, then destroy), so an owner may also free one early.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Protocol

from ..errors import DeviceClosedError, OutOfDeviceMemoryError, UnsupportedFeatureError, VulkanError
from . import binding as b
from .instance import EXTERNAL_MEMORY_HOST, FLOAT_CONTROLS, Instance, select_device


class Child(Protocol):
    """Anything a context owns."""

    def destroy(self) -> None:
        """Release the Vulkan objects (idempotent)."""


class Context:
    """Owns a VkDevice, its compute queue and all children."""

    def __init__(self, device: int | str | None = None, validation: bool | None = None,
                 made: list[Context] | None = None) -> None:
        """`made`: a list this joins before anything is made (an owner opening: an interruption as this returns,
        before the owner could store it, leaves it where the owner's cleanup finds it)."""
        self.instance: Instance  # (set by Instance itself, first thing: absent if an interruption came before)
        self.handle: Any = None
        self._children: list[Child] = []
        # VkDeviceMemory objects alive: maxMemoryAllocationCount bounds them
        # (4096 is all Vulkan guarantees). `reclaim`, set by the owner, frees
        # memory it caches when the count is reached.
        self.allocations = 0
        self.reclaim: Callable[[], Callable[[], None] | None] | None = None  # (a weak method: None once gone)
        self._lock = threading.RLock()
        if made is not None:
            made.append(self)
        try:
            self.instance = Instance(validation, into=self)
            self.info, self.why = select_device(self.instance.physical_devices(), device)
            self._create_device()
        except BaseException:  # (an interruption too, after vkCreateDevice returned: the device goes first)
            self._destroy_device()
            if hasattr(self, "instance"):
                self.instance.close()
            raise

    def _create_device(self) -> None:
        vk = b.vk()
        info = self.info
        priorities = b.array("float", [1.0])
        queue_info = vk.VkDeviceQueueCreateInfo(
            queueFamilyIndex=info.compute_queue_family, queueCount=1, pQueuePriorities=priorities
        )
        f16 = None
        if info.storage_buffer_16bit:
            f16 = vk.VkPhysicalDevice16BitStorageFeatures(storageBuffer16BitAccess=vk.VK_TRUE)
        extensions = [EXTERNAL_MEMORY_HOST] if info.external_memory_host else []
        if info.denorm_preserve_float32 or info.signed_zero_inf_nan_preserve_float32:
            extensions.append(FLOAT_CONTROLS)
        self.external_memory_host = info.external_memory_host
        create = vk.VkDeviceCreateInfo(
            pNext=f16,
            queueCreateInfoCount=1,
            pQueueCreateInfos=[queue_info],
            enabledExtensionCount=len(extensions),
            ppEnabledExtensionNames=extensions,
        )
        try:  # (made as every handle is, where an exception that lands after the call returns finds it)
            b.create(self, "handle", "VkDevice", "vkCreateDevice", info.handle, create, None)
        except VulkanError as exc:
            raise b.explain_fork(exc) from exc
        self.queue = vk.vkGetDeviceQueue(self.handle, info.compute_queue_family, 0)
        self.memory_properties = vk.vkGetPhysicalDeviceMemoryProperties(info.handle)
        self.timestamps = info.timestamp_valid_bits > 0

    # --- ownership ------------------------------------------------------
    def check_open(self) -> None:
        """Raise `DeviceClosedError` when the context was closed."""
        if self.handle is None:
            raise DeviceClosedError("the Vulkan device was closed; create a new vkrope.Device")

    def adopt(self, child: Child) -> None:
        """Register a child for destruction at close."""
        with self._lock:
            self._children.append(child)

    def release(self, child: Child) -> None:
        """Destroy one child now and forget it. Destroyed first: if an
        exception interrupts this, the child is still listed, and destroying
        it again at close does nothing (destroy is idempotent)."""
        child.destroy()
        with self._lock:
            try:
                self._children.remove(child)
            except ValueError:
                pass

    @property
    def closed(self) -> bool:
        """Whether `close()` ran."""
        return self.handle is None

    def wait_idle(self) -> None:
        """Wait until the device has finished all submitted work."""
        if self.handle is not None:
            b.call("vkDeviceWaitIdle", self.handle)

    def close(self) -> None:
        """Destroy every child (reverse order), the device and the instance."""
        with self._lock:
            if self.handle is None:
                if hasattr(self, "instance"):  # (absent: an opening interrupted before it made one)
                    self.instance.close()
                return
            try:
                self.wait_idle()
            except Exception:  # a lost device still has to be torn down
                pass
            while self._children:
                self._children[-1].destroy()  # destroyed before forgotten (interruptions)
                self._children.pop()
            self._destroy_device()
            self.instance.close()

    def _destroy_device(self) -> None:
        """Destroy the device, stored (and counted) or made by an interrupted creation (idempotent)."""
        b.destroy_handles(self, None, (("handle", "vkDestroyDevice", "VkDevice"),))

    # --- memory ---------------------------------------------------------
    def allocate_memory(self, owner: Any, info: Any) -> None:
        """vkAllocateMemory into `owner.memory`, within maxMemoryAllocationCount:
        at the limit, the owner's cached memory is reclaimed first, then the
        allocation is refused with an error naming the limit."""
        limit = self.info.max_memory_allocation_count
        if limit and self.allocations >= limit and self.reclaim is not None:
            reclaim = self.reclaim()  # (None once the runtime is gone)
            if reclaim is not None:
                reclaim()
        if limit and self.allocations >= limit:
            raise OutOfDeviceMemoryError(
                f"device {self.info.name!r} allows {limit} memory allocations at once (maxMemoryAllocationCount) and "
                f"all {self.allocations} are in use: release DeviceArrays that are no longer needed, or call "
                "Device.trim() to free vkrope's cached buffers",
                "vkAllocateMemory", "VK_ERROR_TOO_MANY_OBJECTS")
        b.create(owner, "memory", "VkDeviceMemory", "vkAllocateMemory", self.handle, info, None, memory_of=self)

    def memory_type(self, type_bits: int, required: int, preferred: int = 0) -> int:
        """Index of a memory type allowed by `type_bits` having `required`
        flags, preferring one that also has `preferred`."""
        props = self.memory_properties
        fallback = None
        for i in range(props.memoryTypeCount):
            if not (type_bits >> i) & 1:
                continue
            flags = props.memoryTypes[i].propertyFlags
            if flags & required != required:
                continue
            if flags & preferred == preferred:
                return i
            if fallback is None:
                fallback = i
        if fallback is None:
            raise UnsupportedFeatureError(
                f"device {self.info.name!r} has no memory type with property flags {required:#x} "
                f"among allowed types {type_bits:#b}"
            )
        return fallback

    def require_storage_image_format(self, vk_format: int, name: str) -> None:
        """Raise `UnsupportedFeatureError` when optimal-tiling images of
        `vk_format` cannot be storage images on this device."""
        vk = b.vk()
        props = vk.vkGetPhysicalDeviceFormatProperties(self.info.handle, vk_format)
        if not props.optimalTilingFeatures & vk.VK_FORMAT_FEATURE_STORAGE_IMAGE_BIT:
            raise UnsupportedFeatureError(
                f"device {self.info.name!r} cannot use {name} as a storage image; use storage='buffer'"
            )

    def require_16bit_storage(self) -> None:
        """Raise `UnsupportedFeatureError` when 16-bit (float16, bfloat16) buffers cannot be used."""
        if not self.info.storage_buffer_16bit:
            raise UnsupportedFeatureError(
                f"device {self.info.name!r} lacks storageBuffer16BitAccess, needed for float16 "
                "and bfloat16 buffers; use float32 data or another device (VKROPE_DEVICE)"
            )


def unified_memory(ctx: Context) -> bool:
    """True when every device-local memory type is also host-visible and
    coherent (CPU drivers, integrated GPUs): buffers are then used in place,
    with no staging copy."""
    vk = b.vk()
    props = ctx.memory_properties
    want = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
    local = [
        props.memoryTypes[i].propertyFlags
        for i in range(props.memoryTypeCount)
        if props.memoryTypes[i].propertyFlags & vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
    ]
    return bool(local) and all(f & want == want for f in local)
