"""Property tests: random shapes, dtypes, freqs forms, keywords and storages
against the tests' own float64 oracle, outputs poisoned before every run."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import vkrope
from oracle import check_apply, oracle

DTYPES = st.sampled_from([np.float32, np.float16])


def random_freqs(rng, nf, c, dtype, form):
    theta = rng.uniform(-8, 8, size=(nf, c // 2))
    if form == "complex":
        return np.exp(1j * theta).astype(np.complex64)
    f = np.stack([np.cos(theta), np.sin(theta)], axis=-1).astype(dtype)
    return {"2d": f.reshape(nf, c), "3d": f.reshape(nf, c // 2, 2), "4d": f.reshape(1, nf, c // 2, 2)}[form]


@settings(max_examples=60)
@given(
    b=st.integers(1, 4), n=st.integers(1, 300), c4=st.integers(1, 128), dtype=DTYPES,
    freqs_dtype=DTYPES, form=st.sampled_from(["2d", "3d", "4d"]), seed=st.integers(0, 2**32 - 1),
)
def test_foundation_shapes(b, n, c4, dtype, freqs_dtype, form, seed):
    """Issue 2's space: [B, N, C], C % 4 == 0 up to 512, buffer storage."""
    rng = np.random.default_rng(seed)
    c = 4 * c4
    x = (rng.standard_normal((b, n, c)) * 4).astype(dtype)
    f = random_freqs(rng, n, c, freqs_dtype, form)
    check_apply(vkrope.apply, x, f, storage="buffer")


@st.composite
def problems(draw):
    """Any even C, any number of leading axes, and every keyword."""
    lead = tuple(draw(st.lists(st.integers(1, 3), min_size=0, max_size=2)))
    c = 2 * draw(st.integers(1, 70))
    mode = draw(st.sampled_from(["plain", "repeat", "positions"]))
    kw = {}
    if mode == "plain":
        nf = draw(st.integers(1, 120))
        n = nf
    elif mode == "repeat":
        nf = draw(st.integers(0, 40))
        repeat = draw(st.integers(1, 5))
        excl = draw(st.integers(0, 6))
        n = repeat * nf + excl
        if n == 0:
            nf, n = 1, repeat + excl
        kw.update(repeat=repeat, exclude_last=excl)
    else:
        nf = draw(st.integers(1, 60))
        n = draw(st.integers(1, 120))
        kw["positions"] = np.array(draw(st.lists(st.integers(-1, nf - 1), min_size=n, max_size=n)), dtype=np.int64)
    kw["inverse"] = draw(st.booleans())
    return lead + (n, c), nf, kw


@settings(max_examples=80)
@given(prob=problems(), dtype=DTYPES, freqs_dtype=st.sampled_from([np.float32, np.float16, "complex"]),
       storage=st.sampled_from(["buffer", "texture3d", "auto"]), seed=st.integers(0, 2**32 - 1))
def test_full_contract(prob, dtype, freqs_dtype, storage, seed):
    shape, nf, kw = prob
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    form = "complex" if freqs_dtype == "complex" else "2d"
    f = random_freqs(rng, nf, shape[-1], np.float32 if form == "complex" else freqs_dtype, form)
    check_apply(vkrope.apply, x, f, storage=storage, **kw)
    # The public reference agrees with the tests' oracle.
    np.testing.assert_allclose(vkrope.apply_reference(x, f, **kw), oracle(x, f, **kw), rtol=1e-12, atol=1e-12)


@settings(max_examples=30)
@given(prob=problems(), dtype=DTYPES, storage=st.sampled_from(["buffer", "texture3d"]), seed=st.integers(0, 2**32 - 1))
def test_buffer_and_texture_agree_bitwise(prob, dtype, storage, seed):
    shape, nf, kw = prob
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(dtype)
    f = random_freqs(rng, nf, shape[-1], dtype, "2d")
    a = check_apply(vkrope.apply, x, f, storage="buffer", **kw)
    t = check_apply(vkrope.apply, x, f, storage="texture3d", **kw)
    assert a.tobytes() == t.tobytes()


@settings(max_examples=30)
@given(prob=problems(), dtype=DTYPES, seed=st.integers(0, 2**32 - 1))
def test_inverse_undoes_forward(prob, dtype, seed):
    shape, nf, kw = prob
    kw.pop("inverse")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(dtype)
    f = random_freqs(rng, nf, shape[-1], np.float32, "2d")
    y = check_apply(vkrope.apply, x, f, **kw)
    back = check_apply(vkrope.apply, y, f, inverse=True, **kw)
    tol = 1e-5 if dtype == np.float32 else 2e-3
    np.testing.assert_allclose(back.astype(np.float64), x.astype(np.float64), atol=tol * 4, rtol=tol)
