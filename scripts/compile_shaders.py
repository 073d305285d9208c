#!/usr/bin/env python3
"""Compile glsl/rope.glsl into every variant under spirv/, plus manifest.json.

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
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from vkrope.shaders import SOURCE, variant_grid  # noqa: E402


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def compile_all(out_dir: Path) -> dict:
    """Compile every variant into out_dir and return the manifest."""
    for tool in ("glslc", "spirv-val"):
        if shutil.which(tool) is None:
            sys.exit(f"compile_shaders: {tool} not found; sudo apt-get install glslc spirv-tools")
    src_path = ROOT / "glsl" / SOURCE
    source = src_path.read_bytes()
    out_dir.mkdir(parents=True, exist_ok=True)
    variants = {}
    for v in variant_grid():
        spv = out_dir / f"{v['name']}.spv"
        cmd = ["glslc", "--target-env=vulkan1.1", "-Werror", "-fshader-stage=comp", "-O"]
        cmd += [f"-D{d}" for d in v["defines"]]
        cmd += [str(src_path), "-o", str(spv)]
        subprocess.run(cmd, check=True)
        subprocess.run(["spirv-val", "--target-env", "vulkan1.1", str(spv)], check=True)
        entry = dict(v)
        entry["file"] = spv.name
        entry["spirv_sha256"] = sha256(spv.read_bytes())
        variants[v["name"]] = entry
    manifest = {
        "source": f"glsl/{SOURCE}",
        "source_sha256": sha256(source),
        "compiler": "glslc --target-env=vulkan1.1 -Werror -O",
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
