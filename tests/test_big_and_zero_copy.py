"""Tensors past the storage-buffer range and the allocation limit, the
zero-copy (imported host memory) path and the staging path, all against the
reference."""

from __future__ import annotations

import numpy as np
import pytest

import vkrope
import vkrope.runtime.execute as op
from oracle import check_apply
from vkrope.vk.binding import live_handles

RNG = np.random.default_rng(3)


def unit_freqs(n, c, dtype=np.float32):
    theta = RNG.uniform(-3, 3, (n, c // 2))
    return np.stack([np.cos(theta), np.sin(theta)], -1).reshape(n, c).astype(dtype)


def test_160_mib_tensor_past_the_storage_buffer_range(device):
    """160 MiB > lavapipe's 128 MiB maxStorageBufferRange: split into several bindings."""
    assert device.info["max_storage_buffer_range"] == 128 << 20
    x = RNG.standard_normal((10, 4096, 1024), dtype=np.float32)  # 160 MiB
    f = unit_freqs(4096, 1024)
    check_apply(device.apply, x, f)


def test_single_batch_item_past_the_range(device):
    """One [N, C] row block beyond 128 MiB: freqs (as big as x) split per chunk too."""
    x = RNG.standard_normal((1, 36000, 1024), dtype=np.float32)  # 140.6 MiB
    f = unit_freqs(36000, 1024)
    check_apply(device.apply, x, f)


@pytest.mark.parametrize("storage", ["buffer", "texture3d"])
def test_past_the_allocation_limit_runs_in_blocks(device, monkeypatch, storage):
    """Pretend maxMemoryAllocationSize is 1 MiB: the call runs in row blocks."""
    monkeypatch.setattr(device._ctx.info, "max_memory_allocation_size", 1 << 20)
    x = RNG.standard_normal((3, 700, 256)).astype(np.float32)  # 2.1 MiB, 700 KiB per batch item
    check_apply(device.apply, x, unit_freqs(700, 256), storage=storage)
    y = RNG.standard_normal((1, 5000, 128)).astype(np.float32)  # 2.4 MiB in one batch item: token blocks
    check_apply(device.apply, y, unit_freqs(1000, 128), repeat=5, storage=storage)
    check_apply(device.apply, y, unit_freqs(999, 128), repeat=5, exclude_last=5, inverse=True, storage=storage)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_zero_copy_path(device, dtype, imports):
    """Large C-contiguous arrays are imported, not copied; the imports are
    released after the call; misaligned or strided inputs still work."""
    assert device.info["external_memory_host"] and device.info["unified_memory"]
    x = RNG.standard_normal((4, 2048, 256)).astype(dtype)  # >= 4 MiB
    f = unit_freqs(2048, 256, dtype)
    y = check_apply(device.apply, x, f)
    before = live_handles()
    # x read where it is, result into a fresh array; the imports are gone after
    imports.clear()
    assert device.apply(x, f).tobytes() == y.tobytes()
    assert imports == [x.nbytes, x.nbytes]  # out and x
    assert live_handles() == before
    # in place
    z = x.copy()
    assert device.apply(z, f, out=z) is z and z.tobytes() == y.tobytes()
    # misaligned x (offset by one element) is copied into out first
    raw = np.empty(x.size + 1, dtype)
    shifted = raw[1:].reshape(x.shape)
    shifted[...] = x
    imports.clear()
    assert device.apply(shifted, f).tobytes() == y.tobytes()
    assert imports == [x.nbytes]  # out only; x copied into it
    # read-only x
    ro = x.copy()
    ro.flags.writeable = False
    assert device.apply(ro, f).tobytes() == y.tobytes()
    # out overlapping x but not equal: staging path
    big = np.concatenate([x.reshape(-1), np.zeros(256 * 8, dtype)])
    xin = big[: x.size].reshape(x.shape)
    xout = big[256 * 4 : 256 * 4 + x.size].reshape(x.shape)
    expect = device.apply(xin.copy(), f)
    device.apply(xin, f, out=xout)
    assert xout.tobytes() == expect.tobytes()


def test_staging_path_matches_zero_copy(device, monkeypatch, imports):
    x = RNG.standard_normal((4, 2048, 256)).astype(np.float32)
    f = unit_freqs(2048, 256)
    imported = device.apply(x, f)
    assert imports
    imports.clear()
    monkeypatch.setattr(op, "IMPORT_MIN_BYTES", 1 << 62)
    assert device.apply(x, f).tobytes() == imported.tobytes()
    assert not imports
