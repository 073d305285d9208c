"""glsl/ and spirv/ agree, every module is valid SPIR-V, and the manifest is
what the runtime loads."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vkrope.shaders import manifest, spirv_dir, variant_grid

ROOT = Path(__file__).resolve().parent.parent


def test_manifest_covers_the_variant_grid():
    names = {v["name"] for v in variant_grid()}
    assert set(manifest()["variants"]) == names
    for entry in manifest()["variants"].values():
        spv = (spirv_dir() / entry["file"]).read_bytes()
        assert hashlib.sha256(spv).hexdigest() == entry["spirv_sha256"]


def test_manifest_source_hash_matches_glsl():
    src = (ROOT / manifest()["source"]).read_bytes()
    assert hashlib.sha256(src).hexdigest() == manifest()["source_sha256"], (
        "glsl/ changed without recompiling: run scripts/compile_shaders.py"
    )


def test_recompiling_gives_the_committed_spirv(tmp_path):
    """Recompile glsl/ into a temp folder: every module must match spirv/ byte for byte."""
    assert shutil.which("glslc"), "glslc is required by the test suite (scripts/test.sh installs it)"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "compile_shaders.py"), "--out", str(tmp_path)], check=True)
    fresh = json.loads((tmp_path / "manifest.json").read_text())
    committed = json.loads((ROOT / "spirv" / "manifest.json").read_text())
    assert fresh == committed
    for entry in fresh["variants"].values():
        assert (tmp_path / entry["file"]).read_bytes() == (ROOT / "spirv" / entry["file"]).read_bytes(), entry["file"]


@pytest.mark.parametrize("name", sorted(v["name"] for v in variant_grid()))
def test_spirv_val(name):
    assert shutil.which("spirv-val"), "spirv-val is required by the test suite (scripts/test.sh installs it)"
    path = ROOT / "spirv" / f"{name}.spv"
    subprocess.run(["spirv-val", "--target-env", "vulkan1.1", str(path)], check=True)


def test_push_constant_block_matches_the_host():
    """The shader's Params block lists the fields the host packs, in order."""
    import re

    from vkrope.shaders import PUSH_CONSTANT_FIELDS

    src = (ROOT / "glsl" / "rope.glsl").read_text()
    block = re.search(r"layout\(push_constant\) uniform Params \{(.*?)\} p;", src, re.S).group(1)
    fields = re.findall(r"^\s*uint\s+(\w+);", block, re.M)
    assert tuple(fields) == PUSH_CONSTANT_FIELDS


def test_flag_bits_come_from_one_place():
    from vkrope.shaders import FLAGS

    src = (ROOT / "glsl" / "rope.glsl").read_text()
    for name in FLAGS:
        assert f"const uint {name}" not in src  # defined by the compiler command line only
    for entry in manifest()["variants"].values():
        for name, value in FLAGS.items():
            assert f"{name}={value}u" in entry["defines"]
