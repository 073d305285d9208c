"""How the way a call waits for the device changes its latency (issue #35):
per fence poll window (vk/commands.py's SPIN_S: 0 = block in vkWaitForFences at
once), the median host seconds of an empty submission, of tiny and
(1, 256, 256) resident `apply` calls (given `out=`, and making their result),
and of the fused decode step at batch 1; rounds alternate between the
windows, so a noisy machine slows them alike.
Usage: python scripts/wait_probe.py [--out OUT.json] [--rounds N]"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
from typing import Any, Callable

import numpy as np

import vkrope
from vkrope.vk import commands
from vkrope.bench.kernel import median_time
from vkrope.bench.step import fused_and_unfused
from vkrope.bench.timing import empty_submission_seconds

WINDOWS_S = (0.0, 50e-6, 200e-6, 1e-3)


def _commit() -> str:
    """The checkout's commit, or "" where git or the history is not there (the offline GPU machine's copy)."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10,
                             cwd=os.path.dirname(os.path.abspath(__file__)))
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def main() -> None:
    """Time every call at every window, alternating, and print (and write) the medians."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", help="also write the medians here as JSON")
    parser.add_argument("--rounds", type=int, default=7, help="rounds over every window (default 7)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    with vkrope.Device() as dev:
        tiny = dev.asarray(np.ones((1, 1, 2), np.float32))
        one = dev.asarray(np.array([[1.0, 0.0]], np.float32))
        x = dev.asarray(rng.standard_normal((1, 256, 256)).astype(np.float32))
        table = dev.asarray(np.tile(np.array([1.0, 0.0], np.float32), (256, 128)))
        y = dev.asarray(np.zeros((1, 256, 256), np.float32))
        fused, _, _ = fused_and_unfused(dev, 1)
        calls: dict[str, Callable[[], Any]] = {
            "empty submission": lambda: dev._on_runtime(empty_submission_seconds, 1),  # noqa: SLF001
            "apply resident (1, 1, 2) out=": lambda: dev.apply(tiny, one, out=tiny),
            "apply resident (1, 256, 256) out=": lambda: dev.apply(x, table, out=y),
            "apply resident (1, 256, 256)": lambda: dev.apply(x, table),
            "rope_and_cache resident batch 1": lambda: fused(100),
        }
        kind = dev._on_runtime(lambda rt: rt.ctx.info.type_code)  # noqa: SLF001
        saved = dict(commands.SPIN_S)
        times: dict[tuple[float, str], list[float]] = {}
        for name, call in calls.items():
            median_time(call, 20, warmup=0)  # warm up
        try:
            for _ in range(args.rounds):
                for w in WINDOWS_S:
                    commands.SPIN_S[kind] = w
                    for name, call in calls.items():
                        times.setdefault((w, name), []).append(median_time(call, 100, warmup=0))
        finally:
            commands.SPIN_S.clear()
            commands.SPIN_S.update(saved)
        rows = [{"spin_s": w, "call": n, "seconds": statistics.median(v)} for (w, n), v in times.items()]
        print(f"{dev.name}: median host us per call, by fence poll window")
        print(f"{'call':<36}" + "".join(f"{w * 1e6:>10.0f}" for w in WINDOWS_S))
        for name in calls:
            print(f"{name:<36}" + "".join(f"{statistics.median(times[(w, name)]) * 1e6:>10.1f}" for w in WINDOWS_S))
        if args.out:
            with open(args.out, "w") as f:
                json.dump({"device": dev.name, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                           "commit": _commit(), "rounds": args.rounds, "calls_per_round": 100, "rows": rows},
                          f, indent=1)


if __name__ == "__main__":
    main()
