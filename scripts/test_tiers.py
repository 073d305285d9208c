"""Write tests/slow_tests.txt, the tests of the slow tier, and
tests/shard_seconds.txt, the seconds of each test file (by which scripts/test.sh
splits the suite into shards that run side by side), from measured
durations. The slow tier: every test function whose runs (all its parameters together)
take at least --threshold seconds, longest first, until the rest (the fast
tier, what plain `pytest` runs) fits --budget seconds. The suite's conftest
marks the listed functions `slow`; setup.cfg deselects them unless asked
(`pytest -m "slow or not slow"`, which scripts/test.sh runs).

    python scripts/test_tiers.py                 # run the whole suite with --durations=0, then write
    python scripts/test_tiers.py --log FILE      # from a log of such a run

Coverage the fast tier must keep (every op, storage and dtype once) is
asserted by tests/project/test_tiers.py, which fails if one of its
coverage modules is listed here.
"""

from __future__ import annotations

import argparse
import pathlib
import re
import subprocess
import sys
from collections import defaultdict

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "slow_tests.txt"
SECONDS_OUT = ROOT / "tests" / "shard_seconds.txt"
LINE = re.compile(r"^([0-9.]+)s (call|setup|teardown)\s+(\S+)")
# (the tests that touch every op, storage and dtype: they stay in the fast tier whatever they cost)
KEEP_FAST = ("tests/kernels/test_contract_shapes.py", "tests/runtime/test_recordings.py",
             "tests/ops/test_family_oracles.py", "tests/project/test_layers.py", "tests/project/test_tiers.py")


def durations(log: str) -> dict[str, float]:
    """Seconds per test function (parameters summed) from pytest's --durations=0 output."""
    out: dict[str, float] = defaultdict(float)
    for line in log.splitlines():
        m = LINE.match(line.strip())
        if m:
            out[m.group(3).split("[")[0]] += float(m.group(1))
    return dict(out)


def per_file(times: dict[str, float]) -> dict[str, float]:
    """Seconds per test file from seconds per test function."""
    out: dict[str, float] = defaultdict(float)
    for name, t in times.items():
        out[name.split("::")[0]] += t
    return dict(out)


def choose(times: dict[str, float], total: float, budget: float, threshold: float) -> list[str]:
    """The functions to mark slow: longest first, at least `threshold` s each, until the rest fits."""
    slow, rest = [], total
    for name, t in sorted(times.items(), key=lambda kv: -kv[1]):
        if rest <= budget or t < threshold:
            break
        if name.startswith(KEEP_FAST):
            continue
        slow.append(name)
        rest -= t
    return sorted(slow)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log", help="a log of `pytest --durations=0` over the whole suite")
    ap.add_argument("--budget", type=float, default=60.0, help="seconds of test time the fast tier may take")
    ap.add_argument("--threshold", type=float, default=0.4, help="the shortest function worth moving")
    args = ap.parse_args()
    if args.log:
        log = pathlib.Path(args.log).read_text()
    else:
        res = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--durations=0",
                              "-m", "slow or not slow"], cwd=ROOT, capture_output=True, text=True)
        log = res.stdout
        if res.returncode != 0:
            print(log[-3000:])
            return 1
    times = durations(log)
    total = sum(times.values())
    slow = choose(times, total, args.budget, args.threshold)
    fast = total - sum(times[n] for n in slow)
    OUT.write_text("# The slow tier: written by scripts/test_tiers.py from measured durations; do not edit.\n"
                   f"# measured: {total:.0f} s in all, {fast:.0f} s left in the fast tier\n"
                   + "".join(f"{n}\n" for n in slow))
    SECONDS_OUT.write_text("# Seconds per test file: written by scripts/test_tiers.py (tests/shards.py reads it); "
                           "do not edit.\n" + "".join(f"{t:.1f} {name}\n" for name, t in
                                                      sorted(per_file(times).items())))
    print(f"wrote {OUT}: {len(slow)} functions slow; {total:.0f} s measured, {fast:.0f} s left fast")
    return 0


if __name__ == "__main__":
    sys.exit(main())
