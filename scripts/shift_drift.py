#!/usr/bin/env python3
"""How far 1000 context shifts of random size carry cached keys from the
direct rotation at their final positions, in each cache dtype: vkrope's
`shift_cache` (exact angles, and the frameworks' float32 angles) against
llama.cpp's K-shift done the same way in numpy (ggml's ROPE over the cache
with the position delta: theta = delta * theta_scale^i in float32, cos /
sin in float32, the rotation in float32, stored in the cache's dtype; fp8
caches, which llama.cpp has not, the same way, the scale aside: it cancels).

    python scripts/shift_drift.py [--shifts 1000] [--tokens 64] [--seed 0]

Prints, per cache dtype and way, the largest and the RMS error of the keys
after the shifts against float64 keys rotated once from the original at
their final positions, in units of the dtype's ulp at 1 (docs/PERFORMANCE.md).
"""

from __future__ import annotations

import argparse

import ml_dtypes
import numpy as np

import vkrope

D, BASE = 128, 10000.0
DTYPES = {"float32": np.dtype(np.float32), "float16": np.dtype(np.float16),
          "bfloat16": np.dtype(ml_dtypes.bfloat16), "float8_e4m3fn": np.dtype(ml_dtypes.float8_e4m3fn),
          "float8_e5m2": np.dtype(ml_dtypes.float8_e5m2)}
ULP_AT_1 = {"float32": 2.0**-23, "float16": 2.0**-10, "bfloat16": 2.0**-7, "float8_e4m3fn": 2.0**-3,
            "float8_e5m2": 2.0**-2}


def rotate64(k: np.ndarray, a: np.ndarray) -> np.ndarray:
    """float64 rotate-half rotation of keys [T, D] by angles [T, D/2]."""
    c, s = np.cos(a), np.sin(a)
    h = D // 2
    return np.concatenate([k[:, :h] * c - k[:, h:] * s, k[:, h:] * c + k[:, :h] * s], -1)


def ggml_shift(k: np.ndarray, delta: int, dtype: np.dtype) -> np.ndarray:
    """llama.cpp's K-shift of keys [T, D] stored in `dtype`: ggml's rope (NeoX pairs) at position `delta`."""
    theta_scale = np.float32(BASE) ** np.float32(-2.0 / D)
    theta = np.empty(D // 2, np.float32)
    t = np.float32(delta)
    for i in range(D // 2):  # ggml: theta *= theta_scale per pair, in float32
        theta[i] = t
        t = np.float32(t * theta_scale)
    c, s = np.cos(theta).astype(np.float32), np.sin(theta).astype(np.float32)
    x = k.astype(np.float32)
    h = D // 2
    y = np.concatenate([x[:, :h] * c - x[:, h:] * s, x[:, h:] * c + x[:, :h] * s], -1).astype(np.float32)
    return y.astype(dtype)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shifts", type=int, default=1000, help="shifts per run (default 1000)")
    parser.add_argument("--tokens", type=int, default=64, help="cached tokens (default 64)")
    parser.add_argument("--seed", type=int, default=0, help="of the keys, positions and shifts (default 0)")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    k0 = rng.standard_normal((args.tokens, D))
    start = rng.integers(20000, 30000, args.tokens)
    deltas = rng.integers(-60, 61, args.shifts)
    deltas[np.cumsum(deltas) + start.min() < 0] = 0  # positions stay >= 0
    final = start + deltas.sum()
    slots = np.arange(args.tokens)[None]
    print(f"{args.shifts} shifts of -60..60 positions, {args.tokens} keys of D {D}, start 20000-30000; error "
          "against the direct rotation at the final positions (the spec's own angles: exact, or float32 as the "
          "frameworks form them; llama.cpp: exact), in ulp of the dtype at 1: max / RMS")
    with vkrope.Device(validation=False) as dev:
        for name, dt in DTYPES.items():
            ulp = ULP_AT_1[name]
            row = [name]
            for angle in ("exact", "float32"):
                spec = vkrope.RopeFreqs(D, base=BASE, angle=angle)
                first = rotate64(k0, spec.angles(start)).astype(np.float32).astype(dt)
                want = rotate64(k0, spec.angles(final))
                kc = dev.asarray(first.reshape(args.tokens, 1, 1, D))
                pos = start.copy()
                for d in deltas:
                    dev.shift_cache(kc, spec, pos[None], (pos + d)[None], slots=slots)
                    pos = pos + d
                err = np.abs(kc.get().reshape(args.tokens, D).astype(np.float64) - want) / ulp
                row.append(f"vkrope {angle}: {err.max():.1f} / {np.sqrt((err ** 2).mean()):.2f}")
            exact = vkrope.RopeFreqs(D, base=BASE, angle="exact")
            k = rotate64(k0, exact.angles(start)).astype(np.float32).astype(dt)
            want = rotate64(k0, exact.angles(final))
            for d in deltas:
                k = ggml_shift(k, int(d), dt)
            err = np.abs(k.astype(np.float64) - want) / ulp
            row.append(f"llama.cpp: {err.max():.1f} / {np.sqrt((err ** 2).mean()):.2f}")
            print("  ".join(row))


if __name__ == "__main__":
    main()
