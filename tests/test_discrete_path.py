"""The discrete-GPU code path (device-local buffers, staging copies, imported
host memory as copy source and destination), exercised on lavapipe by
turning off its unified-memory shortcut. Results must equal the unified
path's bit for bit, with the validation layer silent."""

from __future__ import annotations

import numpy as np
import pytest

import vkrope
from oracle import check_apply

RNG = np.random.default_rng(5)


@pytest.fixture
def discrete():
    dev = vkrope.Device()
    dev._force_limits(unified=False)
    yield dev
    dev.close()


def unit(n, c, dtype=np.float32):
    theta = RNG.uniform(-3, 3, (n, c // 2))
    return np.stack([np.cos(theta), np.sin(theta)], -1).reshape(n, c).astype(dtype)


@pytest.mark.parametrize("storage", ["buffer", "texture3d"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_small_calls_through_staging(discrete, dtype, storage):
    x = RNG.standard_normal((3, 50, 22)).astype(dtype)
    f = unit(50, 22, dtype)
    y = check_apply(discrete.apply, x, f, storage=storage, inverse=True)
    assert y.tobytes() == vkrope.apply(x, f, storage=storage, inverse=True).tobytes()


def test_large_call_with_imported_memory_as_copy_source(discrete, imports):
    x = RNG.standard_normal((4, 2048, 256)).astype(np.float32)
    f = unit(2048, 256)
    y = check_apply(discrete.apply, x, f)
    assert imports, "the import path did not run"
    assert y.tobytes() == vkrope.apply(x, f).tobytes()


@pytest.mark.parametrize("storage", ["buffer", "texture3d"])
def test_resident_arrays_through_staging(discrete, storage):
    x = RNG.standard_normal((2, 40, 16)).astype(np.float32)
    f = unit(40, 16)
    xd = discrete.asarray(x, storage=storage)
    assert xd.get().tobytes() == x.tobytes()
    yd, z = discrete.apply_many([(xd, f), (x, f, {"inverse": True})])
    assert yd.get().tobytes() == vkrope.apply(x, f).tobytes()
    assert z.tobytes() == vkrope.apply(x, f, inverse=True).tobytes()
