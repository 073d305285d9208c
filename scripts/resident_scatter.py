"""Time ONNX RotaryEmbedding with scattered position ids over (cos, sin)
caches past one binding (2^21 rows of 32 float32: 256 MiB each, above
lavapipe's 128 MiB maxStorageBufferRange), resident against numpy.

    python scripts/resident_scatter.py [--tokens 256 2048 8192] [--jobs 250 1000 2000]

A resident cache is bound a window at a time, so scattered positions make
about one dispatch per token; numpy caches have their rows gathered on the
host. Prints seconds per call (one call each: the first call of a shape
includes its pipeline's creation, the same for both) and whether the two
results are bit-identical. Then `apply_many` of that many resident
(1, 16, 64) float32 jobs, one submission each count (the recorder's other
many-step case).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import vkrope


def main() -> None:
    """Parse the token counts and print one line per count."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, nargs="+", default=[256, 2048, 8192])
    parser.add_argument("--jobs", type=int, nargs="+", default=[250, 1000, 2000])
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    cos = np.cos(rng.uniform(-3, 3, (1 << 21, 32))).astype(np.float32)
    sin = np.sin(cos)
    with vkrope.Device() as dev:
        cos_d, sin_d = dev.asarray(cos), dev.asarray(sin)
        print(f"{dev.info['name']}, maxStorageBufferRange {dev.info['max_storage_buffer_range']}: "
              "tokens, resident s, numpy s, identical")
        for s in args.tokens:
            x = rng.standard_normal((1, 2, s, 64)).astype(np.float32)
            ids = rng.integers(0, 1 << 21, (1, s))
            t0 = time.perf_counter()
            resident = dev.rotary_embedding(x, cos_d, sin_d, ids)
            t1 = time.perf_counter()
            host = dev.rotary_embedding(x, cos, sin, ids)
            t2 = time.perf_counter()
            print(f"{s}, {t1 - t0:.3f}, {t2 - t1:.3f}, {np.array_equal(resident, host)}")
        freqs = vkrope.axial_freqs(64, 4, 4)
        print("apply_many: jobs, s")
        for n in args.jobs:
            jobs = [(dev.asarray(rng.standard_normal((1, 16, 64)).astype(np.float32)), freqs) for _ in range(n)]
            t0 = time.perf_counter()
            dev.apply_many(jobs)
            print(f"{n}, {time.perf_counter() - t0:.3f}")


if __name__ == "__main__":
    main()
