"""EdgeTAM / SAM2 memory cross-attention keys: 7 memory frames of 16x16
tokens share one frame's axial frequencies (repeat=7), and 4 object-pointer
tokens at the end stay unrotated (exclude_last=4), all in one dispatch.

    python examples/edgetam_memory_keys.py
"""

from __future__ import annotations

import numpy as np

import vkrope


def main() -> None:
    rng = np.random.default_rng(1)
    frames, side, dim, pointers = 7, 16, 256, 4
    freqs = vkrope.axial_freqs(dim, side, side, dtype=np.float16)  # one frame: [256, 256]
    keys = rng.standard_normal((1, frames * side * side + pointers, dim)).astype(np.float16)

    rotated = vkrope.apply(keys, freqs, repeat=frames, exclude_last=pointers)

    # What SAM2 does by hand: tile the freqs per frame, rotate, re-attach the pointers.
    fc = freqs.astype(np.float64).view(np.complex128)  # [256, 128]
    body = keys[:, :-pointers].astype(np.float64).view(np.complex128) * np.tile(fc, (frames, 1))
    expected = np.concatenate([body.view(np.float64), keys[:, -pointers:].astype(np.float64)], axis=1)
    ulp = np.spacing(np.abs(expected.astype(np.float16))).astype(np.float64)
    worst = float(np.max(np.abs(rotated.astype(np.float64) - expected) / ulp))
    print(f"keys {keys.shape} float16: worst error {worst:.2f} float16 ulp; pointer tokens unchanged: "
          f"{np.array_equal(rotated[:, -pointers:], keys[:, -pointers:])}")
    assert worst <= 1.0 and np.array_equal(rotated[:, -pointers:], keys[:, -pointers:])
    print("OK")


if __name__ == "__main__":
    main()
