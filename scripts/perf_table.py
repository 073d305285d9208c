#!/usr/bin/env python3
"""Print a benchmark JSON (from `vkrope bench`) as the markdown table used in
docs/PERFORMANCE.md.

    python scripts/perf_table.py [bench-out/bench.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

DEFAULT = "bench-out/bench.json"


def ms(v: float | None) -> str:
    return "-" if v is None else f"{v * 1e3:.3f}"


def num(v: float | None, digits: int = 1) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def competitor(v: object, key: str = "end_to_end_s") -> str:
    return ms(v[key]) if isinstance(v, dict) and key in v else "-"


def main(path: str) -> None:
    r = json.load(open(path))
    d = r["device"]
    print(f"Device: {d['name']} ({d['type']}, {d.get('driver', '')}, Vulkan {d['api_version']}); "
          f"date {r['date']}; numpy {r['numpy']}; torch: {r['torch']}; wgpu: {r['wgpu']}; "
          f"complete: {r.get('complete', True)}\n")
    print("| shape | dtype | storage | freqs | MiB moved | kernel ms | kernel GB/s | texel-copy GB/s "
          "| texel-copy / kernel time | copy GB/s | copy / kernel time | apply ms "
          "| resident ms | numpy ms | numpy/apply | memcpy GB/s | torch op ms | torch e2e ms | wgpu e2e ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for row in r["rows"]:
        print(f"| {'x'.join(map(str, row['shape']))} | {row['dtype']} | {row['storage']} | "
              f"{row.get('freqs', 'table')} | "
              f"{row['bytes_moved'] / 2**20:.1f} | {ms(row['kernel_s'])} | {num(row['kernel_gbps'])} | "
              f"{num(row.get('texel_copy_gbps'))} | {num(row.get('texel_copy_over_kernel', row.get('kernel_over_texel_copy')), 2)} | "
              f"{num(row['copy_gbps'])} | {num(row.get('copy_over_kernel', row.get('kernel_over_copy')), 2)} | {ms(row['apply_s'])} | "
              f"{ms(row['resident_apply_s'])} | {ms(row['numpy_s'])} | {num(row['numpy_over_apply'], 2)} | "
              f"{num(row['memcpy_gbps'])} | {competitor(row['torch'], 'op_s')} | {competitor(row['torch'])} | "
              f"{competitor(row['wgpu'])} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Print a `vkrope bench` JSON as the markdown table of docs/PERFORMANCE.md.")
    parser.add_argument("json", nargs="?", metavar="BENCH.json",
                        help=f"the benchmark JSON (default {DEFAULT} when it exists; write it with `vkrope bench`)")
    args = parser.parse_args()
    path = args.json
    if path is None:
        if not os.path.exists(DEFAULT):
            parser.error(f"no BENCH.json given and no {DEFAULT} here; run `python -m vkrope bench` first")
        path = DEFAULT
    try:
        main(path)
    except (OSError, ValueError, KeyError) as exc:
        print(f"perf_table.py: {path}: not a readable vkrope bench JSON ({type(exc).__name__}: {exc})", file=sys.stderr)
        sys.exit(1)
