#!/usr/bin/env python3
"""Per-call host overhead of the small call, for one or more vkrope trees,
interleaved in one run (rounds alternate between the trees, so a noisy
machine slows them alike).

    python scripts/overhead.py TREE [TREE ...] [--rounds 4] [--calls 1500]

Each TREE is a checkout (e.g. a `git worktree add --detach /tmp/old REV`);
its vkrope is imported through PYTHONPATH in a fresh process. Prints the
median over rounds of the per-round median time of `Device.apply` on
(1, 256, 256) float32, numpy in and out, and on a resident DeviceArray.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CODE = r"""
import json, statistics, sys, time
import numpy as np, vkrope
calls = int(sys.argv[1])
dev = vkrope.Device(validation=False)
x = np.random.default_rng(0).standard_normal((1, 256, 256)).astype(np.float32)
f = vkrope.axial_freqs(256, 16, 16)
a = dev.asarray(x)
def t(fn):
    for _ in range(100):
        fn()
    ts = []
    for _ in range(calls):
        t0 = time.perf_counter(); fn(); ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e6
print(json.dumps({"file": vkrope.__file__, "numpy": t(lambda: dev.apply(x, f)), "resident": t(lambda: dev.apply(a, f))}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", metavar="TREE", help="vkrope checkouts to compare")
    parser.add_argument("--rounds", type=int, default=4, help="rounds per tree (default 4)")
    parser.add_argument("--calls", type=int, default=1500, help="timed calls per round (default 1500)")
    args = parser.parse_args()
    if args.rounds < 1 or args.calls < 1:
        parser.error("--rounds and --calls must be >= 1")
    results: dict[str, list[dict]] = {t: [] for t in args.trees}
    for _ in range(args.rounds):
        for tree in args.trees:
            env = dict(os.environ, PYTHONPATH=os.path.abspath(tree), VKROPE_VALIDATION="0")
            out = subprocess.run([sys.executable, "-c", CODE, str(args.calls)], env=env, capture_output=True,
                                 text=True, cwd="/", check=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            if not r["file"].startswith(os.path.abspath(tree)):
                raise SystemExit(f"{tree}: imported {r['file']} instead")
            results[tree].append(r)
    for tree, rs in results.items():
        print(f"{tree}: numpy->numpy {statistics.median(r['numpy'] for r in rs):.1f} us, "
              f"resident {statistics.median(r['resident'] for r in rs):.1f} us "
              f"(rounds: {[round(r['numpy']) for r in rs]} / {[round(r['resident']) for r in rs]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
