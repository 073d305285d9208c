"""The suite split into shards that run side by side (scripts/test.sh, VKROPE_SHARD=i/n): whole test
files, each to the shard with the least measured time so far, longest first, so every shard collects
the same files and deselects the same way, and a module's fixtures are made in one shard only."""

from __future__ import annotations

import os
import re

# Seconds per test file, written by scripts/test_tiers.py from the same measured run as the slow tier.
SECONDS = os.path.join(os.path.dirname(__file__), "shard_seconds.txt")
# (a file not measured yet: about the median file's time)
UNMEASURED_S = 2.0
_SPEC = re.compile(r"([0-9]+)/([1-9][0-9]*)")


def parse(spec: str) -> tuple[int, int]:
    """`i/n` (0 <= i < n) from VKROPE_SHARD, or a ValueError naming what was given."""
    m = _SPEC.fullmatch(spec.strip())
    if not m or int(m.group(1)) >= int(m.group(2)):
        raise ValueError(f"VKROPE_SHARD must be i/n with 0 <= i < n (e.g. 0/2), got {spec!r}")
    return int(m.group(1)), int(m.group(2))


def measured(path: str = SECONDS) -> dict[str, float]:
    """The committed seconds per test file ("seconds path" lines; none if the file is missing)."""
    if not os.path.exists(path):
        return {}
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                seconds, name = line.split()
                out[name] = float(seconds)
    return out


def assign(files: list[str], seconds: dict[str, float], n: int) -> dict[str, int]:
    """Each file's shard: longest first (ties by name), to the least loaded shard (ties by index)."""
    load = [0.0] * n
    out = {}
    for name in sorted(set(files), key=lambda f: (-seconds.get(f, UNMEASURED_S), f)):
        i = min(range(n), key=lambda k: (load[k], k))
        out[name] = i
        load[i] += seconds.get(name, UNMEASURED_S)
    return out
