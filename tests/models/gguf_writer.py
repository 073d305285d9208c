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


def finish(w: Any, tensors: Any, path: Any, omit: tuple[str, ...] = ()) -> str:
    """Add the keys llama.cpp requires that the test left out (1 or 1.0: the files stand for real models,
    which hold them; `omit`: keys to leave out all the same), the rope tensors (float32) to writer `w`,
    write the file and close it; its path."""
    for key, kind in required_keys(w.arch).items():
        full = f"{w.arch}.{key}"
        if full not in w.kv_data[0] and key not in omit:
            getattr(w, FILLERS[kind])(full, 1.0 if kind == "FLOAT32" else True if kind == "BOOL" else 1)
    for name, arr in tensors:
        w.add_tensor(name, np.asarray(arr, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return str(path)
