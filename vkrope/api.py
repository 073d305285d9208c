"""The module-level API: `vkrope.apply` on a default device."""

from __future__ import annotations

import atexit
import os
import threading
from typing import cast

import numpy as np

from .arguments import check_request
from .device import Device

_default: Device | None = None
_default_lock = threading.Lock()


def _fresh_lock_in_child() -> None:
    global _default_lock
    _default_lock = threading.Lock()  # a thread of the parent may have held it at the fork


os.register_at_fork(after_in_child=_fresh_lock_in_child)


def default_device() -> Device:
    """The device `vkrope.apply` uses, created on first use (and re-created
    after it was closed, for example by a device loss)."""
    global _default
    with _default_lock:
        if _default is None or _default.closed:
            _default = Device()
        return _default


def close_default_device() -> None:
    """Close the default device (it is re-created on the next `apply`)."""
    global _default
    with _default_lock:
        dev, _default = _default, None
    if dev is not None:
        dev.close()


atexit.register(close_default_device)


def apply(
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
    """Interleaved rotary position embedding of `x` by `freqs`, on the GPU.

    x: float32 or float16 array `[..., N, C]` (C even), (real, imag) pairs
    interleaved on the last axis. freqs: `(cos, sin)` pairs for `Nf` rows,
    real with `Nf * C` values (`[Nf, C]`, `[1, Nf, C/2, 2]`, ...) or complex
    with `Nf * C/2` values; broadcast over every leading axis of x. Token `n`
    uses row `n % Nf` for its first `N - exclude_last` tokens, which must
    number `repeat * Nf`; the last `exclude_last` tokens pass through.
    `positions` (int array `[N]`, -1 = pass through) picks each token's row
    instead. `inverse=True` rotates by -theta. `out` receives the result
    (may be x itself). `storage`: "auto", "buffer" or "texture3d".

    Returns a new array of x's shape and dtype (or `out`).
    """
    dev = _default
    if dev is None or dev.closed:
        # Argument errors come before any GPU work, device creation included
        # (a TypeError stays a TypeError on a machine without Vulkan). Once
        # the device exists, Device.apply checks them before its GPU work.
        check_request(x, freqs, out=out, inverse=inverse, repeat=repeat, exclude_last=exclude_last,
                      positions=positions, storage=storage)
        dev = default_device()
    return cast(np.ndarray, dev.apply(
        x, freqs, out=out, inverse=inverse, repeat=repeat, exclude_last=exclude_last,
        positions=positions, storage=storage,
    ))
