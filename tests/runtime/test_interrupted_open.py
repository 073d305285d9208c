"""An exception that lands while a Device opens (a signal handler's KeyboardInterrupt, right after any Vulkan
call returns, inside the `vulkan` package's wrapper or before vkrope stores the handle) destroys every
instance and device that opening made, devices first: nothing leaks, the validation layer says nothing
(it reports a device left alive under a destroyed instance), and the next Device opens."""

from __future__ import annotations

import collections
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
