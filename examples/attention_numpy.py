"""A numpy multi-head attention block whose queries and keys get SAM2's 2-D
axial rotary embedding from vkrope (as in SAM2's RoPEAttention).

    python examples/attention_numpy.py
"""

from __future__ import annotations

import numpy as np

import vkrope


def softmax(a: np.ndarray) -> np.ndarray:
    a = a - a.max(axis=-1, keepdims=True)
    e = np.exp(a)
    return e / e.sum(axis=-1, keepdims=True)


def attention(x: np.ndarray, w_q, w_k, w_v, w_o, heads: int, freqs: np.ndarray, rope) -> np.ndarray:
    """x [B, N, D] -> [B, N, D]; `rope(t, freqs)` rotates [B, H, N, D/H]."""
    b, n, d = x.shape
    hd = d // heads

    def split(t: np.ndarray) -> np.ndarray:  # [B, N, D] -> [B, H, N, hd]
        return np.ascontiguousarray(t.reshape(b, n, heads, hd).transpose(0, 2, 1, 3))

    q, k, v = split(x @ w_q), split(x @ w_k), split(x @ w_v)
    q, k = rope(q, freqs), rope(k, freqs)  # freqs broadcast over B and H
    att = softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(hd))
    out = (att @ v).transpose(0, 2, 1, 3).reshape(b, n, d)
    return out @ w_o


def main() -> None:
    rng = np.random.default_rng(0)
    b, side, dim, heads = 2, 16, 256, 2  # 16x16 tokens, 2 heads of 128 channels
    n = side * side
    x = rng.standard_normal((b, n, dim)).astype(np.float32)
    w = [(rng.standard_normal((dim, dim)) / np.sqrt(dim)).astype(np.float32) for _ in range(4)]
    freqs = vkrope.axial_freqs(dim // heads, side, side)  # [256 tokens, 128 channels]

    y = attention(x, *w, heads=heads, freqs=freqs, rope=vkrope.apply)
    def rope64(t: np.ndarray, f: np.ndarray) -> np.ndarray:  # the same rotation as complex128 numpy
        fc = f.astype(np.float64).view(np.complex128)
        return (np.ascontiguousarray(t).view(np.complex128) * fc).view(np.float64)

    ref = attention(x.astype(np.float64), *(m.astype(np.float64) for m in w), heads=heads, freqs=freqs,
                    rope=rope64)
    err = float(np.abs(y - ref).max())
    print(f"attention output {y.shape}, max |error| against float64 reference: {err:.2e}")
    assert err < 1e-4, err
    print("OK")


if __name__ == "__main__":
    main()
