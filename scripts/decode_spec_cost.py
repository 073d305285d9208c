#!/usr/bin/env python3
"""What computing a spec's frequencies in the decode step's shader costs:
`rope_and_cache` at batch 1 (Hq 32, Hk 8, D 128, float32, everything
resident, 4096-row caches) with a `RopeFreqs` spec against the same
frequencies as resident (cos, sin) tables, calls alternating; prints the
median wall time of each (docs/PERFORMANCE.md, issue #31).

    python scripts/decode_spec_cost.py [--calls 40]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import vkrope


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=40, help="timed calls of each form (default 40)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    b, hq, hk, d, s_max = 1, 32, 8, 128, 4096
    with vkrope.Device(validation=False) as dev:
        spec = vkrope.RopeFreqs(d, base=500000.0)
        tables = tuple(dev.asarray(t) for t in spec.table(np.arange(s_max)))
        kc, vc = (dev.asarray(np.zeros((b, hk, s_max, d), np.float32)) for _ in range(2))
        q, k, v = (dev.asarray(rng.standard_normal((b, h, 1, d)).astype(np.float32)) for h in (hq, hk, hk))
        forms = {"spec (in the shader)": spec, "resident tables": tables}
        times: dict[str, list[float]] = {name: [] for name in forms}
        for r in range(args.calls + 5):  # the first 5: pipelines and recordings made
            for name, freqs in forms.items():
                t = time.perf_counter()
                dev.rope_and_cache(q, k, v, kc, vc, freqs, np.array([[r + 10]]))
                if r >= 5:
                    times[name].append(time.perf_counter() - t)
        for name, ts in times.items():
            print(f"{name:22s} median {statistics.median(ts) * 1e6:8.1f} us")


if __name__ == "__main__":
    main()
