"""Tensors past the storage-buffer range and the allocation limit (both
forced small, so any device crosses them with small arrays), the zero-copy
(imported host memory) path and the staging path, all against the oracle."""

from __future__ import annotations

import numpy as np
import pytest

import vkrope.runtime.execute as op
from oracle import aligned_copy, check_apply, check_result, poisoned_like
from vkrope.vk.binding import live_handles

RNG = np.random.default_rng(3)
MIB = 1 << 20


def unit_freqs(n, c, dtype=np.float32):
    theta = RNG.uniform(-3, 3, (n, c // 2))
    return np.stack([np.cos(theta), np.sin(theta)], -1).reshape(n, c).astype(dtype)


def check_aligned(dev, x, f, **kw):
    """check_apply with a page-aligned poisoned output (importable)."""
    out = aligned_copy(poisoned_like(x))
    assert dev.apply(x, f, out=out, **kw) is out
    return check_result(out, x, f, **kw)


@pytest.mark.parametrize("storage", ["buffer", "texture3d"])
@pytest.mark.parametrize("shape,dtype", [((10, 40, 1024), np.float32), ((12, 50, 1022), np.float16),
                                         ((5, 60, 1026), np.float32)], ids=["f32-aligned", "f16-unaligned", "f32-unaligned"])
def test_tensor_past_the_storage_buffer_range(make_device, shape, dtype, storage):
    """More than maxStorageBufferRange (forced to 1 MiB): several bindings and dispatches."""
    dev = make_device(max_storage_buffer_range=MIB)
    x = RNG.standard_normal(shape).astype(dtype)
    assert x.nbytes > MIB
    check_apply(dev.apply, x, unit_freqs(shape[1], shape[2], dtype), storage=storage)
    check_apply(dev.apply, x, unit_freqs(shape[1], shape[2], dtype), inverse=True, storage=storage)


@pytest.mark.parametrize("storage", ["buffer", "texture3d"])
@pytest.mark.parametrize("c", [1024, 1022])
def test_single_batch_item_past_the_range(make_device, c, storage):
    """One [N, C] row block beyond the range: freqs (as big as x) split per chunk too."""
    dev = make_device(max_storage_buffer_range=MIB)
    x = RNG.standard_normal((1, 360, c), dtype=np.float32)  # 1.4 MiB
    f = unit_freqs(360, c)
    assert x.nbytes > MIB and f.nbytes > MIB
    check_apply(dev.apply, x, f, storage=storage)
    pos = RNG.integers(-1, 360, 360)
    check_apply(dev.apply, x, f, positions=pos, storage=storage)
    # The dispatches overlap where a binding starts aligned down (C % 4 == 2) or
    # binds the whole image (texture3d): the derived barriers must order them,
    # or synchronization validation fails the test.


@pytest.mark.parametrize("storage", ["buffer", "texture3d"])
def test_past_the_allocation_limit_runs_in_blocks(make_device, storage):
    """maxMemoryAllocationSize forced to 1 MiB: the call runs in row blocks."""
    dev = make_device(max_memory_allocation_size=MIB)
    x = RNG.standard_normal((3, 700, 256)).astype(np.float32)  # 2.1 MiB, 700 KiB per batch item
    check_apply(dev.apply, x, unit_freqs(700, 256), storage=storage)
    y = RNG.standard_normal((1, 5000, 128)).astype(np.float32)  # 2.4 MiB in one batch item: token blocks
    check_apply(dev.apply, y, unit_freqs(1000, 128), repeat=5, storage=storage)
    check_apply(dev.apply, y, unit_freqs(999, 128), repeat=5, exclude_last=5, inverse=True, storage=storage)
    z = RNG.standard_normal((2, 3000, 126)).astype(np.float16)  # unaligned C, float16
    check_apply(dev.apply, z, unit_freqs(1000, 126, np.float16), repeat=3, storage=storage)


@pytest.fixture(params=["native", "discrete"])
def importing(request, make_device):
    """A device with VK_EXT_external_memory_host, as it is and acting as a
    discrete GPU; storage-buffer offsets aligned to at least 256 bytes so
    that an array shifted by one element can never be imported."""
    dev = make_device(unified=False if request.param == "discrete" else None,
                      min_storage_buffer_offset_alignment=256)
    if not dev.info["external_memory_host"]:
        pytest.skip("device lacks VK_EXT_external_memory_host")
    return dev


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_zero_copy_path(importing, dtype, imports):
    """Large C-contiguous arrays are imported, not copied; the imports are
    released after the call; misaligned or strided inputs still work."""
    device = importing
    x = aligned_copy(RNG.standard_normal((4, 2048, 256)).astype(dtype))  # >= 4 MiB
    f = unit_freqs(2048, 256, dtype)
    assert x.nbytes >= op.IMPORT_MIN_BYTES
    imports.clear()
    y = check_aligned(device, x, f)
    assert imports == [x.nbytes, x.nbytes]  # out and x, read and written where they are
    before = live_handles()
    assert check_aligned(device, x, f).tobytes() == y.tobytes()
    assert live_handles() == before  # the imports are gone after the call
    assert check_apply(device.apply, x, f).tobytes() == y.tobytes()  # any output
    # in place
    z = aligned_copy(x)
    imports.clear()
    assert device.apply(z, f, out=z) is z and z.tobytes() == y.tobytes()
    assert imports == [x.nbytes]
    # misaligned x (offset by one element) is copied into out first
    raw = aligned_copy(np.zeros(x.size + 1, dtype))
    shifted = raw[1:].reshape(x.shape)
    shifted[...] = x
    imports.clear()
    out = aligned_copy(poisoned_like(x))
    assert device.apply(shifted, f, out=out) is out and out.tobytes() == y.tobytes()
    assert imports == [x.nbytes]  # out only; x copied into it
    # read-only x
    ro = aligned_copy(x)
    ro.flags.writeable = False
    out = aligned_copy(poisoned_like(x))
    assert device.apply(ro, f, out=out).tobytes() == y.tobytes()
    # out overlapping x but not equal
    big = np.concatenate([x.reshape(-1), np.zeros(256 * 8, dtype)])
    xin = big[: x.size].reshape(x.shape)
    xout = big[256 * 4 : 256 * 4 + x.size].reshape(x.shape)
    assert device.apply(xin, f, out=xout) is xout  # (out overlaps x: it cannot be poisoned)
    assert xout.tobytes() == y.tobytes()


def test_staging_path_matches_zero_copy(importing, monkeypatch, imports):
    device = importing
    x = aligned_copy(RNG.standard_normal((4, 2048, 254)).astype(np.float32))  # unaligned C
    f = unit_freqs(2048, 254)
    imported = check_aligned(device, x, f)
    assert imports
    imports.clear()
    monkeypatch.setattr(op, "IMPORT_MIN_BYTES", 1 << 62)
    assert check_aligned(device, x, f).tobytes() == imported.tobytes()
    assert not imports
