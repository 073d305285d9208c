"""The Vulkan instance, the optional validation layer, and the list of
physical devices with the facts vkrope chooses by."""

from __future__ import annotations

import logging
import os
import re
import threading
from dataclasses import dataclass, field, fields
from typing import Any

from ..errors import VulkanError, VulkanUnavailableError
from . import binding as b

log = logging.getLogger("vkrope")

VALIDATION_LAYER = "VK_LAYER_KHRONOS_validation"
API_1_1 = (1 << 22) | (1 << 12)  # VK_MAKE_API_VERSION(0, 1, 1, 0)

DEVICE_TYPE_NAMES = {0: "other", 1: "integrated GPU", 2: "discrete GPU", 3: "virtual GPU", 4: "CPU"}
# Lower is preferred: discrete, integrated, virtual, CPU, other.
DEVICE_TYPE_RANK = {2: 0, 1: 1, 3: 2, 4: 3, 0: 4}

EXTERNAL_MEMORY_HOST = "VK_EXT_external_memory_host"
FLOAT_CONTROLS = "VK_KHR_shader_float_controls"  # (core in 1.2; vkrope asks for 1.1, so an extension)
# What vkCreateInstance returns when there is no usable driver: reported as
# VulkanUnavailableError saying so; any other failure is itself ...
NO_DRIVER_RESULTS = ("VK_ERROR_INCOMPATIBLE_DRIVER", "VK_ERROR_INITIALIZATION_FAILED")
# ... and when a layer or an instance extension asked for is missing (only
# with validation on: vkrope asks for none otherwise).
MISSING_RESULTS = ("VK_ERROR_LAYER_NOT_PRESENT", "VK_ERROR_EXTENSION_NOT_PRESENT")


def version_string(v: int) -> str:
    """`major.minor.patch` of a packed Vulkan version."""
    return f"{(v >> 22) & 0x7F}.{(v >> 12) & 0x3FF}.{v & 0xFFF}"


# --- validation messages -------------------------------------------------
# The binding keeps one Python callback per process, so messages from every
# instance land in one list; tests clear it before a test and check it after.
_messages: list[str] = []
_messages_lock = threading.Lock()


# Held while an instance is created or destroyed (and, by owner.py, while a Device is opened and
# while devices are listed): a fork waits for it, so that no child starts inside the loader or the
# driver with their locks held (#35: such a child hung in vkCreateInstance).
OPENING = threading.RLock()


def _fresh_lock_in_child() -> None:
    global _messages_lock, OPENING
    _messages_lock = threading.Lock()  # a thread of the parent may have held it at the fork
    OPENING = threading.RLock()


os.register_at_fork(after_in_child=_fresh_lock_in_child)


def validation_messages() -> list[str]:
    """Validation-layer messages (warnings and errors) seen so far."""
    with _messages_lock:
        return list(_messages)


def clear_validation_messages() -> None:
    """Forget the collected validation messages."""
    with _messages_lock:
        _messages.clear()


def _on_message(severity: int, types: int, data: Any, user_data: Any) -> int:
    ffi = b.vk().ffi
    text = ffi.string(data.pMessage).decode("utf-8", "replace") if data.pMessage else "?"
    with _messages_lock:
        _messages.append(text)
    log.warning("Vulkan validation: %s", text)
    return 0


def validation_requested() -> bool:
    """True when VKROPE_VALIDATION asks for the Khronos validation layer
    (1/true/yes/on; unset, empty or 0/false/no/off: no). Anything else is a
    ValueError naming the variable."""
    raw = os.environ.get("VKROPE_VALIDATION", "").strip().lower()
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("", "0", "false", "no", "off"):
        return False
    raise ValueError(f"VKROPE_VALIDATION must be 1/true/yes/on or 0/false/no/off; got {os.environ['VKROPE_VALIDATION']!r}")


@dataclass
class PhysicalDeviceInfo:
    """What vkrope knows about one physical device, and whether it can use it."""

    index: int
    handle: Any = field(repr=False)
    name: str
    type: str
    type_code: int
    api_version: str
    driver_version: int
    driver: str
    compute_queue_family: int | None
    max_storage_buffer_range: int
    max_memory_allocation_size: int
    max_memory_allocation_count: int
    max_image_dimension_3d: int
    max_compute_work_group_count: tuple[int, int, int]
    max_compute_work_group_size_x: int
    min_storage_buffer_offset_alignment: int
    timestamp_period_ns: float
    timestamp_valid_bits: int
    storage_buffer_16bit: bool
    external_memory_host: bool
    min_imported_host_pointer_alignment: int
    # whether shaders may ask to keep float32 subnormals, and signed zeros, infinities and NaNs
    # (vk/spirv.py); else the device's default
    denorm_preserve_float32: bool
    signed_zero_inf_nan_preserve_float32: bool
    problems: list[str]

    def facts(self) -> dict[str, Any]:
        """Every field but the raw handle, as plain Python values."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "handle"}

    @property
    def usable(self) -> bool:
        """Whether vkrope can run on this device at all."""
        return not self.problems


class Instance:
    """Owns a VkInstance (and its debug messenger when validation is on)."""

    def __init__(self, validation: bool | None = None, into: Any = None) -> None:
        """`into`: an object whose `instance` this becomes before anything is made (a Context opening: an
        interruption as this returns, before the caller could store it, leaves it where the caller's cleanup
        finds it)."""
        self.handle: Any = None  # (what close() reads, set before anything can interrupt: it closes none)
        self._messenger: Any = None
        self._destroy_messenger: Any = None
        if into is not None:
            into.instance = self
        with OPENING:
            try:
                self._open(validation)
            except BaseException:  # (an interruption after vkCreateInstance returned: nobody else holds it)
                if "_pending" in self.__dict__:  # (else nothing was made: the error as it came)
                    self._destroy()
                raise

    def _open(self, validation: bool | None) -> None:
        vk = b.load()
        asked_by = "validation=True"
        if validation is None:
            validation, asked_by = validation_requested(), "VKROPE_VALIDATION"
        self.validation = validation

        layers: list[str] = []
        extensions: list[str] = []
        next_chain: Any = (None, None)
        messenger_info: Any = None
        if validation:
            layers, extensions, messenger_info, next_chain = _validation_setup(vk, asked_by)
        app_info = vk.VkApplicationInfo(
            pApplicationName="vkrope",
            applicationVersion=1,
            pEngineName="vkrope",
            engineVersion=1,
            apiVersion=API_1_1,
        )
        info = vk.VkInstanceCreateInfo(
            pNext=next_chain[0],
            pApplicationInfo=app_info,
            enabledLayerCount=len(layers),
            ppEnabledLayerNames=layers,
            enabledExtensionCount=len(extensions),
            ppEnabledExtensionNames=extensions,
        )
        try:  # (made as every handle is, where an exception that lands after the call returns finds it)
            b.create(self, "handle", "VkInstance", "vkCreateInstance", info, None)
        except VulkanError as raw:
            exc = b.explain_fork(raw)
            if exc is not raw:  # (a forked child: not a missing driver)
                raise exc from raw
            if exc.result in NO_DRIVER_RESULTS:
                raise VulkanUnavailableError(
                    f"{exc}: no working Vulkan driver? {b.INSTALL_HINT}") from raw  # (the binding's words name the
                # call: not said twice)
            if exc.result in MISSING_RESULTS:
                raise VulkanUnavailableError(
                    f"{exc}: the loader lacks a layer or extension vkrope asked for "
                    f"(layers {layers}, extensions {extensions}); with validation on (VKROPE_VALIDATION, or "
                    "validation=True), install vulkan-validationlayers (sudo apt-get install vulkan-validationlayers) "
                    "or turn it off") from raw
            raise  # out of memory and the like: itself
        b.opened_vulkan()
        if validation:
            try:
                # The raw C functions (not the binding's Python wrappers), so the
                # messenger is made and destroyed as every handle is (binding.create,
                # binding.destroy_handles): an interruption loses it in neither.
                self._destroy_messenger = b.instance_function(self.handle, "vkDestroyDebugUtilsMessengerEXT")
                create = b.instance_function(self.handle, "vkCreateDebugUtilsMessengerEXT")
                b.create(self, "_messenger", "VkDebugUtilsMessengerEXT", ("vkCreateDebugUtilsMessengerEXT", create),
                         self.handle, b.vk().ffi.addressof(messenger_info), b.vk().ffi.NULL)
            except BaseException:
                self.close()
                raise

    def physical_devices(self) -> list[PhysicalDeviceInfo]:
        """Every physical device, with the facts vkrope needs and its problems."""
        vk = b.vk()
        out = []
        for index, pd in enumerate(b.call("vkEnumeratePhysicalDevices", self.handle)):
            out.append(_describe(vk, index, pd))
        return out

    def close(self) -> None:
        """Destroy the messenger and the instance (idempotent; an
        interruption loses neither: each handle is cleared right before the
        C call that destroys it, with no Python call between)."""
        with OPENING:
            self._destroy()

    def _destroy(self) -> None:
        if self._destroy_messenger is not None:  # (set before the messenger is made)
            b.destroy_handles(self, self.handle, (("_messenger", self._destroy_messenger,
                                                   "VkDebugUtilsMessengerEXT"),))
        b.destroy_handles(self, None, (("handle", "vkDestroyInstance", "VkInstance"),))


def _validation_setup(vk: Any, asked_by: str) -> tuple[list[str], list[str], Any, Any]:
    """Layers, extensions, messenger create-info and (pNext chain, the
    feature array it points to: keep both alive) of an instance with
    validation on; `asked_by` what asked for it (the argument or the
    environment variable), for the refusal to name."""
    available_layers = {layer.layerName for layer in b.call("vkEnumerateInstanceLayerProperties")}
    if VALIDATION_LAYER not in available_layers:
        instead = "unset VKROPE_VALIDATION" if asked_by == "VKROPE_VALIDATION" else "pass validation=False"
        raise VulkanUnavailableError(
            f"validation was requested ({asked_by}) but {VALIDATION_LAYER} is not installed; "
            f"sudo apt-get install vulkan-validationlayers, or {instead}"
        )
    severity = vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT
    types = (
        vk.VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT
        | vk.VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT
        | vk.VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT
    )
    messenger_info = vk.VkDebugUtilsMessengerCreateInfoEXT(
        messageSeverity=severity, messageType=types, pfnUserCallback=_on_message
    )
    # Synchronization validation: catches missing barriers between transfers
    # and dispatches.
    features_arr = b.array(
        "VkValidationFeatureEnableEXT", [vk.VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT]
    )
    chain = vk.VkValidationFeaturesEXT(enabledValidationFeatureCount=1, pEnabledValidationFeatures=features_arr)
    extensions = [vk.VK_EXT_DEBUG_UTILS_EXTENSION_NAME, "VK_EXT_validation_features"]
    return [VALIDATION_LAYER], extensions, messenger_info, (chain, features_arr)


def _compute_family(vk: Any, pd: Any) -> tuple[int | None, int]:
    """The compute queue family (a compute-only one when there is one) and its timestamp bits."""
    families = vk.vkGetPhysicalDeviceQueueFamilyProperties(pd)
    compute_family = None
    for i, fam in enumerate(families):
        if fam.queueFlags & vk.VK_QUEUE_COMPUTE_BIT and fam.queueCount > 0:
            compute_family = i
            if fam.queueFlags & vk.VK_QUEUE_GRAPHICS_BIT:
                continue  # keep looking for a compute-only family, else use this one
            break
    bits = families[compute_family].timestampValidBits if compute_family is not None else 0
    return compute_family, int(bits)


def _chained(vk: Any, pd: Any, query: Any, outer: str, outer_stype: int, inner: str, inner_stype: int) -> Any:
    """Run a *2 query with one extension struct chained; return that struct."""
    ext = vk.ffi.new(f"{inner}*")
    ext.sType = inner_stype
    head = vk.ffi.new(f"{outer}*")
    head.sType = outer_stype
    head.pNext = ext
    query(pd, head)
    return ext


def _props2(vk: Any, pd: Any, inner: str, inner_stype: int) -> Any:
    return _chained(vk, pd, vk.lib.vkGetPhysicalDeviceProperties2, "VkPhysicalDeviceProperties2",
                    vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, inner, inner_stype)


def _extended_facts(vk: Any, pd: Any, api: int, usable: bool) -> tuple[bool, int, bool, int, str, bool, bool]:
    """(16-bit storage, maxMemoryAllocationSize, external host memory, its
    alignment, driver name, float32 DenormPreserve, float32
    SignedZeroInfNanPreserve): the facts behind the *2 queries (core in 1.1)."""
    storage16, max_alloc, host_align = False, 0, 0
    if usable:
        f16 = _chained(vk, pd, vk.lib.vkGetPhysicalDeviceFeatures2, "VkPhysicalDeviceFeatures2",
                       vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, "VkPhysicalDevice16BitStorageFeatures",
                       vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES)
        storage16 = bool(f16.storageBuffer16BitAccess)
        m3 = _props2(vk, pd, "VkPhysicalDeviceMaintenance3Properties",
                     vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES)
        max_alloc = int(m3.maxMemoryAllocationSize)
    exts = {e.extensionName for e in vk.vkEnumerateDeviceExtensionProperties(pd, None)}
    ext_host = EXTERNAL_MEMORY_HOST in exts
    if ext_host and usable:
        hp = _props2(vk, pd, "VkPhysicalDeviceExternalMemoryHostPropertiesEXT",
                     vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT)
        host_align = int(hp.minImportedHostPointerAlignment)
    driver = ""
    if api >= (1 << 22) | (2 << 12):  # VkPhysicalDeviceDriverProperties is core in 1.2
        dp = _props2(vk, pd, "VkPhysicalDeviceDriverProperties", vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES)
        driver = f"{vk.ffi.string(dp.driverName).decode()} {vk.ffi.string(dp.driverInfo).decode()}".strip()
    preserve = signed_zero = False
    if FLOAT_CONTROLS in exts and usable:
        fc = _props2(vk, pd, "VkPhysicalDeviceFloatControlsProperties",
                     vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES)
        # (with no independence, every float width of a module must share one denormals mode)
        preserve = bool(fc.shaderDenormPreserveFloat32) and (
            fc.denormBehaviorIndependence != vk.VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_NONE)
        signed_zero = bool(fc.shaderSignedZeroInfNanPreserveFloat32)
    return storage16, max_alloc, ext_host, host_align, driver, preserve, signed_zero


def _describe(vk: Any, index: int, pd: Any) -> PhysicalDeviceInfo:
    """What vkrope knows about physical device `pd`, and why it cannot use it."""
    ffi = vk.ffi
    props = vk.vkGetPhysicalDeviceProperties(pd)
    limits = props.limits
    name = ffi.string(props.deviceName).decode("utf-8", "replace") if not isinstance(props.deviceName, str) else props.deviceName
    problems: list[str] = []
    if props.apiVersion < API_1_1:
        problems.append(f"supports Vulkan {version_string(props.apiVersion)}, vkrope needs 1.1")
    compute_family, timestamp_bits = _compute_family(vk, pd)
    if compute_family is None:
        problems.append("has no queue family with compute support")
    storage16, max_alloc, ext_host, host_align, driver, preserve, signed_zero = _extended_facts(
        vk, pd, props.apiVersion, not problems)
    driver = driver or f"driver version {props.driverVersion:#x}"
    return PhysicalDeviceInfo(
        index=index,
        handle=pd,
        name=name,
        type=DEVICE_TYPE_NAMES.get(props.deviceType, "other"),
        type_code=int(props.deviceType),
        api_version=version_string(props.apiVersion),
        driver_version=int(props.driverVersion),
        driver=driver,
        compute_queue_family=compute_family,
        max_storage_buffer_range=int(limits.maxStorageBufferRange),
        max_memory_allocation_size=max_alloc,
        max_memory_allocation_count=int(limits.maxMemoryAllocationCount),
        max_image_dimension_3d=int(limits.maxImageDimension3D),
        max_compute_work_group_count=tuple(int(v) for v in limits.maxComputeWorkGroupCount),  # type: ignore[arg-type]
        max_compute_work_group_size_x=int(limits.maxComputeWorkGroupSize[0]),
        min_storage_buffer_offset_alignment=int(limits.minStorageBufferOffsetAlignment),
        timestamp_period_ns=float(limits.timestampPeriod),
        timestamp_valid_bits=int(timestamp_bits),
        storage_buffer_16bit=storage16,
        external_memory_host=ext_host,
        min_imported_host_pointer_alignment=host_align,
        denorm_preserve_float32=preserve,
        signed_zero_inf_nan_preserve_float32=signed_zero,
        problems=problems,
    )


def select_device(devices: list[PhysicalDeviceInfo], wanted: int | str | None = None) -> tuple[PhysicalDeviceInfo, str]:
    """Choose a device: `wanted` (index or name substring) or VKROPE_DEVICE,
    else the most capable type. Returns the device and why it was chosen;
    raises `VulkanUnavailableError` listing every device and why each was
    passed over."""
    source = "argument"
    if wanted is None:
        env = os.environ.get("VKROPE_DEVICE", "").strip()
        if env:
            wanted, source = env, "VKROPE_DEVICE"
    if wanted is not None and isinstance(wanted, str) and re.fullmatch(r"[+-]?\d+", wanted.strip()):
        wanted = int(wanted)  # (an index: no device name is a bare number; VKROPE_DEVICE's -1 too, never matched)

    reasons: dict[int, str] = {}
    candidates = []
    for d in devices:
        if d.problems:
            reasons[d.index] = "; ".join(d.problems)
        elif isinstance(wanted, int) and d.index != wanted:
            reasons[d.index] = f"{source} asks for index {wanted}"
        elif isinstance(wanted, str) and wanted.lower() not in d.name.lower():
            reasons[d.index] = f"name does not contain {wanted!r} ({source})"
        else:
            candidates.append(d)
    if not candidates:
        seen = "; ".join(f"[{d.index}] {d.name} ({d.type}): {reasons[d.index]}" for d in devices) or "none"
        hint = b.INSTALL_HINT if wanted is None else (
            "pass device= one of the indices or names above" if source == "argument"
            else "set VKROPE_DEVICE to one of the indices or names above")
        raise VulkanUnavailableError(f"no usable Vulkan device. Devices seen: {seen}. Next: {hint}")
    best = min(candidates, key=lambda d: (DEVICE_TYPE_RANK.get(d.type_code, 9), d.index))
    if wanted is not None:
        why = f"{source} = {wanted!r}"
    else:
        why = f"most capable type ({best.type}) among {len(candidates)} usable device(s)"
    return best, why
