"""Signed zeros come out as IEEE arithmetic forms them, in every operator and
dtype: a*b - c*d of zero products keeps the sign the frameworks' own formula
gives (-0 * cos - 0 * sin is -0, as torch and diffusers return it; a padded
or masked token of -0.0 stays -0.0), and the channels a call passes through
or the cache rows it leaves keep their bits. The float64 oracles form the
same signs, so the check is the sign bit of every element."""

from __future__ import annotations

import numpy as np
import pytest

import vkrope
from op_cases import OPS, OpCase, as_numpy

DATA = ("x", "x2", "xq", "xk", "q", "k", "v", "k_cache", "v_cache")  # tensors, not tables or positions


def _signed_zeros(rng: np.random.Generator, a: np.ndarray, dtype: np.dtype) -> np.ndarray:
    return np.where(rng.random(a.shape) < 0.5, -0.0, 0.0).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, vkrope.bfloat16], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("case", OPS, ids=repr)
def test_zero_inputs_keep_the_sign_the_formula_gives(case: OpCase, dtype: type) -> None:
    if not vkrope.default_device().info["signed_zero_inf_nan_preserve_float32"]:
        pytest.skip("the device cannot be asked to keep signed zeros (shaderSignedZeroInfNanPreserveFloat32): "
                    "its default decides, docs/accuracy.md")
    rng = np.random.default_rng(7)
    args = case.make(rng)
    for name in DATA:
        if isinstance(args.get(name), np.ndarray):
            args[name] = _signed_zeros(rng, args[name], np.dtype(dtype))
    dev = vkrope.default_device()
    results = case.call(dev, args)
    want = case.expect({k: v for k, v in args.items() if v is not None})
    for y, ref in zip(results, want):
        y = as_numpy(y)
        assert y.dtype == np.dtype(dtype) and not np.any(y.astype(np.float64))
        wrong = np.signbit(y) != np.signbit(ref)
        assert not wrong.any(), f"{case.name}: {int(wrong.sum())} of {y.size} zeros with the other sign"


@pytest.mark.parametrize("storage", ["buffer", "texture3d"])
@pytest.mark.parametrize("dtype", [np.float32, vkrope.bfloat16], ids=lambda d: np.dtype(d).name)
def test_both_products_past_float32_give_nan(storage, dtype):
    """x*c - y*s where both products overflow float32 (cos / sin tables of 2): the plain formula's NaN (inf -
    inf), not the infinity of one product, though the exact difference is 0; the sum is +inf."""
    x = np.full((1, 1, 1, 2), 3e38, np.float32).astype(dtype)
    table = np.full((1, 1), 2.0, np.float32)
    y = vkrope.rotary_embedding(x, table, table, np.zeros((1, 1), np.int64), interleaved=True, storage=storage)
    assert np.isnan(y[..., 0]).all() and (y[..., 1] == np.inf).all(), y
