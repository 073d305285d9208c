"""Every Vulkan object has one owner and is released: live-handle counts
return to their baseline, close is idempotent, use after close is clear."""

from __future__ import annotations

import gc
import os
import subprocess
import sys

import numpy as np
import pytest

import vkrope
from vkrope.vk.binding import live_handles
from oracle import check_apply

RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 5, 12)).astype(np.float32)
F = RNG.standard_normal((5, 12)).astype(np.float32)


def test_device_context_manager_releases_everything():
    before = live_handles()
    with vkrope.Device() as dev:
        for storage in ("buffer", "texture3d"):
            check_apply(dev.apply, X, F, storage=storage)
            check_apply(dev.apply, X.astype(np.float16), F.astype(np.float16), storage=storage)
        assert live_handles() != before
    assert dev.closed
    gc.collect()
    assert live_handles() == before


def test_create_release_cycles_return_to_baseline():
    before = live_handles()
    for _ in range(5):
        dev = vkrope.Device()
        dev.apply(X, F)
        dev.close()
    gc.collect()
    assert live_handles() == before


def test_close_is_idempotent_and_use_after_close_is_clear():
    dev = vkrope.Device()
    dev.close()
    dev.close()
    with pytest.raises(vkrope.DeviceClosedError, match="closed"):
        dev.apply(X, F)
    with pytest.raises(vkrope.DeviceClosedError):
        dev.info


def test_garbage_collected_device_releases():
    before = live_handles()
    dev = vkrope.Device()
    dev.apply(X, F)
    del dev
    gc.collect()
    assert live_handles() == before


def test_buffers_are_reused_across_calls(device):
    device.apply(X, F)
    handles = live_handles()
    for _ in range(20):
        device.apply(X, F)
    assert live_handles() == handles


def test_interpreter_exit_is_clean_with_validation():
    """The default device closes at exit with validation on: no messages, exit 0."""
    code = (
        "import atexit\n"
        "def check():\n"  # registered before vkrope's hooks, so it runs after them (LIFO)
        "    from vkrope.vk.instance import validation_messages\n"
        "    from vkrope.vk.binding import live_handles\n"
        "    m = validation_messages()\n"
        "    print('MESSAGES', len(m), m[:3], 'LIVE', live_handles())\n"
        "atexit.register(check)\n"
        "import numpy as np, vkrope\n"
        "vkrope.apply(np.ones((1, 2, 4), np.float32), np.ones((2, 4), np.float32))\n"
    )
    env = dict(os.environ, VKROPE_VALIDATION="1")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr
    assert "MESSAGES 0 [] LIVE {}" in res.stdout, res.stdout + res.stderr
    assert res.stderr == "", res.stderr


_DAEMONS_AT_EXIT = """
import sys, threading, time, numpy as np, vkrope
dev = vkrope.Device()
a = dev.asarray(np.ones((4, 1024, 256), np.float32))
t = np.ones((1024, 256), np.float32)
def worker():
    while True:
        try:
            dev.apply(a, t).get()
        except vkrope.DeviceClosedError:
            pass
for _ in range(4):
    threading.Thread(target=worker, daemon=True).start()
class Holder:  # (an array in a reference cycle: collected at interpreter exit, its finalizer run then)
    def __init__(self):
        self.me, self.arr = self, dev.asarray(np.ones((1, 1024, 256), np.float32))
Holder()
time.sleep(0.3)
print("main done", flush=True)
"""


@pytest.mark.parametrize("run", range(3))
def test_daemon_threads_using_a_device_do_not_hang_the_exit(run):
    """Daemon threads calling a Device while the main thread ends: at exit the device closes, a daemon thread
    frozen by the interpreter while it held the device's lock held it for ever, and an array's finalizer
    waiting on that lock hung the exit (an adversary's: 8 of 8 runs with 4 threads). A closed device's arrays
    give nothing back, and take no lock."""
    res = subprocess.run([sys.executable, "-c", _DAEMONS_AT_EXIT], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and "main done" in res.stdout, res.stdout + res.stderr


def test_forked_child_gets_its_own_default_device():
    """A child forked after the parent used vkrope makes its own device and
    leaves the parent's alone; both get correct results. Where the driver
    cannot start Vulkan again in a forked child (NVIDIA's: #35), the child
    gets an error that says so and names the way out."""
    import multiprocessing as mp

    x = RNG.standard_normal((2, 5, 12)).astype(np.float32)
    vkrope.apply(x, F)  # the parent's default device exists now
    parent = vkrope.default_device()
    ctx = mp.get_context("fork")
    with ctx.Pool(1) as pool:
        y = pool.apply_async(_child_apply, (x, F)).get(timeout=120)  # a hang fails, not stalls
    if "NVIDIA" in parent.info["driver"]:  # (measured on the H200: it cannot; docs/errors.md)
        assert isinstance(y, str) and y.startswith("VulkanError: vkCreate") and "forked" in y and "'spawn'" in y, y
    else:
        np.testing.assert_array_equal(y, vkrope.apply(x, F))
    assert vkrope.default_device() is parent and not parent.closed


def _child_apply(x, f):
    try:
        return vkrope.apply(x, f)
    except vkrope.VulkanError as exc:  # (the driver's refusal, as text: it must say why)
        return f"{type(exc).__name__}: {exc}"


def _child_refused(x, f):
    import vkrope.vk.binding as b

    b.inject_fault("vkCreateDevice", lambda: b.vk().VkErrorInitializationFailed())
    try:
        vkrope.apply(x, f)
    except vkrope.VulkanError as exc:
        return type(exc).__name__, exc.result, str(exc), b.live_handles()
    return "no error"


def test_a_driver_that_cannot_start_again_in_a_forked_child_is_named():
    """NVIDIA's driver refuses vkCreateDevice (VK_ERROR_INITIALIZATION_FAILED) in a
    child forked after the parent opened Vulkan (#35, the H200): forced here by a
    fault, the child's error says it was forked and what to use instead, and
    nothing leaks; the same refusal in a process that was not forked says only
    what failed."""
    import multiprocessing as mp
    import vkrope.vk.binding as b

    x = RNG.standard_normal((2, 5, 12)).astype(np.float32)
    vkrope.apply(x, F)
    at_fork = live_handles()
    with mp.get_context("fork").Pool(1) as pool:
        kind, result, message, live = pool.apply_async(_child_refused, (x, F)).get(timeout=120)
    assert (kind, result) == ("VulkanError", "VK_ERROR_INITIALIZATION_FAILED")
    assert message.startswith("vkCreateDevice failed with VK_ERROR_INITIALIZATION_FAILED: this process was forked")
    assert "multiprocessing.get_context('spawn')" in message
    assert live == at_fork, (live, at_fork)  # the child's own instance was closed (the parent's: abandoned)
    b.inject_fault("vkCreateDevice", lambda: b.vk().VkErrorInitializationFailed())
    with pytest.raises(vkrope.VulkanError) as info:
        vkrope.Device()
    assert str(info.value) == "vkCreateDevice failed with VK_ERROR_INITIALIZATION_FAILED"
    np.testing.assert_array_equal(vkrope.apply(x, F), check_apply(vkrope.apply, x, F))


def _child_out_of_memory(x, f):
    import vkrope.vk.binding as b

    b.inject_fault("vkCreateDevice", lambda: b.vk().VkErrorOutOfDeviceMemory())
    try:
        vkrope.apply(x, f)
    except vkrope.VulkanError as exc:
        return str(exc)
    return "no error"


def test_a_forked_child_is_told_only_what_the_fork_may_explain():
    """Out of memory in a forked child is itself, not the fork's doing; and a
    parent that opened Vulkan and closed it again still has its children told
    (the driver stays loaded)."""
    import multiprocessing as mp

    x = RNG.standard_normal((2, 5, 12)).astype(np.float32)
    vkrope.apply(x, F)
    vkrope.close_default_device()  # (none open at the fork)
    with mp.get_context("fork").Pool(1) as pool:
        oom = pool.apply_async(_child_out_of_memory, (x, F)).get(timeout=120)
        refused = pool.apply_async(_child_refused, (x, F)).get(timeout=120)
    assert oom == "vkCreateDevice failed with VK_ERROR_OUT_OF_DEVICE_MEMORY", oom
    assert refused[2].startswith("vkCreateDevice failed with VK_ERROR_INITIALIZATION_FAILED: this process was forked")


def test_a_fork_waits_for_the_call_in_flight():
    """No vkrope call is inside the driver at a fork (#35: a child forked
    while another thread was inside a call hung at exit on NVIDIA's driver):
    os.fork waits until the device's lock is free; the child gets a fresh one."""
    import threading
    import time

    dev = vkrope.Device()
    try:
        inside, leave = threading.Event(), threading.Event()

        def call_in_flight():
            with dev._lock:
                inside.set()
                leave.wait(10)

        t = threading.Thread(target=call_in_flight)
        t.start()
        inside.wait(10)
        threading.Timer(0.3, leave.set).start()
        t0 = time.monotonic()
        pid = os.fork()
        if pid == 0:
            os._exit(0 if dev._lock.acquire(timeout=1) else 3)
        waited = time.monotonic() - t0
        _, status = os.waitpid(pid, 0)
        t.join()
        assert os.WEXITSTATUS(status) == 0
        assert waited >= 0.25, waited
        assert dev._lock.acquire(timeout=1)  # the parent's lock was given back
        dev._lock.release()
    finally:
        dev.close()


def test_unclosed_devices_close_at_exit():
    code = (
        "import atexit, importlib\n"
        "live = lambda: importlib.import_module('vkrope.vk.binding').live_handles()\n"
        "atexit.register(lambda: print('LIVE', live()))\n"  # before vkrope's hooks: runs after them (LIFO)
        "import numpy as np, vkrope\n"
        "d = vkrope.Device()\n"
        "d.apply(np.ones((1, 2, 4), np.float32), np.ones((2, 4), np.float32))\n"
        "keep = [vkrope.Device(), d]\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert "LIVE {}" in res.stdout, res.stdout


def test_a_fork_does_not_deadlock_with_a_call_that_waits_for_another_devices_lock():
    """A thread inside a call on device B releases an array of device A (what
    a garbage collection inside the call does): it holds B's lock and waits for
    A's. A fork then must not take A's and wait for B's forever (the review of
    #35): it takes every lock or none, and tries again."""
    code = """
import os, threading, time, numpy as np, vkrope
A, B = vkrope.Device(), vkrope.Device()
if id(A) > id(B):
    A, B = B, A  # (the fork takes the locks in id order: A first)
arr = A.asarray(np.ones((4, 8), np.float32))
inside = threading.Event()
def call_on_b():
    with B._lock:
        inside.set()
        time.sleep(0.5)
        arr.release()
t = threading.Thread(target=call_on_b)
t.start()
inside.wait()
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
t.join()
print("forked", arr.state)
"""
    res = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and "forked released" in res.stdout, res.stdout + res.stderr


def test_a_forks_locks_are_given_back_by_its_own_thread_only():
    """The locks a fork holds are its thread's: with two threads forking at
    once, one's after-fork hook must not give back the other's (the review of
    #35: one list for both let it, a RuntimeError and a lock held forever)."""
    import threading
    from vkrope import owner

    dev = vkrope.Device()
    try:
        owner._hold_every_lock()  # this thread's fork, before
        errors = []

        def other_thread_after_its_fork():
            try:
                owner._release_every_lock()  # (it held nothing)
            except Exception as exc:  # noqa: BLE001
                errors.append(exc)

        t = threading.Thread(target=other_thread_after_its_fork)
        t.start()
        t.join()
        still_held = []

        def probe_lock():
            free = dev._lock.acquire(timeout=0.2)
            if free:
                dev._lock.release()  # (a lock left held by an ended thread would hang close())
            still_held.append(not free)

        probe = threading.Thread(target=probe_lock)
        probe.start()
        probe.join()
        assert errors == [] and still_held == [True]
        owner._release_every_lock()
        assert dev._lock.acquire(timeout=1)
        dev._lock.release()
    finally:
        dev.close()


@pytest.mark.parametrize("call,work", [("vkCreateDevice", "vkrope.Device"),
                                       ("vkEnumeratePhysicalDevices", "vkrope.devices")])
def test_a_fork_waits_for_a_device_being_opened_or_devices_being_listed(call, work):
    """A Device being opened is inside the driver (vkCreateDevice) before it is
    live, and vkrope.devices() opens and closes an instance: a fork waits for
    both (the adversaries of #35: the fork returned at once, the other thread
    inside vkCreateDevice; a child forked inside devices() could hang in
    vkCreateInstance on the loader's lock)."""
    code = f"""
import os, threading, time
import vulkan, vkrope
real = vulkan.{call}
inside = threading.Event()
def slow(*a):
    inside.set()
    time.sleep(0.5)
    try:
        return real(*a)
    finally:
        inside.clear()
vulkan.{call} = slow
t = threading.Thread(target={work})
t.start()
inside.wait()
pid = os.fork()
if pid == 0:
    os._exit(0)
print("inside at the fork:", inside.is_set())
os.waitpid(pid, 0)
t.join()
"""
    res = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and "inside at the fork: False" in res.stdout, res.stdout + res.stderr


def test_numpy_ma_is_imported_with_vkrope():
    """numpy imports numpy.ma lazily; vkrope's argument checks touch it, so a first
    call in one thread while another forks left the child numpy's import lock held
    (the second adversary of #35: 39 of 40 children hung)."""
    res = subprocess.run([sys.executable, "-c", "import sys, vkrope; print('numpy.ma' in sys.modules)"],
                         capture_output=True, text=True, timeout=60)
    assert res.stdout.strip() == "True", res.stdout + res.stderr


def test_a_fork_waits_for_a_call_on_a_device_opened_while_it_waited():
    """The fork lists the devices again on each try, under OPENING: a device opened
    while the fork waited for another's call, and busy in a call of its own, is
    waited for too (the second adversary of #35: the fork went ahead mid-call)."""
    code = """
import os, threading, time
import numpy as np, vkrope
a = vkrope.Device()
in_d = threading.Event()
def call_on_a():
    with a._lock:
        time.sleep(0.4)
def open_d_and_call():
    time.sleep(0.1)
    d = vkrope.Device()
    with d._lock:
        in_d.set()
        time.sleep(0.6)
        in_d.clear()
ts = [threading.Thread(target=call_on_a), threading.Thread(target=open_d_and_call)]
for t in ts:
    t.start()
time.sleep(0.05)
pid = os.fork()
if pid == 0:
    os._exit(3 if in_d.is_set() else 0)
_, status = os.waitpid(pid, 0)
for t in ts:
    t.join()
print("child", os.WEXITSTATUS(status))
"""
    res = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and "child 0" in res.stdout, res.stdout + res.stderr


def test_an_array_takes_no_attribute_so_no_cycle_through_it_keeps_its_memory(device):
    """A DeviceArray refuses a user's attribute, as numpy's ndarray (an adversary's: `a.me = a` was taken, and
    the runtime, holding the array's attributes, held it and its memory until the device closed: 2,000 such
    arrays kept 2,000 buffers); a cycle through another object is collected and its memory reused."""
    a = device.asarray(np.ones((4, 8), np.float32))
    for name, value in (("me", a), ("cache", {"a": a})):
        with pytest.raises(AttributeError, match=f"a DeviceArray takes no attribute of its user's \\('{name}'\\)"):
            setattr(a, name, value)
    for name in ("shape", "dtype", "device"):  # (its own, read-only)
        with pytest.raises(AttributeError, match=f"property '{name}' of 'DeviceArray' object has no setter"):
            setattr(a, name, None)
    assert a.shape == (4, 8) and np.array_equal(a.get(), np.ones((4, 8), np.float32))
    gc.collect()
    device.trim()
    before = live_handles().get("VkBuffer", 0)
    for _ in range(200):
        box = {"array": device.asarray(np.ones((64, 32), np.float32))}
        box["self"] = box  # (a cycle through a dict that names the array)
    del box
    gc.collect()
    device.trim()
    assert live_handles().get("VkBuffer", 0) <= before
