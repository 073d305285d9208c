"""float64 oracle of the decode step (`vkrope.rope_and_cache`), written from
the frameworks' formulas (Hugging Face's `apply_rotary_pos_emb` and
`rotate_half`, Qwen3 / Gemma 3 RMSNorm, vLLM's slot mapping), sharing no
code with vkrope.

    q_rot, k_cache_after, v_cache_after, written = decode_step(...)

Caches are numpy arrays here (their contents before the step); rows the
step does not write come back as they were, `written` marks those it does
(a bool per cache row of D values).
"""

from __future__ import annotations

import numpy as np

from oracle import BF16, bf16_round, bf16_ulp, bf16_values


def rms_norm(x: np.ndarray, w: np.ndarray, eps: float, plus_one: bool) -> np.ndarray:
    """x / sqrt(mean(x^2) + eps) * w (Qwen3, OLMo-2) or * (1 + w) (Gemma 3),
    over the last axis, in float64."""
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64) + (1.0 if plus_one else 0.0)
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rotate(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, interleaved: bool) -> np.ndarray:
    """x [B, H, S, D] rotated on its first rot = 2 * cos.shape[-1] channels by
    per-token cos / sin [B, S, rot/2]: pairs (2i, 2i+1) or, rotate-half,
    x * cat(cos, cos) + rotate_half(x) * cat(sin, sin); the rest passes."""
    x = np.asarray(x, np.float64)
    half = cos.shape[-1]
    c = np.asarray(cos, np.float64)[:, None]  # [B, 1, S, rot/2]
    s = np.asarray(sin, np.float64)[:, None]
    y = x.copy()
    if interleaved:
        c2, s2 = np.repeat(c, 2, -1), np.repeat(s, 2, -1)
        xr = x[..., :2 * half]
        partner = np.empty_like(xr)
        partner[..., 0::2], partner[..., 1::2] = -xr[..., 1::2], xr[..., 0::2]
        y[..., :2 * half] = xr * c2 + partner * s2
    else:
        c2, s2 = np.concatenate([c, c], -1), np.concatenate([s, s], -1)
        xr = x[..., :2 * half]
        rotated_half = np.concatenate([-xr[..., half:], xr[..., :half]], -1)
        y[..., :2 * half] = xr * c2 + rotated_half * s2
    return y


def decode_step(q, k, v, k_cache, v_cache, cos_table, sin_table, position_ids, *, slots=None, interleaved=False,
                q_norm=None, k_norm=None, plus_one=False, eps=1e-6, cache_position=None):
    """The step on numpy arguments; cos_table / sin_table [max_pos, rot/2]
    read at position_ids [B, S]. Contiguous caches [B, Hk, S_max, D] at
    the positions or at cache_position [B, S] (-1: skipped), or paged
    [blocks, block_size, Hk, D] with slots [B, S] (-1: skipped)."""
    q64, k64 = np.asarray(q, np.float64), np.asarray(k, np.float64)
    b, hk, s, d = k64.shape
    pos = np.asarray(position_ids)
    cos = np.asarray(cos_table, np.float64)[pos]  # [B, S, rot/2]
    sin = np.asarray(sin_table, np.float64)[pos]
    if q_norm is not None:
        q64, k64 = rms_norm(q64, q_norm, eps, plus_one), rms_norm(k64, k_norm, eps, plus_one)
    q_rot, k_rot = rotate(q64, cos, sin, interleaved), rotate(k64, cos, sin, interleaved)
    kc = np.array(k_cache, np.float64)
    vc = np.array(v_cache, np.float64)
    written = np.zeros(kc.shape[:-1], bool)
    for bi in range(b):
        for si in range(s):
            for h in range(hk):
                if slots is None:
                    row = int(pos[bi, si] if cache_position is None else cache_position[bi, si])
                    if row < 0:
                        continue
                    where = (bi, h, row)
                else:
                    slot = int(slots[bi, si])
                    if slot < 0:
                        continue
                    where = (slot // kc.shape[1], slot % kc.shape[1], h)
                assert not written[where], "a cache row written twice"
                kc[where] = k_rot[bi, h, si]
                vc[where] = np.asarray(v[bi, h, si], np.float64)
                written[where] = True
    return q_rot, kc, vc, written


# --- what the cache tests share: poisoned caches, their values, the tolerance of one rounding
POISON_BITS = {4: 0x7FC0DEAD, 2: 0x7E5A}  # quiet NaNs with payloads (float32; float16 and bfloat16 words)


def poisoned(shape, dtype) -> np.ndarray:
    dt = np.dtype(dtype)
    words = np.full(shape, POISON_BITS[dt.itemsize], np.uint32 if dt.itemsize == 4 else np.uint16)
    return words.view(dt)


def values(a) -> np.ndarray:
    a = np.asarray(a)
    return bf16_values(a) if a.dtype == BF16 else a.astype(np.float64)


def tolerance(ref: np.ndarray, dtype, scale: np.ndarray) -> np.ndarray:
    """Rounded once to `dtype` after float32 work: an ulp of the dtype (half
    for bfloat16) plus 2^-20 of the terms (norm: inversesqrt's ulps)."""
    dt = np.dtype(dtype)
    if dt == np.float32:
        ulp = np.zeros_like(ref)
    elif dt == BF16:
        ulp = 0.5 * bf16_ulp(bf16_round(ref))
    else:
        with np.errstate(over="ignore"):
            ulp = np.spacing(np.abs(ref).astype(np.float16)).astype(np.float64)
    return ulp + 2.0**-20 * scale + 1e-30


def assert_close(y, ref, dtype, what):
    y = values(y)
    scale = np.broadcast_to(np.abs(ref).max(axis=-1, keepdims=True) * 2 + 1e-3, ref.shape)
    assert np.isfinite(y).all(), f"{what}: NaN or Inf (unwritten?)"
    err = np.abs(y - ref)
    tol = tolerance(ref, dtype, scale)
    assert (err <= tol).all(), f"{what}: {int((err > tol).sum())} off, worst {err.max():.3g}"
