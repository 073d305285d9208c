"""ExecuTorch's own test shapes for et_vk.apply_rotary_emb_interleaved, in
both dtypes, with 2D [N, C] and 4D [1, N, C/2, 2] freqs, on both storages."""

from __future__ import annotations

import numpy as np
import pytest

import vkrope
from oracle import check_apply, complex_oracle, oracle

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


REFERENCE_CASES = [
    # (x shape, x dtype, freqs shape, freqs dtype, keywords)
    ((2, 7, 12), np.float32, (7, 12), np.float32, {}),
    ((2, 7, 12), np.float16, (1, 7, 6, 2), np.float16, {"inverse": True}),
    ((3, 2, 11, 6), np.float32, (4, 3, 2), np.float64, {"repeat": 2, "exclude_last": 3}),
    ((2, 9, 10), np.float32, (3, 5), np.complex64, {"repeat": 3, "inverse": True}),
    ((9, 10), np.float16, (1, 4, 5), np.complex128, {"positions": np.array([3, -1, 0, 2, 2, 1, -1, 0, 3])}),
    ((2, 5, 8), np.float32, (2, 8), np.float32, {"positions": np.array([-1, -1, 1, 0, 1]), "inverse": True}),
]


@pytest.mark.parametrize("xs,xd,fs,fd,kw", REFERENCE_CASES, ids=[str(i) for i in range(len(REFERENCE_CASES))])
def test_reference_matches_the_oracle(xs, xd, fs, fd, kw):
    """vkrope.apply_reference is public API: it must agree with the tests'
    own oracle (and, on finite input, with SAM2's complex formulation)."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal(xs).astype(xd)
    if np.dtype(fd).kind == "c":
        f = np.exp(1j * rng.uniform(-3, 3, fs)).astype(fd)
    else:
        f = rng.standard_normal(fs).astype(fd)
    x = np.asfortranarray(x)  # any layout
    ref = vkrope.apply_reference(x, f, **kw)
    assert ref.dtype == np.float64 and ref.shape == x.shape
    np.testing.assert_allclose(ref, oracle(x, f, **kw), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ref, complex_oracle(x, f, **kw), rtol=1e-12, atol=1e-12)
    out = np.full(x.shape, np.nan, x.dtype)
    assert vkrope.apply_reference(x, f, out=out, **kw) is out
    np.testing.assert_array_equal(out, oracle(x, f, **kw).astype(x.dtype))
