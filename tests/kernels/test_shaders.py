"""glsl/ and spirv/ agree, every module is valid SPIR-V, and the manifest is
what the runtime loads."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vkrope.runtime.manifest import expand_grid, manifest, spirv_dir
from vkrope.runtime.work_images import work_image

ROOT = Path(__file__).resolve().parents[2]
GRIDS = {p.stem: json.loads(p.read_text()) for p in sorted((ROOT / "glsl").glob("*.json"))}


def test_manifest_covers_every_variant_grid():
    names = {v["name"] for grid in GRIDS.values() for v in expand_grid(grid)}
    assert names and set(manifest()["variants"]) == names
    for entry in manifest()["variants"].values():
        spv = (spirv_dir() / entry["file"]).read_bytes()
        assert hashlib.sha256(spv).hexdigest() == entry["spirv_sha256"]


def test_manifest_source_hashes_match_glsl():
    for path, digest in manifest()["sources"].items():
        assert hashlib.sha256((ROOT / path).read_bytes()).hexdigest() == digest, (
            f"{path} changed without recompiling: run scripts/compile_shaders.py"
        )
    assert set(manifest()["sources"]) == {f"glsl/{p.name}" for p in (ROOT / "glsl").iterdir() if p.is_file()}


def test_recompiling_gives_the_committed_spirv(tmp_path):
    """Recompile glsl/ into a temp folder: every module must match spirv/ byte for byte."""
    assert shutil.which("glslc"), "glslc is required by the test suite (scripts/test.sh installs it)"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "compile_shaders.py"), "--out", str(tmp_path)], check=True)
    fresh = json.loads((tmp_path / "manifest.json").read_text())
    committed = json.loads((ROOT / "spirv" / "manifest.json").read_text())
    assert fresh == committed
    for entry in fresh["variants"].values():
        assert (tmp_path / entry["file"]).read_bytes() == (ROOT / "spirv" / entry["file"]).read_bytes(), entry["file"]
    assert sorted(p.name for p in (ROOT / "spirv").glob("*.spv")) == sorted(e["file"] for e in fresh["variants"].values())


@pytest.mark.parametrize("name", sorted(manifest()["variants"]))
def test_spirv_val(name):
    assert shutil.which("spirv-val"), "spirv-val is required by the test suite (scripts/test.sh installs it)"
    path = ROOT / "spirv" / f"{name}.spv"
    subprocess.run(["spirv-val", "--target-env", "vulkan1.1", str(path)], check=True)


@pytest.mark.parametrize("kernel", sorted(GRIDS))
def test_push_constant_block_matches_the_grid(kernel):
    """The shader's Params block lists the fields of its grid, in order: the
    host packs them by these names."""
    src = (ROOT / "glsl" / GRIDS[kernel]["source"]).read_text()
    block = re.search(r"layout\(push_constant\) uniform Params \{(.*?)\} p;", src, re.S).group(1)
    fields = re.findall(r"^\s*uint\s+(\w+);", block, re.M)
    assert fields == GRIDS[kernel]["push_constants"]


@pytest.mark.parametrize("kernel", sorted(GRIDS))
def test_the_grid_states_each_binding_once(kernel):
    """A shader places each binding by the grid's BINDING_<name> / ACCESS_<name> defines, never by a number or
    qualifier of its own (the grid is the one statement of both); its header lists the bindings in the grid's
    order, each tensor it declares (DECLARE_*TENSOR) is a tensor there, and every grid binding is declared."""
    src = (ROOT / "glsl" / GRIDS[kernel]["source"]).read_text()
    grid = GRIDS[kernel]["bindings"]
    names = [b["name"] for b in grid]
    header = re.search(r"^ \* Bindings \(set 0.*?\n((?: \*   .*\n)+)", src, re.M).group(1)
    assert re.findall(r"^ \*   (\w+)  ", header, re.M) == names
    assert not re.findall(r"binding = \d|\) (?:readonly|writeonly) buffer|uniform (?:readonly|writeonly)", src)
    declared = re.findall(r"^DECLARE_(?:BUFFER_)?TENSOR\((?:\w+, )?(\w+)\)", src, re.M)
    assert all(grid[names.index(n)]["kind"] == "tensor" for n in declared), declared
    placed = re.findall(r"binding = BINDING_(\w+)\) ACCESS_(\w+) buffer", src)
    assert all(a == b and a in names for a, b in placed), placed
    tables = re.findall(r"^#define FREQ_TABLE (\w+)$", src, re.M)  # (glsl/freqs.glsl's columns table)
    assert set(declared) | {a for a, _ in placed} | set(tables) == set(names)
    spec_ids = re.findall(r"constant_id = (\d+)\) const \w+ (\w+)", src)
    named = {int(i): n for i, n in spec_ids}
    for i, name in enumerate(GRIDS[kernel]["spec_constants"]):
        assert i in (0, 1) or named.get(i) == name  # 0, 1: local_size_x_id / local_size_y_id


def test_no_shader_source_numbers_a_binding():
    """The included files too (freqs.glsl, tensor.glsl, ...): every binding placed by the grid's defines."""
    for path in sorted((ROOT / "glsl").glob("*.glsl")):
        src = path.read_text()
        assert not re.findall(r"binding = \d|\) (?:readonly|writeonly) buffer|uniform (?:readonly|writeonly)", src), \
            path.name


QUALIFIER = {"read": {"NonWritable"}, "write": {"NonReadable"}, "update": set()}


@pytest.mark.parametrize("name", sorted(manifest()["variants"]))
def test_each_compiled_binding_is_the_grids(name):
    """Read back from the SPIR-V: every descriptor the module declares sits at a binding of its grid, with that
    binding's access (NonWritable where it reads, NonReadable where it writes), whatever the source says."""
    entry = manifest()["variants"][name]
    text = subprocess.run(["spirv-dis", "--raw-id", str(spirv_dir() / entry["file"])], check=True,
                          capture_output=True, text=True).stdout
    binding = {v: int(b) for v, b in re.findall(r"OpDecorate %(\d+) Binding (\d+)", text)}
    flags: dict[str, set[str]] = {}
    for target, flag in re.findall(r"OpDecorate %(\d+) (NonWritable|NonReadable)", text):
        flags.setdefault(target, set()).add(flag)
    for struct, flag in re.findall(r"OpMemberDecorate %(\d+) \d+ (NonWritable|NonReadable)", text):
        flags.setdefault(struct, set()).add(flag)
    pointee = dict(re.findall(r"%(\d+) = OpTypePointer \w+ %(\d+)", text))
    var_type = dict(re.findall(r"%(\d+) = OpVariable %(\d+)", text))
    assert binding and set(binding.values()) <= set(range(len(entry["bindings"])))
    for var, b in binding.items():
        block = pointee[var_type[var]]
        got = flags.get(var, set()) | flags.get(block, set())
        assert got == QUALIFIER[entry["bindings"][b]["access"]], (name, entry["bindings"][b]["name"], got)


@pytest.mark.parametrize("kernel", sorted(GRIDS))
def test_flag_bits_come_from_one_place(kernel):
    src = (ROOT / "glsl" / GRIDS[kernel]["source"]).read_text()
    flags = GRIDS[kernel].get("flags", {})
    for name in flags:
        assert f"const uint {name}" not in src  # defined by the compiler command line only
    for entry in manifest()["variants"].values():
        if entry["kernel"] == GRIDS[kernel]["kernel"]:
            for name, value in flags.items():
                assert f"{name}={value}u" in entry["defines"]
                assert entry["flags"][name] == value


def test_spec_constants_are_set_by_name():
    """Launches give specialization constants by name; the kernel puts them in
    constant-id order and refuses a missing or unknown one (as push constants)."""
    from vkrope.runtime.manifest import find

    kernel = find("rope_interleaved", storage="buffer", x="32", freqs="32")
    names = kernel.spec_constants
    values = {name: i + 10 for i, name in enumerate(names)}
    assert kernel.spec_values(dict(reversed(list(values.items())))) == tuple(range(10, 10 + len(names)))
    with pytest.raises(AssertionError, match=r"missing \['AXIAL'\]"):
        kernel.spec_values({k: v for k, v in values.items() if k != "AXIAL"})
    with pytest.raises(AssertionError, match=r"unknown \['BOGUS'\]"):
        kernel.spec_values({**values, "BOGUS": 1})


def test_launches_are_checked_against_their_kernel(device):
    """A launch that names a constant twice, binds too few resources or a
    buffer where the kernel has an image is refused before anything is
    recorded; constants given in another order make the same launch."""
    import numpy as np

    from vkrope.runtime.manifest import find
    from vkrope.runtime.steps import WRITE, Launch, arg

    kernel = find("texel_copy", x="32")
    rt = device._rt
    buf = rt.work_buffer("probe_test", 64, host_visible=True)
    good = dict(kernel=kernel.name, spec=(("local_size_x", 64),), push=(("texels", 4), ("row_stride", 64)),
                args=(arg(buf, 0, 32, WRITE), arg(buf, 32, 32)), grid=(1, 1, 1))
    assert Launch(**good) == Launch(**{**good, "push": (("row_stride", 64), ("texels", 4))})
    with pytest.raises(AssertionError, match="given twice"):
        Launch(**{**good, "push": (("texels", 4), ("texels", 4), ("row_stride", 64))})
    with pytest.raises(AssertionError, match="2 bindings, the launch gives 1"):
        rt.submit((Launch(**{**good, "args": good["args"][:1]}),), cache=False)
    image = work_image(rt, "probe_test_image", (1, 1, 1), np.dtype(np.float32))
    bad = find("rope_interleaved", storage="texture3d", x="32", freqs="32")
    with pytest.raises(AssertionError, match="is a storage_image, the launch binds Buffer"):
        rt.submit((Launch(bad.name, (), (), (arg(buf, access=WRITE), arg(image), arg(buf), arg(buf)), (1, 1, 1)),),
                  cache=False)


# A shader's named values the host also writes (a push constant's roles, the
# angle modes of glsl/freqs.glsl): stated in GLSL and in the kernel module,
# held equal here.
SHARED_CONSTANTS = [("rope_cache.glsl", "vkrope.kernels.cache", "ROLE_"),
                    ("rope_shift.glsl", "vkrope.kernels.shift", "ROLE_"),
                    ("freqs.glsl", "vkrope.kernels.generated", "ANGLE_")]


@pytest.mark.parametrize("source, module, prefix", SHARED_CONSTANTS, ids=[s for s, _, _ in SHARED_CONSTANTS])
def test_the_host_writes_the_shaders_named_values(source, module, prefix):
    import importlib

    src = (ROOT / "glsl" / source).read_text()
    glsl = {n: int(v) for n, v in re.findall(rf"^const u?int ({prefix}\w+) = (\d+)u?;", src, re.M)}
    host = {n: v for n, v in vars(importlib.import_module(module)).items() if n.startswith(prefix)}
    assert glsl and glsl == host
