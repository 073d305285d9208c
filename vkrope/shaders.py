"""The shader variant grid, the one function that names a variant, and the
manifest through which the runtime loads compiled SPIR-V.

`scripts/compile_shaders.py` imports the grid from here, compiles
`glsl/rope.glsl` once per variant and writes `spirv/<name>.spv` plus
`spirv/manifest.json`; the runtime reads only the manifest and the files it
names.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

SOURCE = "rope.glsl"
STORAGES = ("buffer", "texture3d")
# (x dtype, freqs dtype): float32 x uses float32 freqs (float16 freqs are
# widened exactly on the host); float16 x takes either.
DTYPE_PAIRS = (("float32", "float32"), ("float16", "float32"), ("float16", "float16"))
# The push-constant block of glsl/rope.glsl, in order, one uint32 each.
PUSH_CONSTANT_FIELDS = (
    "n_tokens", "pairs_per_row", "token_begin", "token_end", "batch_begin", "batch_end",
    "x_base", "f_base", "n_rot", "n_freq_rows", "flags", "image_height", "image_width",
)
# Bits of the push constant `flags`, passed to the compiler as defines so
# that the shader and the host (vkrope/op.py) read them from this one place.
FLAGS = {"FLAG_INVERSE": 1, "FLAG_POSITIONS": 2}
# Specialization constants of glsl/rope.glsl, by id.
SPEC_CONSTANTS = (
    {"id": 0, "name": "local_size_x", "type": "uint32"},
    {"id": 1, "name": "local_size_y", "type": "uint32"},
    {"id": 2, "name": "ALIGNED", "type": "bool"},
)


def variant_name(storage: str, x_dtype: str, freqs_dtype: str) -> str:
    """The name of one compiled variant, e.g. `rope_buffer_x32_f32`."""
    bits = {"float32": "32", "float16": "16"}
    return f"rope_{storage}_x{bits[x_dtype]}_f{bits[freqs_dtype]}"


def variant_grid() -> list[dict[str, Any]]:
    """Every variant with its preprocessor defines and what it requires."""
    out = []
    for storage in STORAGES:
        for x_dtype, f_dtype in DTYPE_PAIRS:
            defines = ["STORAGE_BUFFER" if storage == "buffer" else "STORAGE_TEXTURE3D"]
            if x_dtype == "float16":
                defines.append("X_HALF")
            if f_dtype == "float16":
                defines.append("F_HALF")
            defines += [f"{name}={value}u" for name, value in FLAGS.items()]
            needs_16bit = f_dtype == "float16" or (storage == "buffer" and x_dtype == "float16")
            image_kind = "storage_image" if storage == "texture3d" else "storage_buffer"
            out.append(
                {
                    "name": variant_name(storage, x_dtype, f_dtype),
                    "storage": storage,
                    "x_dtype": x_dtype,
                    "freqs_dtype": f_dtype,
                    "defines": defines,
                    "bindings": [
                        {"binding": 0, "name": "out", "kind": image_kind},
                        {"binding": 1, "name": "x", "kind": image_kind},
                        {"binding": 2, "name": "freqs", "kind": "storage_buffer"},
                        {"binding": 3, "name": "positions", "kind": "storage_buffer"},
                    ],
                    "specialization_constants": list(SPEC_CONSTANTS),
                    "push_constants": list(PUSH_CONSTANT_FIELDS),
                    "required_features": ["storageBuffer16BitAccess"] if needs_16bit else [],
                    "image_format": (
                        ("rgba16f" if x_dtype == "float16" else "rgba32f") if storage == "texture3d" else None
                    ),
                }
            )
    return out


@dataclass(frozen=True)
class Variant:
    """One compiled shader variant, as the manifest describes it."""

    name: str
    storage: str
    x_dtype: str
    freqs_dtype: str
    binding_kinds: tuple[str, ...]
    push_constant_bytes: int
    required_features: tuple[str, ...]
    spirv: bytes


def spirv_dir() -> Path:
    """Where the compiled modules are: inside the installed package, or the
    repository's spirv/ when running from a checkout."""
    here = Path(__file__).resolve().parent
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
def load_variant(storage: str, x_dtype: str, freqs_dtype: str) -> Variant:
    """Load one variant's SPIR-V and its description through the manifest."""
    name = variant_name(storage, x_dtype, freqs_dtype)
    entry = manifest()["variants"].get(name)
    if entry is None:
        raise FileNotFoundError(f"shader variant {name} is not in {spirv_dir() / 'manifest.json'}")
    return Variant(
        name=name,
        storage=entry["storage"],
        x_dtype=entry["x_dtype"],
        freqs_dtype=entry["freqs_dtype"],
        binding_kinds=tuple(bnd["kind"] for bnd in entry["bindings"]),
        push_constant_bytes=4 * len(entry["push_constants"]),
        required_features=tuple(entry["required_features"]),
        spirv=(spirv_dir() / entry["file"]).read_bytes(),
    )
