"""ExecuTorch's own test shapes for et_vk.apply_rotary_emb_interleaved, in
both dtypes, with 2D [N, C] and 4D [1, N, C/2, 2] freqs, on both storages."""

from __future__ import annotations

import numpy as np
import pytest

import vkrope
from oracle import check_apply, complex_oracle

SHAPES = [(1, 256, 256), (1, 1792, 256), (1, 4, 8), (2, 3, 8), (1, 5, 4), (1, 2, 16)]


def make(shape, dtype, freqs_form, seed=0):
    rng = np.random.default_rng(seed)
    b, n, c = shape
    x = rng.standard_normal(shape).astype(dtype)
    theta = rng.uniform(-np.pi, np.pi, size=(n, c // 2))
    f = np.stack([np.cos(theta), np.sin(theta)], axis=-1).astype(dtype)  # [N, C/2, 2]
    f = f.reshape(n, c) if freqs_form == "2d" else f.reshape(1, n, c // 2, 2)
    return x, f


@pytest.mark.parametrize("storage", ["buffer", "texture3d"])
@pytest.mark.parametrize("freqs_form", ["2d", "4d"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_executorch_shapes(shape, dtype, freqs_form, storage):
    x, f = make(shape, dtype, freqs_form)
    y = check_apply(vkrope.apply, x, f, storage=storage)
    # ExecuTorch's own tolerance, against the complex formulation.
    tol = 1e-4 if dtype == np.float32 else 5e-3
    np.testing.assert_allclose(y.astype(np.float64), complex_oracle(x, f), atol=tol, rtol=tol)


def test_returns_new_array_and_leaves_inputs_alone():
    x, f = make((2, 3, 8), np.float32, "2d")
    x0, f0 = x.copy(), f.copy()
    y = vkrope.apply(x, f)
    assert y is not x and not np.shares_memory(y, x)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(f, f0)


def test_default_device_is_reused():
    assert vkrope.default_device() is vkrope.default_device()


def test_reference_matches_complex_formulation():
    x, f = make((2, 7, 12), np.float32, "2d")
    np.testing.assert_allclose(vkrope.apply_reference(x, f), complex_oracle(x, f), rtol=1e-12, atol=1e-12)
