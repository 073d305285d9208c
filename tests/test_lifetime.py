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
        "import numpy as np, vkrope\n"
        "from vkrope.vk.instance import validation_messages\n"
        "import atexit\n"
        "vkrope.apply(np.ones((1, 2, 4), np.float32), np.ones((2, 4), np.float32))\n"
        "def check():\n"
        "    import sys\n"
        "    m = validation_messages()\n"
        "    print('MESSAGES', len(m), m[:3])\n"
        "atexit.register(check)\n"  # runs after vkrope's own atexit (LIFO)
    )
    env = dict(os.environ, VKROPE_VALIDATION="1")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr
    assert "MESSAGES 0" in res.stdout, res.stdout + res.stderr
    assert res.stderr == "", res.stderr
