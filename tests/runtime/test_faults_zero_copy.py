"""Issue #10: faults on the zero-copy path raise their typed errors (they
used to be swallowed and the call retried on the copy path); the next call,
on a fresh default device, is right."""

from __future__ import annotations

import numpy as np
import pytest

import vkrope
from oracle import oracle
from vkrope.vk import binding as b

RNG = np.random.default_rng(21)


def big():
    """A C-contiguous float32 call of 4 MiB: imported, not staged."""
    x = RNG.standard_normal((1, 4096, 256)).astype(np.float32)
    theta = RNG.uniform(-3, 3, (4096, 128))
    return x, np.stack([np.cos(theta), np.sin(theta)], -1).reshape(4096, 256).astype(np.float32)


@pytest.mark.parametrize("call,fault,error", [
    ("vkQueueSubmit", lambda: b.vk().VkErrorDeviceLost(), vkrope.DeviceLostError),
    ("vkWaitForFences", lambda: b.vk().VkErrorDeviceLost(), vkrope.DeviceLostError),
    ("vkWaitForFences", lambda: b.vk().VkTimeout(), vkrope.DeviceTimeoutError),
    ("vkAllocateMemory", lambda: b.vk().VkErrorDeviceLost(), vkrope.DeviceLostError),
])
def test_faults_on_the_zero_copy_path_raise(imports, call, fault, error, blocking_waits):
    x, f = big()
    first = vkrope.default_device()
    vkrope.apply(x, f)  # warm: work buffers and pipelines exist, so the fault hits the call itself
    imports.clear()
    b.inject_fault(call, fault)
    with pytest.raises(error):
        vkrope.apply(x, f)
    # (the warm call made every work buffer: the only allocation left is the import's)
    assert imports or call == "vkAllocateMemory", "the call did not take the zero-copy path"
    assert first.closed  # a lost or hung device is closed
    y = vkrope.apply(x, f, out=np.full_like(x, np.nan))  # a fresh default device
    assert vkrope.default_device() is not first
    assert np.abs(y - oracle(x, f)).max() < 1e-5


def test_a_refused_import_falls_back_to_the_copy_path(imports):
    """Only the driver refusing the memory may fall back."""
    x, f = big()
    vkrope.apply(x, f)
    imports.clear()
    b.inject_fault("vkAllocateMemory", lambda: b.vk().VkErrorInvalidExternalHandle())
    y = vkrope.apply(x, f, out=np.full_like(x, np.nan))
    assert np.abs(y - oracle(x, f)).max() < 1e-5
