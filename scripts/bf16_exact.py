#!/usr/bin/env python3
"""bfloat16 results against exact rational arithmetic: random bfloat16 bit
patterns rotated by random float32 and bfloat16 (cos, sin) bit patterns;
prints how many results differ from the exact value rounded once to
nearest-even (tests/kernels/test_bfloat16.py runs a smaller sample).

    python scripts/bf16_exact.py [--n 40000] [--seed 1]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "oracles")]

import vkrope  # noqa: E402
from oracle import exact_rotation_check  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=40000, help="pairs per table dtype (2n results each)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    for x_bits, what in (((0x3000, 0x5000), "x in 2^-31 .. 2^32"), ((0, 0x0400), "x subnormal or below 2^-119")):
        for tables in ("float32", "bfloat16"):
            off = exact_rotation_check(vkrope.apply, args.n, args.seed, tables, x_bits)
            print(f"{what}, {tables} tables: {off} of {2 * args.n} results differ from the exact value rounded once")


if __name__ == "__main__":
    main()
