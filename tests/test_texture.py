"""texture3d storage: same results as buffers, bit for bit, for every shape
the buffer path takes, including shapes past lavapipe's 4096 image limit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vkrope
from oracle import check_apply
from vkrope.runtime.layout import image_extent


def make(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 2).astype(dtype)
    theta = rng.uniform(-4, 4, size=(shape[-2], shape[-1] // 2))
    f = np.stack([np.cos(theta), np.sin(theta)], -1).reshape(shape[-2], shape[-1]).astype(dtype)
    return x, f


@settings(max_examples=40)
@given(b=st.integers(1, 4), n=st.integers(1, 6000), c4=st.integers(1, 16),
       dtype=st.sampled_from([np.float32, np.float16]), seed=st.integers(0, 2**32 - 1))
def test_texture_equals_buffer_bitwise(b, n, c4, dtype, seed):
    x, f = make((b, n, 4 * c4), dtype, seed)
    t = check_apply(vkrope.apply, x, f, storage="texture3d")
    u = check_apply(vkrope.apply, x, f, storage="buffer")
    assert t.tobytes() == u.tobytes()


@pytest.mark.parametrize("shape", [(1, 4097, 8), (1, 6000, 16), (2, 6000, 12), (5000, 3, 8), (1, 3, 16392)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_past_the_image_limit(shape, dtype, device):
    assert device.info["max_image_dimension_3d"] == 4096  # lavapipe: these shapes need folding
    x, f = make(shape, dtype, 1)
    t = check_apply(vkrope.apply, x, f, storage="texture3d")
    assert t.tobytes() == vkrope.apply(x, f, storage="buffer").tobytes()


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
