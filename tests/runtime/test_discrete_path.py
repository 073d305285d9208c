"""The discrete-GPU code path (device-local buffers, staging copies, imported
host memory as copy source and destination), exercised on any device by
forcing `unified=False`. Results must match the oracle and equal the
unified path's bit for bit, with the validation layer silent."""

from __future__ import annotations

import numpy as np
import pytest

import vkrope
from oracle import aligned_copy, check_apply, check_result, poisoned_like

RNG = np.random.default_rng(5)


@pytest.fixture
def discrete(make_device):
    dev = make_device(unified=False)
    assert dev.info["unified_memory"] is False
    return dev


def unit(n, c, dtype=np.float32):
    theta = RNG.uniform(-3, 3, (n, c // 2))
    return np.stack([np.cos(theta), np.sin(theta)], -1).reshape(n, c).astype(dtype)


@pytest.mark.parametrize("c", [24, 22])
@pytest.mark.parametrize("storage", ["buffer", "texture3d"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_small_calls_through_staging(discrete, dtype, storage, c):
    x = RNG.standard_normal((3, 50, c)).astype(dtype)
    f = unit(50, c, dtype)
    y = check_apply(discrete.apply, x, f, storage=storage, inverse=True)
    assert y.tobytes() == check_apply(vkrope.apply, x, f, storage=storage, inverse=True).tobytes()
    check_apply(discrete.apply, x, f[:10], repeat=5, storage=storage)


@pytest.mark.parametrize("c", [256, 254])
def test_large_call_with_imported_memory_as_copy_source(discrete, imports, c):
    if not discrete.info["external_memory_host"]:
        pytest.skip("device lacks VK_EXT_external_memory_host")
    x = aligned_copy(RNG.standard_normal((4, 2048, c)).astype(np.float32))
    f = unit(2048, c)
    y = aligned_copy(poisoned_like(x))  # page-aligned: importable on any device
    assert discrete.apply(x, f, out=y) is y
    assert imports == [x.nbytes, x.nbytes], "the import path did not run"
    check_result(y, x, f)
    assert y.tobytes() == check_apply(vkrope.apply, x, f).tobytes()


@pytest.mark.parametrize("c", [16, 14])
@pytest.mark.parametrize("storage", ["buffer", "texture3d"])
def test_resident_arrays_through_staging(discrete, storage, c):
    x = RNG.standard_normal((2, 40, c)).astype(np.float32)
    f = unit(40, c)
    xd = discrete.asarray(x, storage=storage)
    assert xd.get().tobytes() == x.tobytes()
    od = discrete.asarray(poisoned_like(x), storage=storage)
    z = poisoned_like(x)
    yd, z2 = discrete.apply_many([(xd, f, {"out": od}), (x, f, {"inverse": True, "out": z})])
    assert yd is od and z2 is z
    y = check_result(yd, x, f)
    check_result(z, x, f, inverse=True)
    assert y.tobytes() == vkrope.apply(x, f).tobytes()
    assert z.tobytes() == vkrope.apply(x, f, inverse=True).tobytes()
