"""A float64 oracle for N-D axial RoPE, written from the formulas of
diffusers' `get_1d_rotary_pos_embed` / `apply_rotary_emb` (and the
rotate-half variant), sharing no code with vkrope (argument handling
included): axis a owns axes[a] consecutive channels, its pair k turns by
ids[..., a] * theta_a ** (-2k / axes[a]); channels past sum(axes) pass
through."""

from __future__ import annotations

import numpy as np


def inverse_frequencies(axes, thetas, angle: str) -> np.ndarray:
    """[sum(axes) / 2]: float64 ("exact"), or float32 as diffusers' float32
    path computes them (the power of the float32 operands rounded once)."""
    parts = []
    for d, t in zip(axes, thetas):
        if angle == "exact":
            parts.append(1.0 / np.power(float(t), np.arange(0, d, 2, dtype=np.float64) / d))
        else:
            e = np.arange(0, d, 2, dtype=np.float32) / np.float32(d)
            p = np.power(np.float64(np.float32(t)), e.astype(np.float64)).astype(np.float32)
            parts.append(np.float32(1.0) / p)
    return np.concatenate(parts)


def angles(ids, axes, thetas, angle: str) -> np.ndarray:
    """[..., sum(axes) / 2] angles of ids [..., n_axes]: the float64
    product, or the float32 one (float32 id times float32 frequency)."""
    ids = np.asarray(ids, np.float64)
    which = np.concatenate([np.full(d // 2, a) for a, d in enumerate(axes)])
    f = inverse_frequencies(axes, thetas, angle)
    cols = ids[..., which]
    if angle == "exact":
        return cols * f
    return (cols.astype(np.float32) * f).astype(np.float32).astype(np.float64)


def nd_rope(x, axes, thetas, ids, *, interleaved=True, angle="exact", token_axis=-2, inverse=False) -> np.ndarray:
    """float64 result of rotating x ([..., N, C] or, token_axis -3,
    [..., N, H, C]) by ids [N, n_axes] or [B, N, n_axes] (B: x's first axis)."""
    x64 = np.asarray(x).astype(np.float32).astype(np.float64)  # (bfloat16 through float32: exact)
    a = angles(ids, axes, thetas, angle)  # [N, R/2] or [B, N, R/2]
    if inverse:
        a = -a
    if token_axis == -3:
        a = a[..., :, None, :]  # over the heads
    lead = x64.ndim - a.ndim
    if np.ndim(ids) == 3:  # per item of x's first axis
        a = a.reshape(a.shape[:1] + (1,) * lead + a.shape[1:])
    c, s = np.cos(a), np.sin(a)
    r = sum(axes)
    out = x64.copy()
    if interleaved:
        u, v = x64[..., 0:r:2], x64[..., 1:r:2]
        out[..., 0:r:2] = u * c - v * s
        out[..., 1:r:2] = u * s + v * c
    else:
        h = r // 2
        u, v = x64[..., :h], x64[..., h:r]
        out[..., :h] = u * c - v * s
        out[..., h:r] = v * c + u * s
    return out


def pair_scale(x, axes, *, interleaved=True) -> np.ndarray:
    """Per element, |u| + |v| of its pair (what a rotation's rounding scales
    with); |x| for channels that pass through."""
    x64 = np.abs(np.asarray(x).astype(np.float32).astype(np.float64))
    r = sum(axes)
    out = x64.copy()
    if interleaved:
        s = x64[..., 0:r:2] + x64[..., 1:r:2]
        out[..., 0:r:2] = s
        out[..., 1:r:2] = s
    else:
        h = r // 2
        s = x64[..., :h] + x64[..., h:r]
        out[..., :h] = s
        out[..., h:r] = s
    return out
