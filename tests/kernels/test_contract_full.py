"""The contract beyond ExecuTorch's op: any even C, leading axes, repeat,
exclude_last, positions, complex freqs, inverse, out=, memory layouts and
SAM2's axial frequencies."""

from __future__ import annotations

import numpy as np
import pytest

import vkrope
from oracle import check_apply, check_result, complex_oracle, poisoned_like

STORAGES = ["buffer", "texture3d"]
DTYPES = [np.float32, np.float16]
RNG = np.random.default_rng(42)


def freqs_for(nf, c, dtype=np.float32):
    theta = RNG.uniform(-6, 6, size=(nf, c // 2))
    return np.stack([np.cos(theta), np.sin(theta)], -1).reshape(nf, c).astype(dtype)


@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 2), (3, 6), (2, 7, 10), (2, 3, 9, 6), (2, 2, 2, 5, 4)], ids=str)
def test_even_c_and_leading_axes(shape, dtype, storage):
    x = RNG.standard_normal(shape).astype(dtype)
    check_apply(vkrope.apply, x, freqs_for(shape[-2], shape[-1], dtype), storage=storage)


@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_sam2_memory_keys_repeat_and_exclusion(dtype, storage):
    """7 frames x 256 tokens share one frame's freqs, 4 object pointers pass through."""
    x = RNG.standard_normal((2, 7 * 256 + 4, 64)).astype(dtype)
    f = freqs_for(256, 64, dtype)
    y = check_apply(vkrope.apply, x, f, repeat=7, exclude_last=4, storage=storage)
    assert np.array_equal(y[:, -4:], x[:, -4:])
    # The same mapping through positions gives the same bits.
    pos = np.concatenate([np.tile(np.arange(256), 7), -np.ones(4, int)])
    assert check_apply(vkrope.apply, x, f, positions=pos, storage=storage).tobytes() == y.tobytes()


@pytest.mark.parametrize("storage", STORAGES)
def test_positions_unrotated_tokens_first_and_decode_step(storage):
    # EdgeTAM v2: 4 unrotated tokens at the start of each of 3 frames of 16.
    f = freqs_for(16, 32)
    pos = np.concatenate([np.r_[-np.ones(4, int), np.arange(16)] for _ in range(3)])
    x = RNG.standard_normal((2, pos.size, 32)).astype(np.float32)
    check_apply(vkrope.apply, x, f, positions=pos, storage=storage)
    # An LLM decode step: 3 tokens at arbitrary positions of a 1000-row table.
    table = freqs_for(1000, 32)
    x = RNG.standard_normal((4, 3, 32)).astype(np.float32)
    check_apply(vkrope.apply, x, table, positions=np.array([999, 0, 517], np.int32), storage=storage)


@pytest.mark.parametrize("cdtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("dtype", DTYPES)
def test_complex_freqs(cdtype, dtype):
    theta = RNG.uniform(-3, 3, size=(12, 5))
    fc = np.exp(1j * theta).astype(cdtype)
    x = RNG.standard_normal((3, 12, 10)).astype(dtype)
    y = check_apply(vkrope.apply, x, fc)
    real = np.stack([fc.real, fc.imag], -1).reshape(12, 10).astype(np.float32)
    np.testing.assert_allclose(y.astype(np.float64), vkrope.apply(x, real).astype(np.float64), rtol=0, atol=1e-6)
    check_apply(vkrope.apply, x, fc.reshape(1, 12, 5))  # any shape with Nf * C/2 values


@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_inverse_round_trip(dtype, storage):
    x = RNG.standard_normal((2, 50, 22)).astype(dtype)
    f = freqs_for(50, 22, np.float32)
    y = check_apply(vkrope.apply, x, f, storage=storage)
    back = check_apply(vkrope.apply, y, f, inverse=True, storage=storage)
    tol = 1e-6 if dtype == np.float32 else 4e-3
    np.testing.assert_allclose(back.astype(np.float64), x.astype(np.float64), atol=tol * 4, rtol=tol)


def test_inverse_is_the_gradient():
    """<apply(x), g> == <x, apply(g, inverse=True)> for any g: the inverse is the adjoint."""
    x = RNG.standard_normal((2, 9, 8)).astype(np.float32)
    g = RNG.standard_normal((2, 9, 8)).astype(np.float32)
    f = freqs_for(9, 8)
    lhs = np.vdot(vkrope.apply(x, f).astype(np.float64), g)
    rhs = np.vdot(x.astype(np.float64), vkrope.apply(g, f, inverse=True))
    assert abs(lhs - rhs) < 1e-4 * max(1.0, abs(lhs))


@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_out_in_place(dtype, storage):
    for c in (12, 14):  # aligned and unaligned C
        x = RNG.standard_normal((3, 11, c)).astype(dtype)
        f = freqs_for(11, c, dtype)
        x0 = x.copy()
        expected = check_apply(vkrope.apply, x, f, storage=storage)
        y = vkrope.apply(x, f, out=x, storage=storage)
        assert y is x
        check_result(x, x0, f)
        assert x.tobytes() == expected.tobytes()


def test_out_strided_view_receives_result():
    x = RNG.standard_normal((2, 6, 8)).astype(np.float32)
    f = freqs_for(6, 8)
    big = np.full((2, 12, 16), 7.0, np.float32)
    view = big[:, ::2, ::2]
    view[...] = poisoned_like(view)
    y = vkrope.apply(x, f, out=view)
    assert y is view
    check_result(view, x, f)
    assert (big[:, 1::2] == 7).all() and (big[:, :, 1::2] == 7).all()


@pytest.mark.parametrize("layout", ["fortran", "strided", "negative", "transposed"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_memory_layouts(layout, dtype):
    base = RNG.standard_normal((4, 10, 12)).astype(dtype)
    x = {
        "fortran": np.asfortranarray(base),
        "strided": np.repeat(base, 2, axis=1)[:, ::2],
        "negative": base[::-1, ::-1],
        "transposed": np.ascontiguousarray(base.transpose(1, 0, 2)).transpose(1, 0, 2),
    }[layout]
    f = freqs_for(10, 12, dtype)
    f_layout = np.asfortranarray(f) if layout == "fortran" else f[::-1][::-1]
    y = check_apply(vkrope.apply, x, f_layout)
    assert y.tobytes() == check_apply(vkrope.apply, np.ascontiguousarray(x), np.ascontiguousarray(f)).tobytes()


def sam2_compute_axial_cis(dim, end_x, end_y, theta=10000.0):
    """SAM2's compute_axial_cis, transcribed to numpy complex128."""
    freqs_x = 1.0 / (theta ** (np.arange(0, dim, 4)[: (dim // 4)].astype(np.float64) / dim))
    freqs_y = 1.0 / (theta ** (np.arange(0, dim, 4)[: (dim // 4)].astype(np.float64) / dim))
    t = np.arange(end_x * end_y, dtype=np.float64)
    t_x, t_y = t % end_x, np.floor(t / end_x)
    fx, fy = np.outer(t_x, freqs_x), np.outer(t_y, freqs_y)
    return np.concatenate([np.exp(1j * fx), np.exp(1j * fy)], axis=-1)


@pytest.mark.parametrize("dim,ex,ey", [(256, 64, 64), (256, 16, 16), (64, 8, 4), (4, 3, 1)])
def test_axial_freqs_match_sam2(dim, ex, ey):
    got = vkrope.axial_freqs(dim, ex, ey)
    assert got.shape == (ex * ey, dim) and got.dtype == np.float32
    want = sam2_compute_axial_cis(dim, ex, ey)
    np.testing.assert_array_equal(got, np.stack([want.real, want.imag], -1).reshape(ex * ey, dim).astype(np.float32))
    assert vkrope.axial_freqs(dim, ex, ey, dtype=np.float16).dtype == np.float16
    # Feeding the complex form gives the same rotation.
    x = RNG.standard_normal((1, ex * ey, dim)).astype(np.float32)
    np.testing.assert_allclose(vkrope.apply(x, got), complex_oracle(x, want), atol=1e-5, rtol=1e-5)


def test_axial_freqs_errors():
    with pytest.raises(ValueError, match="dim"):
        vkrope.axial_freqs(6, 4, 4)
    with pytest.raises(ValueError, match="end_x"):
        vkrope.axial_freqs(8, 4.5, 4)  # (4.0 is SAM2's math.sqrt(16): tests/ops/test_porting.py)
    for ex, ey, name in ((0, 3, "end_x"), (4, 0, "end_y")):  # refused as AxialFreqs refuses them
        for make in (vkrope.axial_freqs, vkrope.AxialFreqs):
            with pytest.raises(ValueError, match=f"^{name} must be >= 1; got 0$"):
                make(4, ex, ey)
    with pytest.raises(ValueError, match="theta"):
        vkrope.axial_freqs(8, 4, 4, theta=-1.0)
    # (int4: ml_dtypes' dtype once it is imported, which numpy cannot name before)
    for dtype, got in (("int4", "'?int4'?"), ("foo", "'foo'"), (np.int8, "int8"), (np.complex64, "complex64")):
        with pytest.raises(TypeError, match=f"^dtype must be float32, float16, bfloat16 or float64; got {got}$"):
            vkrope.axial_freqs(8, 4, 4, dtype=dtype)
    assert vkrope.axial_freqs(8, 4, 4, dtype=b"float16").dtype == np.float16
