"""texture3d storage: the oracle's results, and the same bits as buffers,
for every shape the buffer path takes, including shapes past the device's
image limit (forced down to 64 so that any device folds them)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vkrope
from forced import force_limits
from oracle import check_apply, check_result, poisoned_like
from vkrope.runtime.layout import image_extent

MAX_DIM = 64  # the forced maxImageDimension3D


def make(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 2).astype(dtype)
    theta = rng.uniform(-4, 4, size=(shape[-2], shape[-1] // 2))
    f = np.stack([np.cos(theta), np.sin(theta)], -1).reshape(shape[-2], shape[-1]).astype(dtype)
    return x, f


@pytest.fixture(scope="module")
def folding():
    """A device whose images are at most 64 texels on each side."""
    dev = force_limits(vkrope.Device(), max_image_dimension_3d=MAX_DIM)
    assert dev.info["max_image_dimension_3d"] == MAX_DIM
    yield dev
    dev.close()


@settings(max_examples=40)
@given(b=st.integers(1, 4), n=st.integers(1, 6000), c4=st.integers(1, 16),
       dtype=st.sampled_from([np.float32, np.float16]), seed=st.integers(0, 2**32 - 1))
def test_texture_equals_buffer_bitwise(b, n, c4, dtype, seed):
    x, f = make((b, n, 4 * c4), dtype, seed)
    t = check_apply(vkrope.apply, x, f, storage="texture3d")
    u = check_apply(vkrope.apply, x, f, storage="buffer")
    assert t.tobytes() == u.tobytes()


@settings(max_examples=25)
@given(b=st.integers(1, 3), n=st.integers(1, 300), half=st.integers(1, 150),
       dtype=st.sampled_from([np.float32, np.float16]), seed=st.integers(0, 2**32 - 1))
def test_folded_texture_equals_buffer_bitwise(folding, b, n, half, dtype, seed):
    """Any even C (aligned or not, rows wider than the image) on the folding device."""
    x, f = make((b, n, 2 * half), dtype, seed)
    t = check_apply(folding.apply, x, f, storage="texture3d")
    u = check_apply(folding.apply, x, f, storage="buffer")
    assert t.tobytes() == u.tobytes()


PAST_THE_LIMIT = [(1, 65, 8), (1, 150, 16), (2, 150, 12), (2, 150, 14), (80, 3, 8), (80, 3, 6),
                  (1, 3, 4 * MAX_DIM + 8), (2, 3, 4 * MAX_DIM + 6), (1, MAX_DIM * MAX_DIM, 4)]


@pytest.mark.parametrize("shape", PAST_THE_LIMIT, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_past_the_image_limit(shape, dtype, folding):
    """Each shape needs folding (rows over height and depth, or a row wider
    than the image continuing on the next image row) at the forced limit."""
    width = (shape[-1] // 2 + 1) // 2
    assert max(width, shape[-2], int(np.prod(shape[:-2]))) > MAX_DIM
    x, f = make(shape, dtype, 1)
    t = check_apply(folding.apply, x, f, storage="texture3d")
    assert t.tobytes() == check_apply(folding.apply, x, f, storage="buffer").tobytes()
    # Resident texture arrays fold the same way.
    xd = folding.asarray(x, storage="texture3d")
    assert xd.get().tobytes() == x.tobytes()
    out = folding.asarray(poisoned_like(x), storage="texture3d")
    assert folding.apply(xd, f, out=out, inverse=True) is out
    check_result(out, x, f, inverse=True)


def test_more_rows_than_one_image_holds(folding):
    """Past maxImageDimension3D^2 image rows texture3d refuses; buffers work."""
    x, f = make((1, MAX_DIM * MAX_DIM + 1, 4), np.float32, 2)
    with pytest.raises(ValueError, match="maxImageDimension3D"):
        folding.apply(x, f, storage="texture3d")
    check_apply(folding.apply, x, f, storage="buffer")


def test_image_extent_rules():
    assert image_extent(64, 256, 1, 4096) == (64, 256, 1)  # natural (C/4, N, B)
    assert image_extent(2, 6000, 2, 4096) == (2, 4096, 3)  # 12000 rows folded
    assert image_extent(4098, 3, 1, 4096) == (4096, 6, 1)  # wide rows continue on a second image row
    with pytest.raises(ValueError, match="maxImageDimension3D"):
        image_extent(1, 4096 * 4096 + 1, 1, 4096)


def test_unknown_storage():
    x, f = make((1, 2, 4), np.float32, 0)
    with pytest.raises(ValueError, match="storage"):
        vkrope.apply(x, f, storage="image")


def test_an_image_too_large_names_its_argument(make_device):
    """A texture3d array past maxImageDimension3D^2 rows is refused naming `a` (asarray) or `x` (an op),
    before any allocation; the device stays usable."""
    dev = make_device(max_image_dimension_3d=4)
    big = np.zeros((1, 17, 2), np.float32)
    with pytest.raises(ValueError, match=r"^a: 1 x 17 rows of 1 texels .* use storage='buffer'$"):
        dev.asarray(big, storage="texture3d")
    with pytest.raises(ValueError, match=r"^x: 1 x 17 rows"):
        dev.apply_nd(big, vkrope.NdFreqs((2,)), np.zeros((17, 1)), storage="texture3d")
    assert dev.apply_nd(big[:, :16], vkrope.NdFreqs((2,)), np.zeros((16, 1)), storage="texture3d").shape == (1, 16, 2)


def test_numpy_texture_calls_of_two_alternating_shapes_replay(make_device):
    """One work image per role made calls alternating two shapes (SAM2's queries, then its memory keys) re-make
    it every call, and every recording went with it (an unrelated buffer call's too). Two are kept per role: the
    loop records once per shape and replays; a third shape gives the oldest back, the results right throughout."""
    dev = make_device()
    shapes = [(1, 16, 32), (1, 32, 32)]
    calls = [make(sh, np.float32, i) for i, sh in enumerate(shapes)]
    xs, fs = make((1, 8, 32), np.float32, 9)
    for x, f in calls:
        check_apply(lambda *a, **k: dev.apply(*a, storage="texture3d", **k), x, f)
    check_apply(dev.apply, xs, fs)
    made = dev.stats()["recordings"]
    for _ in range(4):
        for x, f in calls:
            check_apply(lambda *a, **k: dev.apply(*a, storage="texture3d", **k), x, f)
        check_apply(dev.apply, xs, fs)
    assert dev.stats()["recordings"] == made
    third = make((1, 48, 32), np.float32, 5)
    for x, f in [third, *calls, third]:
        check_apply(lambda *a, **k: dev.apply(*a, storage="texture3d", **k), x, f)


def test_forcing_the_image_limit_under_live_texture_arrays_is_refused(make_device):
    """A texture3d DeviceArray's image is laid out under the limit of its making; after _force_limits changed
    max_image_dimension_3d, ops read it by the new one (wrong values, a bare AssertionError on a copy). The hook
    refuses while such arrays live, and takes the change once they are released."""
    dev = make_device()
    x, f = make((1, 300, 64), np.float32, 3)
    dx = dev.asarray(x, storage="texture3d")
    with pytest.raises(ValueError, match="max_image_dimension_3d: this device has live texture3d DeviceArrays"):
        force_limits(dev, max_image_dimension_3d=MAX_DIM)
    check_result(dev.apply(dx, f), x, f)  # (unchanged, and usable)
    force_limits(dev, max_storage_buffer_range=1 << 20)  # (another limit: taken)
    dx.release()
    force_limits(dev, max_image_dimension_3d=MAX_DIM)
    check_result(dev.apply(dev.asarray(x, storage="texture3d"), f), x, f)


def test_idle_work_images_give_way_at_the_allocation_count(make_device):
    """Two work images kept per role held allocations the device's count needed: three alternating texture
    shapes ran at a count of 5 with one image per role and needed 7 with two. At the count every work image the
    call in progress does not bind goes first (a role's image it replaces, another slot's): alternating shapes
    run at 3 (the arena and one image each for x and out), an apply_many's second slot gives way to a later
    call, and a call's own images stay (one given back under it: validation errors, a crash)."""
    calls = [make(sh, np.float32, i) for i, sh in enumerate([(1, 16, 32), (1, 32, 32), (1, 48, 32)])]
    for count in (3, 4):
        dev = make_device(max_memory_allocation_count=count)
        for _ in range(2):
            for x, f in calls:
                check_apply(lambda *a, **k: dev.apply(*a, storage="texture3d", **k), x, f)
    dev = make_device(max_memory_allocation_count=5)
    ys = dev.apply_many([(x, f, {"storage": "texture3d"}) for x, f in calls[:2]])
    for y, (x, f) in zip(ys, calls):
        check_result(y, x, f)
    check_apply(lambda *a, **k: dev.apply(*a, storage="texture3d", **k), *calls[2])
