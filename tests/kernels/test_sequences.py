"""Call sequences on the same arrays: forward, inverse, positions, forward
again (and a few more), each result against the oracle. Everything that
does not depend on the data is cached (plans, recordings per call shape),
so a cache key that forgets the inverse or positions flag replays the
previous call's recording and gives the previous call's answer."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import vkrope
from oracle import check_apply, check_result, poisoned_like

RNG = np.random.default_rng(17)
STORAGES = ["buffer", "texture3d"]

SMALL = {"aligned": (2, 24, 16), "unaligned": (2, 24, 14), "one-token": (3, 1, 8)}
# >= 4 MiB in float32: the numpy path imports these (where the device can) instead of staging them.
LARGE = {"large-aligned": (4, 2048, 128), "large-unaligned": (2, 2048, 258)}


def problem(shape, dtype=np.float32):
    n, c = shape[-2], shape[-1]
    x = (RNG.standard_normal(shape) * 2).astype(dtype)
    theta = RNG.uniform(-3, 3, (n, c // 2))
    f = np.stack([np.cos(theta), np.sin(theta)], -1).reshape(n, c).astype(np.float32)
    if n == 1:
        p, p2 = np.array([0]), np.array([-1])
    else:
        p, p2 = RNG.integers(-1, n, n), RNG.permutation(n)
    steps = [{}, {"inverse": True}, {"positions": p}, {},
             {"positions": p2, "inverse": True}, {"inverse": True}, {"positions": p}]
    return x, f, steps


@pytest.fixture(scope="module", params=["native", "discrete"])
def dev(request):
    """A device of this module, as it is or acting as a discrete GPU."""
    d = vkrope.Device()
    if request.param == "discrete":
        d._force_limits(unified=False)
    yield d
    d.close()


@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("shape", list(SMALL.values()), ids=list(SMALL))
@pytest.mark.usefixtures("frozen_gc")
def test_resident_sequence(dev, shape, storage):
    x, f, steps = problem(shape)
    a = dev.asarray(x, storage=storage)
    # Fresh output arrays (a dropped result's buffer is reused by the next call).
    for kw in steps:
        check_result(dev.apply(a, f, **kw).get(), x, f, **kw)
        gc.collect()
    # Poisoned output arrays owned by the test.
    for kw in steps:
        out = dev.asarray(poisoned_like(x), storage=storage)
        assert dev.apply(a, f, out=out, **kw) is out
        check_result(out, x, f, **kw)
        del out
        gc.collect()
    # In place on one array: the same input and output resources every call.
    b = dev.asarray(x, storage=storage)
    for kw in steps:
        before = b.get()
        assert dev.apply(b, f, out=b, **kw) is b
        check_result(b, before, f, **kw)
    assert a.get().tobytes() == x.tobytes()


@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("shape", list(SMALL.values()) + list(LARGE.values()), ids=list(SMALL) + list(LARGE))
def test_numpy_sequence(dev, shape, storage):
    x, f, steps = problem(shape)
    large = x.nbytes >= 4 << 20
    for kw in steps[:4] if large else steps:
        check_apply(dev.apply, x, f, storage=storage, **kw)  # poisoned output each time
    if not large:
        for kw in steps:  # fresh outputs
            check_result(dev.apply(x, f, storage=storage, **kw), x, f, **kw)


@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.usefixtures("frozen_gc")
def test_resident_sequence_float16(dev, storage):
    x, f, steps = problem((2, 24, 14), np.float16)
    a = dev.asarray(x, storage=storage)
    for kw in steps:
        check_result(dev.apply(a, f, **kw).get(), x, f, **kw)
        gc.collect()


@pytest.mark.parametrize("storage", ["buffer", "texture3d"])
def test_same_shape_different_repeat(device, storage):
    """Calls that share x's shape and the rotated-token count but not the
    freqs rows (repeat 1 over 8 rows, then repeat 2 over 4, then 4 over 2):
    each plan is its own (a memo key without Nf would replay the first)."""
    from oracle import oracle

    rng = np.random.default_rng(31)
    x = rng.standard_normal((2, 8, 12)).astype(np.float32)
    for rows, repeat in ((8, 1), (4, 2), (2, 4), (8, 1)):
        theta = rng.uniform(-3, 3, (rows, 6))
        f = np.stack([np.cos(theta), np.sin(theta)], -1).reshape(rows, 12).astype(np.float32)
        out = np.full_like(x, np.nan)
        device.apply(x, f, repeat=repeat, out=out, storage=storage)
        assert np.abs(out - oracle(x, f, repeat=repeat)).max() < 1e-5


@pytest.mark.parametrize("storage", ["buffer", "texture3d"])
def test_same_shape_same_rows_different_exclusion(device, storage):
    """Same x shape and freqs rows, different rotated-token counts (repeat 2
    with 2 excluded, then repeat 1 with 6 excluded, ...): a memo key without
    the rotated count would replay the first plan."""
    from oracle import oracle

    rng = np.random.default_rng(32)
    x = rng.standard_normal((2, 10, 8)).astype(np.float32)
    theta = rng.uniform(-3, 3, (4, 4))
    f = np.stack([np.cos(theta), np.sin(theta)], -1).reshape(4, 8).astype(np.float32)
    for repeat, excl in ((2, 2), (1, 6), (2, 2), (1, 6)):
        out = np.full_like(x, np.nan)
        device.apply(x, f, repeat=repeat, exclude_last=excl, out=out, storage=storage)
        assert np.abs(out - oracle(x, f, repeat=repeat, exclude_last=excl)).max() < 1e-5
