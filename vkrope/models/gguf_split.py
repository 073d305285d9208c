"""The other files of a split GGUF model, found and checked as llama.cpp's
model loader does (src/llama-model-loader.cpp: llama_get_list_splits, and
src/llama.cpp's llama_split_prefix / llama_split_path, files named
`PREFIX-%05d-of-%05d.gguf`): a split model is loaded from its first file,
whose metadata is the model's; every file's tensors are the model's (a
rope factor tensor may be in any of them), none named twice, as many as
the first file's `split.tensors.count`."""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np

from . import gguf_file


def _number(p: str, g: gguf_file.GgufFile, key: str, kind: str) -> int | None:
    """A split key of the GGUF type llama.cpp's loader reads it as (its get_key refuses another), or None."""
    if key not in g.fields:
        return None
    if g.type_name(key) != kind:
        raise ValueError(f"path: {p!r}: {key} is a GGUF {g.type_name(key)}; llama.cpp reads it as {kind} and "
                         "refuses the file otherwise")
    return int(g.value(key))


def other_files(p: str, g: gguf_file.GgufFile) -> list[str]:
    """The paths of a split model's other files, in order (none for a whole model); a ValueError where
    llama.cpp refuses to load the model from `p` (not its first file, or a name it cannot find the others by)."""
    count = _number(p, g, "split.count", "UINT16")
    if count is None or count <= 1:
        return []
    no = _number(p, g, "split.no", "UINT16")
    if no is None:
        raise ValueError(f"path: {p!r} is a split model ({count} files) without split.no (llama.cpp requires it)")
    if no != 0:
        raise ValueError(f"path: {p!r} is file {no + 1} of a split model (split.no {no}); llama.cpp loads a split "
                         "model from its first file: pass that")
    suffix = f"-{1:05d}-of-{count:05d}.gguf"
    if len(p) <= len(suffix) or not p.endswith(suffix):
        raise ValueError(f"path: {p!r} is the first of a split model's {count} files; llama.cpp finds the others "
                         f"by its name, which must end in {suffix!r}")
    return [f"{p[:-len(suffix)]}-{i + 1:05d}-of-{count:05d}.gguf" for i in range(1, count)]


def add_tensors(p: str, q: str, no: int, names: set[str], wanted: tuple[str, ...],
                read: Callable[[gguf_file.GgufFile, gguf_file.Tensor], np.ndarray], into: dict[str, np.ndarray]) -> None:
    """Split file `q` (file `no + 1` of the model whose first file is `p`): its tensors' names added to
    `names` (a ValueError for one named twice, as llama.cpp's loader refuses it), and those in `wanted` read
    (`read`) into `into`."""
    if not os.path.isfile(q):
        raise ValueError(f"path: {p!r}: its split file {q!r} is missing (llama.cpp loads every file of a split "
                         "model)")
    try:
        with gguf_file.opened(q) as h:
            got = _number(p, h, "split.no", "UINT16")
            if got != no:
                raise ValueError(f"path: {p!r}: its split file {q!r} has split.no {got}, expected {no}")
            for t in h.tensors:
                if t.name in names:
                    raise ValueError(f"path: {p!r}: tensor {t.name!r} is in two of its split files (llama.cpp "
                                     "refuses the model)")
                names.add(t.name)
                if t.name in wanted:
                    try:
                        into[t.name] = read(h, t)
                    except ValueError as exc:  # (a tensor llama.cpp's rope does not take, in a file it reads)
                        raise ValueError(f"path: {p!r}: in its split file {str(exc).removeprefix('path: ')}") from None
    except (OSError, ValueError) as exc:
        if isinstance(exc, ValueError) and str(exc).startswith(f"path: {p!r}"):
            raise
        if isinstance(exc, gguf_file.PastLimit):  # (vkrope's bound, not llama.cpp's: the file may be one it reads)
            raise ValueError(f"path: {p!r}: its split file {q!r}: {exc}") from None
        raise ValueError(f"path: {p!r}: its split file {q!r} is not a GGUF file llama.cpp reads "
                         f"({type(exc).__name__}: {exc})") from None


def check_count(p: str, g: gguf_file.GgufFile, n: int) -> None:
    """A split model's tensors, `n` over every file, as many as its first file's split.tensors.count."""
    count = _number(p, g, "split.count", "UINT16")
    if count is None or count <= 1:
        return
    want = _number(p, g, "split.tensors.count", "INT32")
    if want is None:
        raise ValueError(f"path: {p!r} is a split model without split.tensors.count (llama.cpp requires it)")
    if want != n:
        raise ValueError(f"path: {p!r}: split.tensors.count is {want}, and its {count} files hold {n} tensors "
                         "(llama.cpp refuses the model)")

