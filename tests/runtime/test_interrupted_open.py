"""An exception that lands while a Device opens (a signal handler's KeyboardInterrupt, right after any Vulkan
call returns, inside the `vulkan` package's wrapper or before vkrope stores the handle) destroys every
instance and device that opening made, devices first: nothing leaks, the validation layer says nothing
(it reports a device left alive under a destroyed instance), and the next Device opens."""

from __future__ import annotations

import collections
import gc
import sys
from typing import Any

import pytest

import vkrope
from vkrope.vk import binding as b

CREATES = {"vkCreateInstance": "instance", "vkCreateDevice": "device"}
DESTROYS = {"vkDestroyInstance": "instance", "vkDestroyDevice": "device"}


class _Lib:
    """The real cffi lib, its destroy functions counted (vkrope destroys through the C functions)."""

    def __init__(self, lib: Any, counts: collections.Counter) -> None:
        self._lib, self._counts = lib, counts
        self.order: list[str] = []  # what was destroyed, in order

    def __getattr__(self, name: str) -> Any:
        fn = getattr(self._lib, name)
        if name not in DESTROYS:
            return fn

        def counted(*args: Any) -> Any:
            self._counts["destroyed " + DESTROYS[name]] += 1
            self.order.append(DESTROYS[name])
            return fn(*args)
        return counted


class _Vulkan:
    """The `vulkan` package as vkrope's binding sees it: creations counted when their C call succeeded, and
    after the call named `interrupt` returns, a KeyboardInterrupt (once)."""

    def __init__(self, real: Any) -> None:
        self._real, self.counts, self.calls = real, collections.Counter(), []
        self.lib = _Lib(real.lib, self.counts)
        self.interrupt: str | None = None

    def __getattr__(self, name: str) -> Any:
        fn = getattr(self._real, name)
        if not (name.startswith("vk") and callable(fn)):
            return fn

        def traced(*args: Any, **kw: Any) -> Any:
            self.calls.append(name)
            result = fn(*args, **kw)
            if name in CREATES:
                self.counts["created " + CREATES[name]] += 1
            if name == self.interrupt:
                self.interrupt = None
                raise KeyboardInterrupt(name)
            return result
        return traced


@pytest.fixture
def counted_vulkan(monkeypatch: pytest.MonkeyPatch) -> _Vulkan:
    fake = _Vulkan(b.vk())
    monkeypatch.setattr(b, "vk", lambda: fake)
    return fake


def test_an_interruption_after_any_call_of_opening_leaks_nothing(counted_vulkan: _Vulkan) -> None:
    vk = counted_vulkan
    dev = vkrope.Device()
    opening = list(dict.fromkeys(vk.calls))  # (the calls of opening only: close's are another test's)
    dev.close()
    assert "vkCreateInstance" in opening and "vkCreateDevice" in opening
    live = b.live_handles()
    for name in opening:
        vk.counts.clear()
        vk.lib.order.clear()
        vk.interrupt = name
        try:
            vkrope.Device().close()  # (an interruption in close is another test's: only opening's here)
        except KeyboardInterrupt:
            pass
        assert vk.interrupt is None, f"{name} was not called again"
        assert vk.counts["created instance"] == vk.counts["destroyed instance"], (name, vk.counts)
        assert vk.counts["created device"] == vk.counts["destroyed device"], (name, vk.counts)
        assert vk.lib.order in ([], ["instance"], ["device", "instance"]), (name, vk.lib.order)  # device first
        assert b.live_handles() == live, name
    with vkrope.Device() as dev:  # (and the runtime opens again)
        assert dev.name


def test_an_interruption_right_after_the_debug_messenger_is_made_leaks_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The messenger (validation on) is made by the C function itself, as every handle: a KeyboardInterrupt
    after it returns, before vkrope stores the handle, still destroys it (before its instance)."""
    from vkrope.vk.instance import validation_requested
    if not validation_requested():
        pytest.skip("the debug messenger is made only with the validation layer on (VKROPE_VALIDATION=1)")
    counts: collections.Counter = collections.Counter()
    real = b.instance_function
    interrupt = ["vkCreateDebugUtilsMessengerEXT"]

    def traced(instance: Any, name: str) -> Any:
        fn = real(instance, name)
        if name not in ("vkCreateDebugUtilsMessengerEXT", "vkDestroyDebugUtilsMessengerEXT"):
            return fn

        def counted(*args: Any) -> Any:
            result = fn(*args)
            counts[name] += 1
            if name in interrupt:
                interrupt.clear()
                raise KeyboardInterrupt(name)
            return result
        return counted

    monkeypatch.setattr(b, "instance_function", traced)
    live = b.live_handles()
    with pytest.raises(KeyboardInterrupt):
        vkrope.Device()
    assert counts == {"vkCreateDebugUtilsMessengerEXT": 1, "vkDestroyDebugUtilsMessengerEXT": 1}
    assert b.live_handles() == live
    with vkrope.Device() as dev:  # (and the runtime opens again, its messenger made and destroyed once)
        assert dev.name
    assert counts == {"vkCreateDebugUtilsMessengerEXT": 2, "vkDestroyDebugUtilsMessengerEXT": 2}
    assert b.live_handles() == live


def test_a_failed_debug_messenger_fails_opening_and_leaks_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """vkCreateDebugUtilsMessengerEXT returning an error (out of host memory): Device() raises it as vkrope's
    error naming the call, makes no messenger, releases its instance, and the next Device opens."""
    from vkrope.vk.instance import validation_requested
    if not validation_requested():
        pytest.skip("the debug messenger is made only with the validation layer on (VKROPE_VALIDATION=1)")
    real = b.instance_function
    failing = ["vkCreateDebugUtilsMessengerEXT"]

    def traced(instance: Any, name: str) -> Any:
        fn = real(instance, name)
        if name in failing:
            failing.clear()
            return lambda *args: b.vk().VK_ERROR_OUT_OF_HOST_MEMORY
        return fn

    monkeypatch.setattr(b, "instance_function", traced)
    live = b.live_handles()
    with pytest.raises(vkrope.OutOfDeviceMemoryError, match="vkCreateDebugUtilsMessengerEXT"):
        vkrope.Device()
    assert b.live_handles() == live
    with vkrope.Device() as dev:
        assert dev.name


def _open_path_code() -> set:
    """The functions of opening (a Device, or the instance `vkrope.devices()` lists by) whose direct callees an
    interruption is injected at."""
    from vkrope import owner  # noqa: PLC0415
    from vkrope.runtime import engine  # noqa: PLC0415
    from vkrope.vk import context, instance  # noqa: PLC0415

    return {f.__code__ for f in (owner.DeviceOwner.__init__, owner.DeviceMemory.__init__, context.Context.__init__,
                                 context.Context._create_device, instance.Instance.__init__, instance.Instance._open,
                                 engine.Runtime.__init__, owner.devices)}


def _sweep(opening: Any) -> list[str]:
    """`opening()` run once per Python step of it, a KeyboardInterrupt at that step (a callee's entry, or as it
    returns, before its caller stores what it made), each followed by a Device opened and closed (which
    completes an orphan's close): no instance or device is left alive. Where each landed."""
    targets, k, fired_at = _open_path_code(), 0, []
    vkrope.Device().close()
    gc.collect()
    live = b.live_handles()
    while True:
        k += 1
        count, fired = [0], [False]

        def tracer(frame: Any, event: str, arg: Any) -> Any:
            if event != "call" or fired[0] or frame.f_back is None or frame.f_back.f_code not in targets \
                    or frame.f_code.co_filename.endswith("weakref.py"):  # (a weakref's callback: Python ignores
                # what it raises, as it would a real signal's)
                return None
            count[0] += 1
            if count[0] == k:
                fired[0] = True
                raise KeyboardInterrupt(frame.f_code.co_name)

            def on_return(f: Any, e: str, a: Any) -> Any:
                if e == "return" and not fired[0]:
                    count[0] += 1
                    if count[0] == k:
                        fired[0] = True
                        raise KeyboardInterrupt(f.f_code.co_name + " returning")
                return None
            return on_return

        sys.settrace(tracer)
        try:
            opening()
        except KeyboardInterrupt as exc:
            fired_at.append(str(exc))
        finally:
            sys.settrace(None)
        if not fired[0]:
            return fired_at
        vkrope.Device().close()
        gc.collect()
        assert b.live_handles() == live, f"step {k} ({fired_at[-1]}): {b.live_handles()} != {live}"


def test_an_interruption_at_any_python_step_of_opening_leaks_nothing() -> None:
    """At every Python step of opening a Device in turn, a KeyboardInterrupt leaks no instance or device (an
    adversary's: one landing as Instance() or Context() returned, or at the lock made between them, leaked the
    instance, and the device, for good); nor at every step of vkrope.devices() (a reviewer's: its instance
    leaked the same way)."""
    fired_at = _sweep(lambda: vkrope.Device().close())
    assert len(fired_at) > 20 and any("Instance" in w or "__init__ returning" in w for w in fired_at), fired_at
    fired_at = _sweep(vkrope.devices)
    assert len(fired_at) > 4 and any("__init__ returning" in w for w in fired_at), fired_at


def test_a_second_interruption_in_a_failed_openings_cleanup_is_completed_later(monkeypatch: pytest.MonkeyPatch) -> None:
    """An opening interrupted (as its runtime is made) closes what it made; a second interruption inside that
    close leaves the context where the orphans' sweep completes it (the next Device opened), not lost (a
    reviewer's: the instance and the device stayed alive for good)."""
    from vkrope.runtime import engine  # noqa: PLC0415
    from vkrope.vk import context  # noqa: PLC0415

    vkrope.Device().close()
    gc.collect()
    live = b.live_handles()
    raised: list[str] = []

    def interrupted(name: str, real: Any) -> Any:
        def once(*args: Any, **kw: Any) -> Any:
            if name not in raised:
                raised.append(name)
                raise KeyboardInterrupt(name)
            return real(*args, **kw)
        return once

    monkeypatch.setattr(engine.Runtime, "__init__", interrupted("runtime", engine.Runtime.__init__))
    monkeypatch.setattr(context.Context, "wait_idle", interrupted("wait_idle", context.Context.wait_idle))
    with pytest.raises(KeyboardInterrupt):
        vkrope.Device()
    assert raised == ["runtime", "wait_idle"], raised
    assert b.live_handles() != live  # (the second interruption left the close undone)
    monkeypatch.undo()
    vkrope.Device().close()  # (the orphans' sweep completes it)
    gc.collect()
    assert b.live_handles() == live
