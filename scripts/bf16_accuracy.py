#!/usr/bin/env python3
"""bfloat16 (or float16) RoPE accuracy: vkrope against the frameworks' path
in that dtype, both measured against float64, for a Llama 3.1 8B attention
shape (head_dim 128, rope_theta 500000, llama3 scaling: factor 8, low / high
frequency factors 1 / 4, original context 8192) at positions up to 131072.

    python scripts/bf16_accuracy.py [--tokens 4096] [--heads 8] [--dtype float16]

(Below, "bfloat16" is the dtype asked for: float16's path is the same with
float16 roundings, torch's float16 elementwise ops computing in float32 too.)

Both start from the same bfloat16 q and the same float32 cos / sin (the
float64 angle rounded once to float32, as transformers' rotary module
computes them in float32). Then:

  vkrope        the table kernel: q widened to float32, rotated in float32,
                rounded once to bfloat16 (`vkrope.rotary_embedding`);
  vkrope spec   `vkrope.from_hf` of the same config and
                `vkrope.apply_rotary_pos_emb`: cos / sin computed in the
                shader (within 2 float32 ulps), the rest as above; against
                the float64 rotation by the float64 cos / sin of the same
                float32 angle (its own inverse frequencies times the
                position, rounded once to float32);
  transformers  its bfloat16 path, `(q * cos) + (rotate_half(q) * sin)` with
                cos / sin cast to bfloat16 (`cos.to(x.dtype)`) and each
                product and the sum rounded to bfloat16 (torch's bfloat16
                elementwise ops compute in float32 and round the result),
                emulated here in numpy with ml_dtypes' rounding: torch is not
                needed.

Errors are in bfloat16 ulps of the float64 result (the exact rotation of the
same bfloat16 q by the same float32 cos / sin), per band of positions.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import ml_dtypes
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import vkrope  # noqa: E402

DTYPES = {"bfloat16": (np.dtype(ml_dtypes.bfloat16), 8, -133), "float16": (np.dtype(np.float16), 11, -24)}
DT, BITS, MIN_EXP = DTYPES["bfloat16"]  # (the dtype, its significant bits, its smallest spacing's exponent)


def llama3_inv_freq(dim=128, base=500000.0, factor=8.0, low=1.0, high=4.0, original=8192) -> np.ndarray:
    """transformers' `_compute_llama3_parameters`, in float64."""
    inv = 1.0 / base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    wavelen = 2 * math.pi / inv
    low_wavelen, high_wavelen = original / low, original / high
    scaled = np.where(wavelen > low_wavelen, inv / factor, inv)
    smooth = (original / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
    return np.where(medium, smoothed, scaled)


def bf16(v) -> np.ndarray:
    """`v` rounded once to the dtype asked for."""
    return np.asarray(v).astype(DT)


def ulp_of(v: np.ndarray) -> np.ndarray:
    """The dtype's spacing at |v| (bfloat16: 8 significant bits, 2^-133 below 2^-126; float16: 11, 2^-24)."""
    a = np.abs(v)
    _, e = np.frexp(np.where(a > 0, a, 1.0))
    return np.exp2(np.maximum(e - BITS, MIN_EXP).astype(np.float64))


def rotate_half(x: np.ndarray) -> np.ndarray:
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], -1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=4096, help="positions sampled over [0, 131072)")
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="bfloat16", help="q's dtype (default bfloat16)")
    args = ap.parse_args()
    global DT, BITS, MIN_EXP
    DT, BITS, MIN_EXP = DTYPES[args.dtype]
    rng = np.random.default_rng(0)
    dim, s, h = 128, args.tokens, args.heads
    positions = np.sort(rng.choice(131072, s, replace=False))
    positions[:4] = [0, 1, 2, 3]
    inv = llama3_inv_freq().astype(np.float32)  # transformers keeps inv_freq in float32
    angles = positions[:, None].astype(np.float32) * inv[None, :]  # float32 product, as torch's matmul
    cos32 = np.cos(angles.astype(np.float64)).astype(np.float32)
    sin32 = np.sin(angles.astype(np.float64)).astype(np.float32)
    q = bf16(rng.standard_normal((1, h, s, dim)) * 2.0)

    # exact: the same bfloat16 q rotated by the same float32 cos / sin, in float64
    q64 = q.astype(np.float64)
    c64 = np.concatenate([cos32, cos32], -1).astype(np.float64)
    s64 = np.concatenate([sin32, sin32], -1).astype(np.float64)
    exact = q64 * c64 + rotate_half(q64) * s64

    pos_ids = np.arange(s)[None]
    got = vkrope.rotary_embedding(q, cos32, sin32, pos_ids).astype(np.float64)

    rope = vkrope.from_hf({"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
                           "max_position_embeddings": 131072, "rope_theta": 500000.0,
                           "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                            "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}})
    own = positions[:, None].astype(np.float32) * rope.freqs(positions[None]).inv_freq32[None, :]
    c_own = np.concatenate([np.cos(own.astype(np.float64))] * 2, -1)
    s_own = np.concatenate([np.sin(own.astype(np.float64))] * 2, -1)
    exact_spec = q64 * c_own + rotate_half(q64) * s_own
    spec_got = vkrope.apply_rotary_pos_emb(q, q[:, :1], rope, positions[None])[0].astype(np.float64)

    cb, sb = bf16(np.concatenate([cos32, cos32], -1)), bf16(np.concatenate([sin32, sin32], -1))
    hf = bf16(bf16(q.astype(np.float32) * cb.astype(np.float32)).astype(np.float32)
              + bf16(rotate_half(q).astype(np.float32) * sb.astype(np.float32)).astype(np.float32))
    hf = hf.astype(np.float64)

    print(f"Llama 3.1 8B RoPE (head_dim 128, theta 500000, llama3 x8), q {args.dtype} [1, {h}, {s}, 128], "
          f"{s} positions in [0, 131072); device: {vkrope.default_device().name}")
    print(f"{'positions':<18} {'path':<13} {'max ulp':>8} {'mean ulp':>9} {'past half an ulp':>20}")
    bands = [(0, 8192), (8192, 32768), (32768, 131072), (0, 131072)]
    for lo, hi in bands:
        sel = (positions >= lo) & (positions < hi)
        for name, y, ref in (("vkrope", got, exact), ("vkrope spec", spec_got, exact_spec),
                             ("transformers", hf, exact)):
            ulp = ulp_of(ref)
            e = np.abs(y[:, :, sel] - ref[:, :, sel]) / ulp[:, :, sel]
            off = int(np.sum(np.abs(y[:, :, sel] - ref[:, :, sel]) > 0.5 * ulp[:, :, sel]))
            total = e.size
            print(f"[{lo}, {hi}){'':<{16 - len(f'[{lo}, {hi})')}} {name:<13} {e.max():>8.2f} {e.mean():>9.3f} "
                  f"{off:>8} of {total}")
    print(f"ulp: {args.dtype} ulps of the float64 result; 'past half an ulp': results further from it than one "
          "correct rounding would be")


if __name__ == "__main__":
    main()
