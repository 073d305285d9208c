#!/usr/bin/env python3
"""Compile every kernel in glsl/ (each glsl/<kernel>.glsl with its variant
grid glsl/<kernel>.json) into spirv/, plus spirv/manifest.json.

The only way from glsl/ to spirv/. Each variant is compiled with
`glslc --target-env=vulkan1.1 -Werror` and checked with `spirv-val`; any
failure stops the script with a non-zero exit.

    python scripts/compile_shaders.py            # rewrite spirv/
    python scripts/compile_shaders.py --out DIR  # write elsewhere (the sync test)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GLSL = ROOT / "glsl"
sys.path.insert(0, str(ROOT))

from vkrope.runtime.manifest import expand_grid  # noqa: E402

COMPILER = ["glslc", "--target-env=vulkan1.1", "-Werror", "-fshader-stage=comp", "-O"]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def grids() -> list[dict]:
    """Every kernel's variant grid, by kernel name."""
    return [json.loads(p.read_text()) for p in sorted(GLSL.glob("*.json"))]


def _compile(src: Path, v: dict, out_dir: Path) -> dict:
    """Compile and validate one variant into out_dir; the variant with its file's name and hash."""
    spv = out_dir / f"{v['name']}.spv"
    cmd = COMPILER + [f"-I{GLSL}"] + [f"-D{d}" for d in v["defines"]] + [str(src), "-o", str(spv)]
    subprocess.run(cmd, check=True)
    subprocess.run(["spirv-val", "--target-env", "vulkan1.1", str(spv)], check=True)
    return {**v, "file": spv.name, "spirv_sha256": sha256(spv.read_bytes())}


def compile_all(out_dir: Path) -> dict:
    """Compile every variant into out_dir and return the manifest."""
    for tool in ("glslc", "spirv-val"):
        if shutil.which(tool) is None:
            sys.exit(f"compile_shaders: {tool} not found; sudo apt-get install glslc spirv-tools")
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("*.spv"):
        old.unlink()
    jobs = [(GLSL / grid["source"], v) for grid in grids() for v in expand_grid(grid)]
    # (one compiler per core: each variant is its own process and file, the manifest keeps the grids' order)
    with ThreadPoolExecutor(max_workers=len(os.sched_getaffinity(0))) as pool:
        variants = {v["name"]: v for v in pool.map(lambda job: _compile(*job, out_dir), jobs)}
    manifest = {
        "sources": {f"glsl/{p.name}": sha256(p.read_bytes()) for p in sorted(GLSL.iterdir()) if p.is_file()},
        "compiler": " ".join(COMPILER),
        "variants": variants,
    }
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "spirv", help="output folder (default: spirv/)")
    args = parser.parse_args()
    manifest = compile_all(args.out)
    print(f"compiled {len(manifest['variants'])} variants into {args.out}")


if __name__ == "__main__":
    main()
