"""The fastest plain-numpy formulations of the operator, for the demo and
the benchmark to compare against (not used by `apply`)."""

from __future__ import annotations

import numpy as np


def numpy_rope(x: np.ndarray, freqs_rows: np.ndarray) -> np.ndarray:
    """x `[..., N, C]` times freqs `[N, C]` (real-interleaved), as numpy does
    it best: one complex64 multiply for float32; float16 has no complex type
    in numpy, so it is widened to float32, multiplied and rounded back."""
    if x.dtype == np.float32:
        f = np.ascontiguousarray(freqs_rows, dtype=np.float32).view(np.complex64)
        return (np.ascontiguousarray(x).view(np.complex64) * f).view(np.float32)
    f = np.ascontiguousarray(freqs_rows, dtype=np.float32).view(np.complex64)
    return (x.astype(np.float32).view(np.complex64) * f).view(np.float32).astype(x.dtype)
