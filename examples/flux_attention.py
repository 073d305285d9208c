"""A Flux-shaped joint attention block in numpy, its RoPE on the Vulkan
device: text tokens (ids 0) and the tokens of a latent image grid (ids
(0, row, col)), plus a Flux Kontext reference image (ids offset by 1 on
the first axis), rotated per axis (16 / 56 / 56 channels, theta 1e4) by
`vkrope.apply_nd`, then scaled dot-product attention over all of them.
The same block with RoPE done the way diffusers does it (the (cos, sin)
table of `NdFreqs.cos_sin`, `x * cos + rotate(x) * sin` in float64) must
give the same output.

    python examples/flux_attention.py
"""

from __future__ import annotations

import numpy as np

import vkrope

HEADS, HEAD_DIM, TEXT, H, W = 4, 128, 12, 8, 10
AXES = (16, 56, 56)


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Softmax attention of q, k, v [B, H, S, D] (no mask: Flux attends jointly)."""
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    s = np.exp(s - s.max(-1, keepdims=True))
    return (s / s.sum(-1, keepdims=True)) @ v


def rope_like_diffusers(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """diffusers' apply_rotary_emb (use_real, interleaved pairs) in float64."""
    x = x.astype(np.float64)
    rotated = np.stack([-x[..., 1::2], x[..., 0::2]], -1).reshape(x.shape)
    return x * cos + rotated * sin


def main() -> None:
    rng = np.random.default_rng(0)
    spec = vkrope.NdFreqs(AXES, 10000.0)
    ids = np.concatenate([
        np.zeros((TEXT, 3)),                          # text: every axis 0
        vkrope.grid_ids((1, H, W)),                   # the latent image: (0, row, col)
        vkrope.grid_ids((1, H, W), offset=(1, 0, 0)),  # Kontext's reference image: first axis 1
    ])
    n = len(ids)
    hidden = rng.standard_normal((1, n, HEADS * HEAD_DIM)).astype(np.float32)
    wq, wk, wv = (rng.standard_normal((HEADS * HEAD_DIM, HEADS * HEAD_DIM)).astype(np.float32)
                  / np.sqrt(HEADS * HEAD_DIM) for _ in range(3))

    def heads(t: np.ndarray) -> np.ndarray:  # [1, S, H*D] -> [1, H, S, D]
        return t.reshape(1, n, HEADS, HEAD_DIM).transpose(0, 2, 1, 3).astype(np.float32)

    q, k, v = heads(hidden @ wq), heads(hidden @ wk), heads(hidden @ wv)
    with vkrope.Device() as dev:
        q_rot = dev.apply_nd(q, spec, ids)
        k_rot = dev.apply_nd(k, spec, ids)
        print(f"{dev.name}: q, k [1, {HEADS}, {n}, {HEAD_DIM}] rotated by {len(AXES)}-axis ids "
              f"({TEXT} text + 2 x {H}x{W} image tokens)")
    out = attention(q_rot.astype(np.float64), k_rot.astype(np.float64), v.astype(np.float64))

    cos, sin = spec.cos_sin(ids)
    want = attention(rope_like_diffusers(q, cos, sin), rope_like_diffusers(k, cos, sin), v.astype(np.float64))
    err = float(np.abs(out - want).max())
    rot_err = float(np.abs(q_rot - rope_like_diffusers(q, cos, sin)).max() / np.abs(q).max())
    print(f"max |RoPE difference| / max |q|: {rot_err:.2e}; attention output max difference: {err:.2e}")
    assert rot_err < 1e-6 and err < 1e-5, (rot_err, err)
    # The text tokens (all ids 0) are not rotated at all.
    np.testing.assert_array_equal(q_rot[:, :, :TEXT], q[:, :, :TEXT])
    print("OK")


if __name__ == "__main__":
    main()
