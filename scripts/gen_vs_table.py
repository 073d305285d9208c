#!/usr/bin/env python3
"""Kernel time of `vkrope.apply` with SAM2's 64x64 axial table against the
same frequencies computed in the shader (`vkrope.AxialFreqs`, float32 and
exact angle), at (1, 4096, 256) and (8, 4096, 256) float32, buffer storage,
for one or more vkrope trees, interleaved in one run (calls alternate
between modes and rounds between trees, so a noisy machine slows them alike).

    python scripts/gen_vs_table.py [TREE ...] [--rounds 9]
    python scripts/gen_vs_table.py --ablate [--rounds 9]

Each TREE is a checkout (default: this one; e.g. a `git worktree add
--detach /tmp/old REV` for before / after); its vkrope is imported through
PYTHONPATH in a fresh process. Prints the least kernel ms (timestamp
queries) of each mode per tree, the table / generated time ratios (above
1: generated is faster), and the texel-copy shader over x in the same
rounds (glsl/texel_copy.glsl: one load and one store per texel, the floor
of any one-texel-per-invocation kernel over x).

--ablate compares this tree with copies of it whose generated kernel does
less frequency work (ABLATIONS below: no trig; no trig and no frequency
load; none of it, with the axial split hard-wired to SAM2's 64-wide grid):
where the generated kernel's time goes. The copies compute wrong numbers;
only their times mean anything.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CODE = r"""
import json, sys
import numpy as np, vkrope
from vkrope.bench.timing import time_request, time_texel_copy
from vkrope.ops import sam2
rounds = int(sys.argv[1])
out = {}
with vkrope.Device(validation=False) as dev:
    for shape in [(1, 4096, 256), (8, 4096, 256)]:
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        spec = vkrope.AxialFreqs(256, 64, 64)
        modes = {"table": spec.table(), "float32": spec, "exact": vkrope.AxialFreqs(256, 64, 64, angle="exact")}
        reqs = {k: sam2.check(x, f, storage="buffer") for k, f in modes.items()}
        y = np.empty_like(x)
        for req in reqs.values():
            time_request(dev, req, y)  # pipelines built, pages touched
        best = {k: float("inf") for k in [*reqs, "texel_copy"]}
        for _ in range(rounds):
            for k, req in reqs.items():
                t = time_request(dev, req, y)
                best[k] = min(best[k], t if t else float("inf"))
            t = time_texel_copy(dev, x.nbytes, False)  # the floor of a one-texel kernel over x
            best["texel_copy"] = min(best["texel_copy"], t if t else float("inf"))
        out[str(shape)] = best
print(json.dumps(out))
"""


KERNEL = "glsl/rope_interleaved.glsl"
FREQS_GLSL = "glsl/freqs.glsl"
TRIG = (FREQS_GLSL, "    cs = mode == ANGLE_SHORT ? cos_sin_short(angle) : cos_sin(angle);")
LOAD = (KERNEL, "    vec2 inv = ANGLE == ANGLE_EXACT ? vec2(0.0) : freq_inv2[k0 >> 1];  // both pairs' frequencies, one load")
SPLIT = (KERNEL, "      uint y = div_small(uint(frow), p.axial_end_x);")
# The angle still formed (t * inv, rounded once), cos / sin replaced by constants.
NO_TRIG = "    cs = vec2(angle * 1e-30 + 0.6, 0.8);"
ABLATIONS = {  # name: the edits (file, old, new), cumulative
    "no-trig": [(*TRIG, NO_TRIG)],
    "no-trig-no-load": [(*TRIG, NO_TRIG), (*LOAD, "    vec2 inv = vec2(1.0);")],
    "no-frequency-work": [(*TRIG, NO_TRIG), (*LOAD, "    vec2 inv = vec2(1.0);"),
                          (*SPLIT, "      uint y = uint(frow) >> 6;")],
}


def ablated_trees(root: Path, work: Path) -> list[str]:
    """Copies of `root` with each ablation's shader edits, compiled."""
    trees = []
    for name, edits in ABLATIONS.items():
        tree = work / name
        for part in ("vkrope", "glsl", "spirv", "scripts"):
            shutil.copytree(root / part, tree / part, ignore=shutil.ignore_patterns("__pycache__"))
        for file, old, new in edits:
            path = tree / file
            text = path.read_text()
            if old not in text:
                sys.exit(f"gen_vs_table.py: --ablate: {file} no longer holds {old.strip()!r}; update ABLATIONS")
            path.write_text(text.replace(old, new))
        subprocess.run([sys.executable, str(tree / "scripts" / "compile_shaders.py")], check=True,
                       capture_output=True)
        trees.append(str(tree))
    return trees


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="*", help="vkrope checkouts to compare (default: this one)")
    parser.add_argument("--rounds", type=int, default=9, help="timed calls per mode and tree per round (default 9)")
    parser.add_argument("--ablate", action="store_true",
                        help="this tree against copies whose generated kernel does less frequency work")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    root = Path(__file__).resolve().parent.parent
    if args.ablate and args.trees:
        parser.error("--ablate compares this tree with its own ablations: give no TREE")
    work = tempfile.TemporaryDirectory(prefix="vkrope-ablate-") if args.ablate else None
    trees = args.trees or [str(root)]
    if work is not None:
        trees += ablated_trees(root, Path(work.name))
    for tree in trees:
        if not (Path(tree) / "vkrope" / "__init__.py").exists():
            parser.error(f"{tree} is not a vkrope checkout (no vkrope/__init__.py)")
    results: dict[str, list[dict]] = {t: [] for t in trees}
    for _ in range(2):  # two rounds over the trees
        for tree in trees:
            env = dict(os.environ, PYTHONPATH=str(Path(tree).resolve()))
            res = subprocess.run([sys.executable, "-c", CODE, str(args.rounds)], env=env, capture_output=True,
                                 text=True, cwd=tree, timeout=1200)
            if res.returncode:
                sys.exit(f"gen_vs_table.py: {tree}: {res.stderr.strip().splitlines()[-1:]}")
            results[tree].append(json.loads(res.stdout.strip().splitlines()[-1]))
    for tree, runs in results.items():
        print(tree)
        for shape in runs[0]:
            best = {k: min(r[shape][k] for r in runs) for k in runs[0][shape]}
            print(f"  {shape:<16} table {best['table'] * 1e3:7.2f} ms   AxialFreqs float32 {best['float32'] * 1e3:7.2f} ms"
                  f"   exact {best['exact'] * 1e3:7.2f} ms   table / generated {best['table'] / best['float32']:.2f}"
                  f" / {best['table'] / best['exact']:.2f}   texel copy {best['texel_copy'] * 1e3:7.2f} ms"
                  f" (table / texel copy {best['table'] / best['texel_copy']:.2f})")


if __name__ == "__main__":
    main()
