"""How a call waits for the device (#35): on a GPU it polls the fence
(vkGetFenceStatus) for a short window before it blocks in vkWaitForFences,
whose wake-up took longer than a decode-sized kernel on the H200. lavapipe
does not poll by default (vk/commands.py's SPIN_S); these tests force the
poll on it, so the path every GPU call takes runs here too."""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest

import vkrope
from oracle import oracle
from vkrope.vk import binding as b
from vkrope.vk import commands

RNG = np.random.default_rng(35)
X = RNG.standard_normal((4, 64, 32)).astype(np.float32)
theta = RNG.uniform(-3, 3, (64, 16))
F = np.stack([np.cos(theta), np.sin(theta)], -1).reshape(64, 32).astype(np.float32)
DEVICE_TYPES = range(5)  # VkPhysicalDeviceType: other, integrated, discrete, virtual, CPU


@pytest.fixture
def calls(monkeypatch) -> dict[str, int]:
    """Count the fence calls made through the binding."""
    made: dict[str, int] = {}
    real = b.call_direct

    def counting(name, *args):
        made[name] = made.get(name, 0) + 1
        return real(name, *args)

    monkeypatch.setattr(b, "call_direct", counting)
    return made


def _poll_for(monkeypatch, seconds: float) -> None:
    monkeypatch.setattr(commands, "SPIN_S", {t: seconds for t in DEVICE_TYPES})


def _poisoned_call(dev: vkrope.Device) -> np.ndarray:
    out = np.full_like(X, np.nan)
    dev.apply(X, F, out=out)
    return out


@pytest.mark.parametrize("kind,polls", [(1, True), (2, True), (3, True), (4, False), (0, False)],
                         ids=["integrated", "discrete", "virtual", "CPU", "other"])
def test_gpus_poll_and_cpus_block(make_device, monkeypatch, calls, kind, polls):
    """The shipped windows (SPIN_S as it is): a device reporting a GPU type polls first; a CPU device, whose
    driver runs the work on the cores a poll would take, blocks at once (its type stood in for, here)."""
    dev = make_device()
    ctx = dev._context()  # noqa: SLF001
    monkeypatch.setattr(ctx, "info", dataclasses.replace(ctx.info, type_code=kind))
    assert np.abs(_poisoned_call(dev) - oracle(X, F)).max() < 1e-5
    assert ("vkGetFenceStatus" in calls) == polls
    assert polls or calls["vkWaitForFences"] >= 1


def test_a_polled_wait_gives_the_result_without_blocking(device, monkeypatch, calls):
    _poll_for(monkeypatch, 10.0)  # (longer than any call: the poll sees every one end)
    for _ in range(3):
        assert np.abs(_poisoned_call(device) - oracle(X, F)).max() < 1e-5
    assert calls.get("vkGetFenceStatus", 0) >= 3
    assert "vkWaitForFences" not in calls


def test_no_window_blocks_at_once(device, monkeypatch, calls):
    _poll_for(monkeypatch, 0.0)
    assert np.abs(_poisoned_call(device) - oracle(X, F)).max() < 1e-5
    assert "vkGetFenceStatus" not in calls
    assert calls["vkWaitForFences"] >= 1


def test_a_poll_that_runs_out_blocks(device, monkeypatch, calls):
    """The work not done within the window (here the poll is told so): the wait blocks, and the result is
    only read after it."""
    _poll_for(monkeypatch, 1e-3)
    real = b.call_direct

    def never_ready(name, *args):
        if name == "vkGetFenceStatus":
            real(name, *args)  # (counted)
            return b.vk().VK_NOT_READY
        return real(name, *args)

    monkeypatch.setattr(b, "call_direct", never_ready)
    assert np.abs(_poisoned_call(device) - oracle(X, F)).max() < 1e-5
    assert calls["vkGetFenceStatus"] >= 1 and calls["vkWaitForFences"] >= 1


def test_the_window_is_bounded_by_the_timeout(device, monkeypatch, calls):
    """A wait bounded below the poll window polls no longer than the bound, then blocks in
    vkWaitForFences as a wait with no poll would (here the poll is told the work never ends: a window of
    10 s would hold the call that long)."""
    _poll_for(monkeypatch, 10.0)
    monkeypatch.setattr(commands, "TIMEOUT_OVERRIDE_S", 0.5)
    real = b.call_direct

    def never_ready(name, *args):
        result = real(name, *args)  # (counted)
        return b.vk().VK_NOT_READY if name == "vkGetFenceStatus" else result

    monkeypatch.setattr(b, "call_direct", never_ready)
    t0 = time.perf_counter()
    assert np.abs(_poisoned_call(device) - oracle(X, F)).max() < 1e-5
    assert time.perf_counter() - t0 < 5.0
    assert calls["vkGetFenceStatus"] >= 1 and calls["vkWaitForFences"] >= 1


def test_the_blocking_wait_gets_what_the_poll_left_of_the_bound(device, monkeypatch):
    """A poll that ran out of the window (here it is told the work never ends) has used that much of the
    bound: the blocking wait after it gets what is left, so the whole wait stays within VKROPE_TIMEOUT_S
    (it was given the whole bound again: twice the timeout, the adversaries of #35)."""
    _poll_for(monkeypatch, 10.0)
    monkeypatch.setattr(commands, "TIMEOUT_OVERRIDE_S", 0.3)
    real_call, real_wait, given = b.call_direct, b.wait_fence, []

    def never_ready(name, *args):
        result = real_call(name, *args)
        return b.vk().VK_NOT_READY if name == "vkGetFenceStatus" else result

    def wait(device_, fences, timeout_ns):
        given.append(timeout_ns)
        return real_wait(device_, fences, timeout_ns)

    monkeypatch.setattr(b, "call_direct", never_ready)
    monkeypatch.setattr(b, "wait_fence", wait)
    assert np.abs(_poisoned_call(device) - oracle(X, F)).max() < 1e-5
    assert given and max(given) < 0.1e9, given  # (the poll took the 0.3 s window: little or nothing is left)


def test_a_device_lost_while_polling_closes_the_device(monkeypatch):
    _poll_for(monkeypatch, 10.0)
    first = vkrope.default_device()
    vkrope.apply(X, F)
    b.inject_fault("vkGetFenceStatus", lambda: b.vk().VkErrorDeviceLost())
    with pytest.raises(vkrope.DeviceLostError, match="vkGetFenceStatus"):
        vkrope.apply(X, F)
    assert first.closed
    assert np.abs(vkrope.apply(X, F, out=np.full_like(X, np.nan)) - oracle(X, F)).max() < 1e-5
    assert vkrope.default_device() is not first


def test_an_interrupted_poll_returns_only_when_the_device_is_done(device, monkeypatch):
    """A KeyboardInterrupt in the poll is raised once nothing is in flight; the caller's `out` is not
    written after, and the device goes on."""
    _poll_for(monkeypatch, 10.0)
    out = np.full_like(X, np.nan)
    device.apply(X, F, out=out)
    b.inject_fault("vkGetFenceStatus", lambda: KeyboardInterrupt())
    out.fill(np.nan)
    with pytest.raises(KeyboardInterrupt):
        device.apply(X, F, out=out)
    stream = device._rt.stream  # noqa: SLF001
    assert not stream.in_flight
    assert b.call_direct("vkGetFenceStatus", stream.ctx.handle, stream.fence) == b.vk().VK_SUCCESS  # (done)
    # (interrupted after the submission ended: the copy back was skipped, or it ran whole)
    assert np.isnan(out).all() or np.abs(out - oracle(X, F)).max() < 1e-5
    assert np.abs(_poisoned_call(device) - oracle(X, F)).max() < 1e-5
