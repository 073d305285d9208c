"""Writing the small GGUF files the from_gguf tests read (gguf.GGUFWriter)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

TABLE = Path(__file__).resolve().parents[2] / "vkrope" / "data" / "gguf_archs.json"
# (a value of each scalar GGUF type, for the keys a test leaves out that llama.cpp's loader requires)
FILLERS = {"UINT32": "add_uint32", "INT32": "add_int32", "FLOAT32": "add_float32", "BOOL": "add_bool"}


def required_keys(arch: str) -> dict[str, str]:
    """The keys llama.cpp's loader requires of every `arch` file (the committed table's `required` "True")
    that bear on no RoPE: none its hparams program reads (a sliding window, sections, a YaRN multiplier),
    nor the base's context_length, embedding_length or block_count, each with the first scalar GGUF type it
    takes. A test writes the others itself, and conditional ones are left to the tests that cross them, so
    the table's conditions are tested, not filled in; tests/models/test_gguf_converter_files.py checks the
    table's required flags against the converter's own files."""
    t = json.loads(TABLE.read_text())
    entry = t["archs"].get(arch, {})
    read_by_program = {s[3] for s in entry.get("hparams") or () if len(s) > 3 and isinstance(s[3], str)}
    reads = {**t["hparams"]["key_types"], **(entry.get("key_types") or {})}
    out = {}
    for key, read in reads.items():
        scalar = [a for a in read["accept"] if a in FILLERS] if read["accept"] != "unknown" else []
        if read["required"] == "True" and scalar and key not in read_by_program \
                and key not in ("context_length", "embedding_length", "block_count"):
            out[key] = scalar[0]
    return out


def add_values(w: Any, kv: dict) -> None:
    """Add `kv` (keys without the arch prefix) to writer `w`: a (type, *arguments) tuple through gguf's
    add_<type> (("int32", 16), ("float64", 1e4)), else by the value's kind (a bool, a str, a list, an int as
    uint32 or a negative one as int32, a float as float32); a None is left out (no file holds one)."""
    for key, value in kv.items():
        full = f"{w.arch}.{key}"
        if isinstance(value, tuple):
            getattr(w, f"add_{value[0]}")(full, *value[1:])
        elif isinstance(value, bool):
            w.add_bool(full, value)
        elif isinstance(value, str):
            w.add_string(full, value)
        elif isinstance(value, list):
            w.add_array(full, value)
        elif isinstance(value, int):
            w.add_uint32(full, value) if value >= 0 else w.add_int32(full, value)
        elif value is not None:
            w.add_float32(full, value)


def finish(w: Any, tensors: Any, path: Any, omit: tuple[str, ...] = (), fill: bool = True) -> str:
    """Add the keys llama.cpp requires that the test left out (1 or 1.0: the files stand for real models,
    which hold them; `omit`: keys to leave out all the same; none where `fill` is False), the rope tensors
    (float32) to writer `w`, write the file and close it; its path."""
    for key, kind in required_keys(w.arch).items() if fill else ():
        full = f"{w.arch}.{key}"
        if full not in w.kv_data[0] and key not in omit:
            getattr(w, FILLERS[kind])(full, 1.0 if kind == "FLOAT32" else True if kind == "BOOL" else 1)
    for name, arr in tensors.items() if isinstance(tensors, dict) else tensors:
        w.add_tensor(name, np.asarray(arr, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return str(path)


KEYED = ("add_array", "add_string", "add_uint32", "add_uint64", "add_int64", "add_float32", "add_float64")  # (key, value) adders


def write(path: Any, arch: str, kv: Any, tensors: Any = (), block_count: bool = True) -> str:
    """A GGUF file as the converter writes it, from gguf.GGUFWriter's adders (("add_head_count", 32), or
    ("add_uint32", (key, value))): with a block_count and a context_length (llama.cpp requires them) unless
    kv gives them, or `block_count` is False; its path."""
    import gguf  # noqa: PLC0415

    w = gguf.GGUFWriter(str(path), arch=arch)
    if block_count and not any(add == "add_block_count" for add, _ in kv):
        kv = [*kv, ("add_block_count", 2)]
    if not any(add == "add_context_length" for add, _ in kv):
        kv = [*kv, ("add_context_length", 4096)]
    for add, value in kv:
        getattr(w, add)(*value) if add in KEYED else getattr(w, add)(value)
    return finish(w, tensors, path, () if block_count else ("block_count",))
