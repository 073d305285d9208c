"""The module-level API: the operators on a default device. Each public
operation is its front end's (vkrope/ops/), bound in one line by
`on_default`: its signature and docstring are written once, there."""

from __future__ import annotations

import atexit
import os
import threading
from typing import Any, Callable, ParamSpec, TypeVar, cast

from .arguments import check_on_device
from .device import Device, begun_submissions, kept_key, noted
from .owner import refuse_inside_a_call
from .runtime.array import DeviceArray
from .errors import DeviceClosedError
from .ops import decode, executorch, nd, onnx, sam2, shift, transformers
from .ops.call import Call, bind

P = ParamSpec("P")
R = TypeVar("R")

_default: Device | None = None
# (reentrant, so that a signal handler calling in while this thread opens or closes the default device is
# refused, not deadlocked: refuse_inside_a_call)
_default_lock = threading.RLock()


def _fresh_lock_in_child() -> None:
    global _default_lock
    _default_lock = threading.RLock()  # a thread of the parent may have held it at the fork


os.register_at_fork(after_in_child=_fresh_lock_in_child)


def default_device() -> Device:
    """The device `vkrope.apply` uses, created on first use (and re-created
    after it was closed, for example by a device loss)."""
    global _default
    refuse_inside_a_call(_default_lock, "vkrope's default device", "it is not there yet or going",
                         inside="the opening or closing of the default device")
    with _default_lock:
        if _default is None or _default.closed:
            _default = Device()
        return _default


def close_default_device() -> None:
    """Close the default device (it is re-created on the next `apply`)."""
    global _default
    refuse_inside_a_call(_default_lock, "close_default_device()", "it is not there yet or going",
                         inside="the opening or closing of the default device")
    with _default_lock:
        dev = _default
        if dev is not None:  # (close()'s own refusal, said before anything changes: a refused call leaves the
            # default device as it was, not open and detached)
            refuse_inside_a_call(dev._lock, "close_default_device()", "it would destroy what the call is using")
        _default = None
    if dev is not None:
        dev.close()


atexit.register(close_default_device)


def on_default(front_end: Callable[P, Call[R]]) -> Callable[P, R]:
    """A front end's public operation as a module function on the default
    device. Its signature and docstring are the front end's."""
    def function(*args: P.args, **kwargs: P.kwargs) -> R:
        begun = begun_submissions()
        try:
            objects: list[Any] = []
            key = kept_key(front_end, args, kwargs, objects)
            dev = _default  # (none is made before the arguments are checked)
            if dev is not None:
                done, kept = dev._replay(key, objects)
                if done:
                    return cast(R, kept)  # (the result of the call that was kept: of its kind)
            return _on_default(front_end(*args, **kwargs), key, objects)
        except BaseException as exc:  # (the outermost frame: whatever runs after the submit is covered)
            raise noted(exc, begun)  # noqa: B904  (as Device's operations)

    bind(function, front_end, __name__, front_end.__name__)
    return function


apply = on_default(sam2.apply)
apply_nd = on_default(nd.apply_nd)
rotary_embedding = on_default(onnx.rotary_embedding)
apply_rotary_emb = on_default(executorch.apply_rotary_emb)
apply_rotary_emb_hf = on_default(executorch.apply_rotary_emb_hf)
apply_rotary_pos_emb = on_default(transformers.apply_rotary_pos_emb)
rope_and_cache = on_default(decode.rope_and_cache)
shift_cache = on_default(shift.shift_cache)


def _not_elsewhere(call: Call[Any]) -> None:
    """A DeviceArray argument of another Device than the default one refused before a default device is made
    for the call (it would be opened only to refuse it)."""
    dev = _default  # (read once: another thread may replace it)
    dev = None if dev is None or dev.closed else dev
    for req in call.requests:
        for t in req.tensors():
            if isinstance(t.value, DeviceArray):
                check_on_device(t.name, t.value, dev, "the default one the module functions run on")


def _on_default(call: Call[R], key: tuple | None = None, objects: list[Any] | None = None) -> R:
    """A checked call (so a bad argument is a TypeError / ValueError even on
    a machine without Vulkan) run on the default device. When the default
    device is closed while the call waits for it (another thread's
    close_default_device, or its timeout), the call runs again on a new
    default device, as often as that happens (a close waits for a call in
    flight, so a call it refuses has done nothing yet; once was not enough
    against a thread closing it every few milliseconds: an adversary's)."""
    _not_elsewhere(call)
    while True:
        dev = default_device()
        try:
            return dev._call(call, key, objects)
        except DeviceClosedError:
            if not dev.closed:  # (an argument's device was closed, not this one)
                raise
