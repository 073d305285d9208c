"""The kernel registry: every compiled shader variant, loaded through
spirv/manifest.json, and the one way to pack a kernel's push constants.

Each kernel has a source `glsl/<kernel>.glsl` and its variant grid as data
beside it, `glsl/<kernel>.json` (axes of preprocessor defines, bindings,
push constants, specialization constants, flag bits). `expand_grid` turns a
grid into variants; `scripts/compile_shaders.py` compiles each one and
writes the manifest; the runtime reads only the manifest and the modules it
names.
"""

from __future__ import annotations

import itertools
import json
import struct
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from ..vk.pipeline import STORAGE_BUFFER, STORAGE_IMAGE  # (the binding kinds the grids name; one definition)

QUALIFIERS = {"read": "readonly", "write": "writeonly", "update": ""}  # a binding's access: its GLSL qualifier


def expand_grid(grid: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every variant of one kernel's grid (`glsl/<kernel>.json`): the product
    of its axes less the excluded combinations, each with its name, defines,
    resolved bindings and required device features."""
    axes = grid["axes"]
    names = list(axes)
    out = []
    for values in itertools.product(*(list(axes[a]) for a in names)):
        params = dict(zip(names, values))
        if any(all(params.get(k) == v for k, v in ex.items()) for ex in grid.get("exclude", [])):
            continue
        defines = [d for a in names for d in axes[a][params[a]]]
        defines += [f"{flag}={bit}u" for flag, bit in grid.get("flags", {}).items()]
        bindings, features = [], set()
        for i, bnd in enumerate(grid["bindings"]):
            # A tensor may name the axis that says where it lives (buffer or
            # texture3d; without one, a buffer); its dtype is an axis ("16" / "b16" /
            # "32") or fixed. A table is a buffer of per-call data.
            if bnd["kind"] not in ("tensor", "table") or (bnd["kind"] == "table" and "storage" in bnd):
                raise ValueError(f"{grid['kernel']}: binding {bnd['name']}: kind {bnd['kind']!r} (tensor, or a "
                                 "table, which has no storage axis)")
            if bnd["access"] not in QUALIFIERS or not bnd["name"].isidentifier():
                raise ValueError(f"{grid['kernel']}: binding {bnd['name']!r}: access {bnd['access']!r} (a name "
                                 f"GLSL can paste into BINDING_<name>; access one of {list(QUALIFIERS)})")
            image = "storage" in bnd and params[bnd["storage"]] == "texture3d"
            kind = STORAGE_IMAGE if image else STORAGE_BUFFER
            half = params.get(bnd["dtype"], bnd["dtype"]) in ("16", "b16", "float16", "bfloat16")
            if half and kind == STORAGE_BUFFER:
                features.add("storageBuffer16BitAccess")
            bindings.append({"binding": i, "name": bnd["name"], "kind": kind, "access": bnd["access"],
                             "table": bnd["kind"] == "table"})
            # (its number and access qualifier: the shader declares BINDING_<name> / ACCESS_<name>, so the grid
            # is the one statement of both; an update is read and written, no qualifier)
            defines += [f"BINDING_{bnd['name']}={i}", f"ACCESS_{bnd['name']}={QUALIFIERS[bnd['access']]}"]
        out.append({
            "name": grid["name"].format(**params),
            "kernel": grid["kernel"],
            "params": params,
            "defines": defines,
            "bindings": bindings,
            "push_constants": list(grid["push_constants"]),
            "spec_constants": list(grid["spec_constants"]),
            "flags": dict(grid.get("flags", {})),
            "required_features": sorted(features),
        })
    return out


@dataclass(frozen=True)
class Kernel:
    """One compiled variant, as the manifest describes it."""

    name: str
    kernel: str
    params: tuple[tuple[str, str], ...]
    bindings: tuple[tuple[str, str, str], ...]  # (name, kind, access) in binding order
    tables: tuple[str, ...]  # the bindings that are per-call tables (the rest are tensors)
    push_constants: tuple[str, ...]
    spec_constants: tuple[str, ...]
    flags: tuple[tuple[str, int], ...]
    required_features: tuple[str, ...]
    spirv: bytes = field(repr=False, compare=False)

    @property
    def binding_kinds(self) -> tuple[str, ...]:
        """The descriptor kind of each binding, in binding order."""
        return tuple(kind for _, kind, _ in self.bindings)

    def tensors(self) -> tuple[tuple[str, str], ...]:
        """(name, access) of the tensor bindings (not the tables), in binding order: the grid's, stated once."""
        return tuple((name, access) for name, _, access in self.bindings if name not in self.tables)

    def args(self, **by_name: Any) -> tuple:
        """A launch's arguments (steps.Arg) by binding name, in the grid's binding order, each with its binding's
        access from the grid, which the recorder's barriers follow (every binding exactly once: a positional
        tuple would let two bindings trade places unnoticed)."""
        names = [name for name, _, _ in self.bindings]
        if sorted(by_name) != sorted(names):
            raise AssertionError(f"{self.name}: bindings {names}, the launch gives {sorted(by_name)}")
        return tuple(replace(by_name[name], access=access) for name, _, access in self.bindings)

    @property
    def push_constant_bytes(self) -> int:
        """Size of the push-constant block (one uint32 per field)."""
        return 4 * len(self.push_constants)

    def flag(self, name: str) -> int:
        """The bit of flag `name` (the shader's #define of the same name)."""
        return dict(self.flags)[name]

    def spec_values(self, values: Mapping[str, int]) -> tuple[int, ...]:
        """The specialization constants from values by name, in constant-id
        order: every constant exactly once (a positional tuple would let two
        constants trade places unnoticed)."""
        missing = set(self.spec_constants) - set(values)
        extra = set(values) - set(self.spec_constants)
        if missing or extra:
            raise AssertionError(f"{self.name}: spec constants missing {sorted(missing)}, unknown {sorted(extra)}")
        return tuple(int(values[n]) for n in self.spec_constants)

    def pack(self, values: Mapping[str, int]) -> bytes:
        """The push-constant block from values by field name: every field
        exactly once, each a uint32."""
        missing = set(self.push_constants) - set(values)
        extra = set(values) - set(self.push_constants)
        if missing or extra:
            raise AssertionError(f"{self.name}: push constants missing {sorted(missing)}, unknown {sorted(extra)}")
        return struct.pack(f"<{len(self.push_constants)}I", *(values[n] for n in self.push_constants))


def spirv_dir() -> Path:
    """Where the compiled modules are: inside the installed package, or the
    repository's spirv/ when running from a checkout."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "spirv", here.parent / "spirv"):
        if (candidate / "manifest.json").is_file():
            return candidate
    raise FileNotFoundError(
        f"vkrope's compiled shaders are missing (looked in {here / 'spirv'} and {here.parent / 'spirv'}); "
        "reinstall vkrope or run scripts/compile_shaders.py"
    )


@lru_cache(maxsize=1)
def manifest() -> dict[str, Any]:
    """The parsed spirv/manifest.json."""
    return json.loads((spirv_dir() / "manifest.json").read_text())


@lru_cache(maxsize=None)
def load(name: str) -> Kernel:
    """Load one variant's SPIR-V and description through the manifest."""
    entry = manifest()["variants"].get(name)
    if entry is None:
        raise FileNotFoundError(f"shader variant {name} is not in {spirv_dir() / 'manifest.json'}")
    return Kernel(
        name=name,
        kernel=entry["kernel"],
        params=tuple(sorted(entry["params"].items())),
        bindings=tuple((b["name"], b["kind"], b["access"]) for b in entry["bindings"]),
        tables=tuple(b["name"] for b in entry["bindings"] if b["table"]),
        push_constants=tuple(entry["push_constants"]),
        spec_constants=tuple(entry["spec_constants"]),
        flags=tuple(sorted(entry["flags"].items())),
        required_features=tuple(entry["required_features"]),
        spirv=(spirv_dir() / entry["file"]).read_bytes(),
    )


@lru_cache(maxsize=None)
def find(kernel: str, **params: str) -> Kernel:
    """The variant of `kernel` whose grid parameters are `params`."""
    want = {k: str(v) for k, v in params.items()}
    for name, entry in manifest()["variants"].items():
        if entry["kernel"] == kernel and entry["params"] == want:
            return load(name)
    raise FileNotFoundError(f"no variant of kernel {kernel} with {want} in {spirv_dir() / 'manifest.json'}")
