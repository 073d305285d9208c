"""What a call that timed out leaves running: one more bounded wait for it
(`ends_within`, the runtime's settling and the owner's close alike), and,
where the work still runs after it, what that work may read or write kept
for the process's whole life (`never_freed`, `LEFT_RUNNING`): a hung GPU may
write it at any time, and the driver's threads wrote into freed memory."""

from __future__ import annotations

import ctypes
from typing import Any

from ..errors import DeviceTimeoutError, VkropeError
from ..vk.resources import ImportedBuffer
from .engine import Runtime


def never_freed(container: list) -> list:
    """`container` with one reference more than anyone holds: never freed, not even when the interpreter exits
    and drops its modules' names, so what it holds stays alive for the process's whole life (work left
    running on a device may write the memory of the arrays in it until the process ends: freed at exit, the
    driver's threads wrote into freed memory and the process died of SIGSEGV after its last line, an
    adversary's)."""
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(container))
    return container


# What calls whose work was still running after a timeout's second wait may still read or write: the caller's
# arrays (their jobs and tables), their imports and the call's buffers, never freed (their device is abandoned:
# owner.py's _close_after_timeout), as a hung GPU may write them at any time.
LEFT_RUNNING: list[tuple[Any, list[ImportedBuffer], list[Any]]] = never_freed([])


def ends_within(rt: Runtime, seconds: float | None) -> bool:
    """Whether the work in flight ends within one more wait of the bound `seconds` (at least a second: it may
    only be slow); a device lost meanwhile counts as ended (nothing runs on it any more)."""
    try:
        rt.stream.drain(max(1.0, seconds or 0.0))
    except DeviceTimeoutError:
        return False
    except VkropeError:
        pass
    return True


__all__ = ["never_freed", "LEFT_RUNNING", "ends_within"]
