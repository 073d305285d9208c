"""Forced device conditions: limits, so the suite crosses the same
thresholds (binding splits, row blocks, folded images, the discrete-GPU
staging path) on every Vulkan device with small arrays, through
`Device._force_limits`; and hung waits (`hang_waits`)."""

from __future__ import annotations

import vkrope


def force_limits(dev: vkrope.Device, *, unified=None, **limits) -> vkrope.Device:
    """Make `dev` act as a smaller device: numeric limits only ever shrink
    (never past what the real device allows), alignments only grow (a
    larger power of two is still a valid one)."""
    real = dev.info
    for name, value in list(limits.items()):
        if name.startswith("min_") and name.endswith("_alignment"):
            limits[name] = max(value, real[name])
        elif name.startswith("max_") and isinstance(value, int):
            limits[name] = min(value, real[name])
    dev._force_limits(unified=unified, **limits)
    return dev


# Small limits that make modest arrays cross every threshold (binding
# splits, row blocks, folded images) on any device.
SMALL_LIMITS = dict(max_storage_buffer_range=1 << 20, max_image_dimension_3d=64,
                    max_memory_allocation_size=8 << 20)


def hang_waits(monkeypatch, times: int = 2) -> None:
    """The next `times` fence waits time out (as on a hung device: two make vkrope abandon the device), the ones
    after wait as usual. Waits block at once (no fence poll first: it could see the work done)."""
    import vkrope.vk.binding as b  # noqa: PLC0415
    from vkrope.vk import commands  # noqa: PLC0415

    monkeypatch.setattr(commands, "SPIN_S", {})

    real, left = b.wait_fence, [times]

    def hung(*args):
        if left[0]:
            left[0] -= 1
            raise vkrope.DeviceTimeoutError("vkWaitForFences failed with VK_TIMEOUT", "vkWaitForFences", "VK_TIMEOUT")
        return real(*args)

    monkeypatch.setattr(b, "wait_fence", hung)
