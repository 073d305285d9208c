"""A Llama-3.1-shaped attention block in numpy whose RoPE comes from a
config.json (tests/data/hf_configs/llama-3.1-8b.json: llama3 scaling,
theta 500000, head 128), run as a prefill of a prompt placed deep in the
context and then as a decode loop, one token a step, its keys kept in a
numpy cache. `vkrope.from_hf` reads the config; `vkrope.apply_rotary_pos_emb`
rotates q and k as transformers does, with cos / sin computed in the shader.

Checks: the decode loop's outputs equal the prefill's rows (causal
attention, the same positions), and both match a float64 numpy forward pass
whose RoPE is written here from the Llama 3.1 formula (not vkrope's code).

    python examples/hf_config_attention.py
"""

from __future__ import annotations

import math
import os

import numpy as np

import vkrope

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = os.path.join(HERE, "..", "tests", "data", "hf_configs", "llama-3.1-8b.json")
DIM, HQ, HK, HEAD = 256, 4, 2, 128  # a narrow block with Llama 3.1 8B's head dim, grouped-query heads
START, PROMPT, NEW = 100000, 12, 6  # positions START .. START + PROMPT + NEW - 1, past the 8192 original context


def llama31_inv_freq() -> np.ndarray:
    """The Llama 3.1 frequencies from the published formula, in float64."""
    inv = 1.0 / 500000.0 ** (np.arange(0, HEAD, 2) / HEAD)
    factor, lo, hi, old = 8.0, 1.0, 4.0, 8192
    wl = 2 * math.pi / inv
    smooth = np.clip((old / wl - lo) / (hi - lo), 0, 1)
    return np.where(wl < old / hi, inv, np.where(wl > old / lo, inv / factor, (1 - smooth) * inv / factor + smooth * inv))


def attend(q: np.ndarray, k: np.ndarray, v: np.ndarray, first: int) -> np.ndarray:
    """q [HQ, S, HEAD] over k, v [HK, T, HEAD]; query i sits at key first + i (causal)."""
    k, v = np.repeat(k, HQ // HK, 0), np.repeat(v, HQ // HK, 0)
    s = q @ k.transpose(0, 2, 1) / np.sqrt(HEAD)
    mask = np.arange(k.shape[1])[None, :] > (first + np.arange(q.shape[1]))[:, None]
    s = np.where(mask, -np.inf, s)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


def main() -> None:
    rope = vkrope.from_hf(CONFIG)
    print(f"RoPE from {os.path.basename(CONFIG)}: {rope.rope_type}, head {rope.head_dim}, theta {rope.theta:g}")
    rng = np.random.default_rng(0)
    wq, wk, wv = ((rng.standard_normal((DIM, n * HEAD)) / np.sqrt(DIM)).astype(np.float32) for n in (HQ, HK, HK))
    hidden = rng.standard_normal((PROMPT + NEW, DIM)).astype(np.float32)

    def project(h: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        s = h.shape[0]
        return ((h @ wq).reshape(s, HQ, HEAD).transpose(1, 0, 2)[None], (h @ wk).reshape(s, HK, HEAD).transpose(1, 0, 2)[None],
                (h @ wv).reshape(s, HK, HEAD).transpose(1, 0, 2)[None])

    # prefill: every token at once
    n = PROMPT + NEW
    q, k, v = project(hidden)
    pos = (START + np.arange(n))[None]
    qr, kr = vkrope.apply_rotary_pos_emb(q, k, rope, pos)
    prefill = attend(qr[0], kr[0], v[0], 0)

    # decode: one token a step, keys and values appended to a cache
    k_cache, v_cache, steps = np.zeros((HK, 0, HEAD), np.float32), np.zeros((HK, 0, HEAD), np.float32), []
    for t in range(n):
        q1, k1, v1 = project(hidden[t:t + 1])
        q1, k1 = vkrope.apply_rotary_pos_emb(q1, k1, rope, np.array([[START + t]]))
        k_cache, v_cache = np.concatenate([k_cache, k1[0]], 1), np.concatenate([v_cache, v1[0]], 1)
        steps.append(attend(q1[0], k_cache, v_cache, t))
    decode = np.concatenate(steps, 1)
    gap = float(np.abs(decode - prefill).max())
    print(f"prefill vs decode loop: max |difference| {gap:.2e}")
    assert gap < 1e-5, gap

    # float64 reference: RoPE from the formula, rotate-half
    ang = pos[0][:, None] * llama31_inv_freq()[None]
    cos, sin = np.concatenate([np.cos(ang)] * 2, -1), np.concatenate([np.sin(ang)] * 2, -1)

    def rot(x: np.ndarray) -> np.ndarray:
        x = x.astype(np.float64)
        half = np.concatenate([-x[..., HEAD // 2:], x[..., :HEAD // 2]], -1)
        return x * cos + half * sin

    ref = attend(rot(q[0]), rot(k[0]), v[0].astype(np.float64), 0)
    # transformers' float32 angle (its float32 inverse frequencies, as the model computes them: vkrope's
    # rope.inv_freq, proven against transformers' own in the tests), the product rounded, against float64
    f32 = pos[0][:, None].astype(np.float32) * rope.inv_freq(START + n)[None]
    print(f"float32 angles at positions {START}-{START + n - 1}: up to {np.abs(f32 - ang).max():.2g} rad off")
    err = float(np.abs(prefill - ref).max())
    print(f"against float64 numpy with the published Llama 3.1 formula: max |error| {err:.2e} "
          f"(positions up to {START + n - 1}: the float32 angle, as transformers forms it, drifts there)")
    assert err < 1e-2, err
    exact = vkrope.from_hf(CONFIG, angle="exact")
    qe, ke = vkrope.apply_rotary_pos_emb(q, k, exact, pos)
    err_exact = float(np.abs(attend(qe[0], ke[0], v[0], 0) - ref).max())
    print(f"the same with angle='exact': max |error| {err_exact:.2e}")
    assert err_exact < 1e-5 and err_exact < err / 50, (err_exact, err)
    print("OK")


if __name__ == "__main__":
    main()
