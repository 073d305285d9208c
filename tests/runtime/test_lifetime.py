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


def test_forked_child_gets_its_own_default_device():
    """A child forked after the parent used vkrope makes its own device and
    leaves the parent's alone; both get correct results."""
    import multiprocessing as mp

    x = RNG.standard_normal((2, 5, 12)).astype(np.float32)
    vkrope.apply(x, F)  # the parent's default device exists now
    parent = vkrope.default_device()
    ctx = mp.get_context("fork")
    with ctx.Pool(1) as pool:
        y = pool.apply_async(_child_apply, (x, F)).get(timeout=120)  # a hang fails, not stalls
    np.testing.assert_array_equal(y, vkrope.apply(x, F))
    assert vkrope.default_device() is parent and not parent.closed


def _child_apply(x, f):
    return vkrope.apply(x, f)


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
