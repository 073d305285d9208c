"""The exception tree of vkrope.

Every error the runtime raises on its own account derives from `VkropeError`.
Bad arguments are plain `TypeError` / `ValueError` (raised before any GPU
work); the classes here describe the device and the runtime.
"""

from __future__ import annotations

import builtins


class VkropeError(Exception):
    """Base class of every vkrope runtime error."""


class VulkanUnavailableError(VkropeError, RuntimeError):
    """No Vulkan loader, no Vulkan device, or no device that vkrope can use.

    The message says what was found and what to install or set next.
    """


class VulkanError(VkropeError, RuntimeError):
    """A Vulkan call failed; `call` names it and `result` holds the VkResult name."""

    def __init__(self, message: str, call: str = "", result: str = "") -> None:
        super().__init__(message)
        self.call = call
        self.result = result


class OutOfDeviceMemoryError(VulkanError, MemoryError):
    """The device (or the host memory the driver uses) ran out of memory.

    The runtime stays usable: smaller work can follow.
    """


class DeviceLostError(VulkanError):
    """The device was lost (driver reset, hang, removal).

    The `Device` that raised it is closed; the module-level `vkrope.apply`
    creates a fresh default device on its next call.
    """


class DeviceTimeoutError(VulkanError, builtins.TimeoutError):
    """Work on the device did not finish within the bounded wait; `seconds`
    is the bound that passed (None where it is not known), `waited_again`
    whether a second bounded wait passed too (the work is still running)."""

    seconds: float | None = None
    waited_again: bool = False


class DeviceClosedError(VkropeError, RuntimeError):
    """A closed `Device` (or an array on it) was used: closed by `close()`, a timeout, a device loss,
    interpreter exit or a fork (in the child); the message says which, as `Device.closed_why` holds it."""


class NoRopeLayers(VkropeError, ValueError):
    """`from_hf(config)` or `from_gguf(path)`, naming no layer and no layer
    type, of a model whose layers all apply no RoPE: it has no RoPE every
    rotating layer shares (with `layer=`, such a layer gives None); and,
    whatever layer is named, of a model type or GGUF architecture that
    applies no RoPE at all (BERT's). Also a ValueError, as the config's
    reading is one. `reason` says why in a few words (the key and value, or
    the switch, that turns RoPE off; the model type or architecture)."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason


class UnsupportedFeatureError(VkropeError, RuntimeError):
    """The chosen device lacks a feature the request needs (for example
    16-bit storage for float16 and bfloat16 buffers); the message names it."""
