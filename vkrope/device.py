"""`vkrope.Device`: one Vulkan device, opened and closed deterministically."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from .arguments import check_request
from .errors import DeviceClosedError, DeviceLostError, DeviceTimeoutError
from .op import RopeOp
from .vk.context import Context
from .vk.instance import Instance, PhysicalDeviceInfo


def resolve_storage(storage: str) -> str:
    """The storage `auto` stands for (buffers: see README, 'Storage')."""
    return "buffer" if storage == "auto" else storage


class Device:
    """A Vulkan device that runs the operator.

    Use it as a context manager (or call `close()`); it owns every Vulkan
    object it creates. Pipelines, buffers and command buffers are built on
    first use and reused. Safe to share between threads: calls are
    serialised on the device's queue.

        with vkrope.Device() as dev:
            y = dev.apply(x, freqs)

    `device` picks the physical device: an index or a name substring (default:
    the `VKROPE_DEVICE` environment variable, else the most capable type).
    `validation=True` enables the Khronos validation layer (default: the
    `VKROPE_VALIDATION` environment variable).
    """

    def __init__(self, device: int | str | None = None, *, validation: bool | None = None) -> None:
        if device is not None and (isinstance(device, bool) or not isinstance(device, (int, str))):
            raise TypeError(f"device must be an index (int) or a name substring (str); got {type(device).__name__} {device!r}")
        self._lock = threading.RLock()
        self._ctx: Context | None = None
        ctx = Context(device, validation)
        try:
            self._op = RopeOp(ctx)
        except BaseException:
            ctx.close()
            raise
        self._ctx = ctx

    # --- facts ------------------------------------------------------------
    @property
    def name(self) -> str:
        """The physical device's name."""
        return self._context().info.name

    @property
    def info(self) -> dict[str, Any]:
        """The device's facts (type, API version, limits) and why it was chosen."""
        ctx = self._context()
        facts = ctx.info.facts()
        facts["why_chosen"] = ctx.why
        facts["unified_memory"] = self._op.unified
        facts["validation"] = ctx.instance.validation
        return facts

    @property
    def closed(self) -> bool:
        """Whether the device was closed (explicitly or after a device loss)."""
        return self._ctx is None

    def _context(self) -> Context:
        ctx = self._ctx
        if ctx is None:
            raise DeviceClosedError("this vkrope.Device is closed; create a new one")
        return ctx

    # --- the operator -----------------------------------------------------
    def apply(
        self,
        x: np.ndarray,
        freqs: np.ndarray,
        *,
        out: np.ndarray | None = None,
        inverse: bool = False,
        repeat: int = 1,
        exclude_last: int = 0,
        positions: np.ndarray | None = None,
        storage: str = "auto",
    ) -> np.ndarray:
        """Rotate `x` by `freqs` on this device; see `vkrope.apply`."""
        req = check_request(
            x, freqs, out=out, inverse=inverse, repeat=repeat, exclude_last=exclude_last,
            positions=positions, storage=storage,
        )
        result = out if out is not None else np.empty(req.shape, dtype=req.dtype)
        if req.x.size == 0:
            self._context()
            return result
        self.run(req, result)
        return result

    def run(self, req: Any, result: np.ndarray, timing: bool = False) -> float | None:
        """Run a checked request into `result` (internal; used by `apply` and
        the benchmark). Returns the kernel seconds when `timing`."""
        with self._lock:
            ctx = self._context()
            try:
                return self._op.run(req, resolve_storage(req.storage), result, timing=timing)
            except (DeviceLostError, DeviceTimeoutError):
                # The queue may still hold our work: nothing on this device can
                # be trusted or reused. Tear it down; callers make a new one.
                self.close()
                raise

    def trim(self) -> None:
        """Free cached work buffers (they are re-made on demand)."""
        with self._lock:
            self._context()
            self._op.trim()

    # --- lifetime ---------------------------------------------------------
    def close(self) -> None:
        """Release every Vulkan object of this device (idempotent)."""
        with self._lock:
            ctx, self._ctx = self._ctx, None
            if ctx is not None:
                ctx.close()

    def __enter__(self) -> "Device":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        # Fallback only: at interpreter shutdown modules may be gone, and the
        # atexit hook of the default device has already run.
        try:
            if getattr(self, "_ctx", None) is not None and not _shutting_down():
                self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        if self._ctx is None:
            return "<vkrope.Device (closed)>"
        return f"<vkrope.Device {self._ctx.info.name!r} ({self._ctx.info.type})>"


def _shutting_down() -> bool:
    import sys

    return sys.is_finalizing()


def devices() -> list[dict[str, Any]]:
    """Every Vulkan device seen: index, name, type, API version, the limits
    vkrope depends on, and why a device cannot be used (empty when it can)."""
    inst = Instance(validation=False)
    try:
        return [d.facts() for d in inst.physical_devices()]
    finally:
        inst.close()


__all__ = ["Device", "devices", "PhysicalDeviceInfo"]
