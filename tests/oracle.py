"""Test helpers: poisoned outputs, an independent complex-number oracle and
the accuracy rules of the contract."""

from __future__ import annotations

import numpy as np

POISON = {np.dtype(np.float32): np.float32(np.nan), np.dtype(np.float16): np.float16(np.nan)}


def poisoned_like(x: np.ndarray) -> np.ndarray:
    """An output array of x's shape and dtype full of NaN (and a distinctive
    payload pattern where it matters), so unwritten elements show."""
    out = np.empty_like(x, order="C")
    out.fill(POISON[out.dtype])
    return out


def full_freqs(x, freqs, *, inverse=False, repeat=1, exclude_last=0, positions=None) -> np.ndarray:
    """Each token's complex factor [N, C/2] (1 for pass-through tokens), built
    with numpy indexing the way SAM2 materialises repeat / exclusion."""
    n, c = x.shape[-2], x.shape[-1]
    if np.iscomplexobj(freqs):
        fc = np.asarray(freqs, dtype=np.complex128).reshape(-1, c // 2)
    else:
        fc = np.ascontiguousarray(np.asarray(freqs, dtype=np.float64)).reshape(-1, c).view(np.complex128)
    if inverse:
        fc = np.conj(fc)
    if positions is None:
        idx = np.tile(np.arange(fc.shape[0]), repeat)
        return np.concatenate([fc[idx], np.ones((exclude_last, c // 2), np.complex128)]).reshape(n, c // 2)
    positions = np.asarray(positions)
    picked = fc[np.maximum(positions, 0)] if fc.shape[0] else np.ones((n, c // 2), np.complex128)
    return np.where((positions >= 0)[:, None], picked, 1)


def complex_oracle(x, freqs, **kw) -> np.ndarray:
    """The operator as SAM2 writes it, in complex128: x.view(complex) * freqs.
    Independent of vkrope.apply_reference."""
    x64 = np.ascontiguousarray(np.asarray(x, dtype=np.float64))
    out = x64.view(np.complex128) * full_freqs(x, freqs, **kw)
    return out.view(np.float64).reshape(x64.shape)


def pair_scale(x, full: np.ndarray) -> np.ndarray:
    """Per-element scale |x_re|*|c| + |x_im|*|s| (and |x_re|*|s| + |x_im|*|c|),
    the magnitude that rounding errors are measured against."""
    x64 = np.abs(np.asarray(x, dtype=np.float64))
    re, im = x64[..., 0::2], x64[..., 1::2]
    c, s = np.abs(full.real), np.abs(full.imag)
    out = np.empty_like(x64)
    out[..., 0::2] = re * c + im * s
    out[..., 1::2] = re * s + im * c
    return out


def check_close(y: np.ndarray, ref: np.ndarray, scale: np.ndarray, x_dtype, freqs_half: bool) -> None:
    """The contract's accuracy rules.

    float32: |y - ref| < 1e-5 * scale (relative error per element scale).
    float16: within one float16 ulp of ref rounded to float16; with float32
    freqs the products are inexact in float32, so where the two products
    cancel the bound is 2**-22 * scale (documented in the README).
    Non-finite references must be matched exactly (NaN for NaN).
    """
    y64 = y.astype(np.float64)
    ref_r = ref.astype(x_dtype)
    finite = np.isfinite(ref_r)
    bad_nf = ~finite & ~((np.isnan(ref_r) & np.isnan(y)) | (ref_r == y))
    assert not bad_nf.any(), f"non-finite mismatch at {np.argwhere(bad_nf)[:5].tolist()}"
    assert np.isfinite(y64[finite]).all(), "unexpected NaN/Inf (unwritten element?)"
    err = np.abs(y64[finite] - ref[finite])
    sc = scale[finite]
    if np.dtype(x_dtype) == np.float32:
        tol = 1e-5 * sc + 1e-30
    else:
        ulp = np.spacing(np.abs(ref_r[finite])).astype(np.float64)
        tol = ulp if freqs_half else np.maximum(ulp, 2.0**-22 * sc)
    worst = np.argmax(err - tol) if err.size else 0
    assert (err <= tol).all(), f"error {err[worst]:.3g} > tolerance {tol[worst]:.3g} (ref {ref[finite][worst]!r})"


def check_apply(apply, x, freqs, **kw) -> np.ndarray:
    """Run `apply(x, freqs, out=<poisoned>, **kw)` and check it against the
    float64 reference under the contract's accuracy rules; returns the result."""
    import vkrope

    out = poisoned_like(x)
    y = apply(x, freqs, out=out, **kw)
    assert y is out
    assert y.dtype == x.dtype and y.shape == x.shape
    kw.pop("storage", None)
    ref = vkrope.apply_reference(x, freqs, **kw)
    scale = pair_scale(x, full_freqs(x, freqs, **kw))
    freqs_half = np.asarray(freqs).dtype == np.float16
    check_close(y, ref, scale, x.dtype, freqs_half)
    return y
