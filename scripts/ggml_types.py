#!/usr/bin/env python3
"""Write vkrope/data/ggml_types.json: GGML's tensor types (the number a GGUF
file stores, the name, the values per block and the bytes per block) as
llama.cpp's own tree states them, in gguf-py/gguf/constants.py
(`GGMLQuantizationType` and `GGML_QUANT_SIZES`, kept beside ggml.c's
type_traits), never a hand list; and the rest of the file format
vkrope/models/gguf_file.py reads: the metadata value types (constants.py's
`GGUFValueType`, each with gguf_writer.py's struct code), the default
alignment (`GGUF_DEFAULT_ALIGNMENT`), the longest tensor name (ggml.h's
`GGML_MAX_NAME`) and gguf.cpp's bounds on a string's and an array's length.

    python scripts/ggml_types.py --llama-cpp PATH   # a llama.cpp tree

vkrope/models/gguf_file.py reads a file's tensor table with it, as
llama.cpp's gguf_init does: a type llama.cpp does not have is refused, each
tensor's bytes are its values / block size x bytes per block. (The `gguf`
package on PyPI lags llama.cpp: 0.19.0 has no Q2_0 and gives Q8_1 40 bytes
a block where ggml's is 36.) Use the tree scripts/gguf_arch_table.py read
(vkrope/data/gguf_archs.json's `source`).
"""

from __future__ import annotations

import argparse
import ast
import json
import operator
import pathlib
import re

OUT = pathlib.Path(__file__).resolve().parent.parent / "vkrope" / "data" / "ggml_types.json"
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv}


def _int(node: ast.AST, names: dict[str, int]) -> int:
    """An integer expression of the constants file (literals, + - * //, its own integer names)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_int(node.left, names), _int(node.right, names))
    raise ValueError(f"not an integer expression this script reads: {ast.unparse(node)}")


def read(constants: pathlib.Path) -> dict[str, list]:
    """{type number: [name, block size, bytes per block]} from gguf-py's constants.py."""
    tree = ast.parse(constants.read_text())
    names: dict[str, int] = {}
    numbers: dict[str, int] = {}
    sizes: ast.Dict | None = None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "GGMLQuantizationType":
            numbers = {t.id: _int(n.value, {}) for n in node.body if isinstance(n, ast.Assign)
                       for t in n.targets if isinstance(t, ast.Name)}
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and value is not None:
            if target.id == "GGML_QUANT_SIZES" and isinstance(value, ast.Dict):
                sizes = value
            else:
                try:
                    names[target.id] = _int(value, names)
                except ValueError:
                    pass
    if not numbers or sizes is None:
        raise SystemExit(f"{constants}: no GGMLQuantizationType or GGML_QUANT_SIZES")
    out: dict[str, list] = {}
    for key, value in zip(sizes.keys, sizes.values):
        if not (isinstance(key, ast.Attribute) and isinstance(value, ast.Tuple) and len(value.elts) == 2):
            raise SystemExit(f"{constants}: an entry of GGML_QUANT_SIZES this script does not read")
        block, size = (_int(e, names) for e in value.elts)
        out[str(numbers[key.attr])] = [key.attr, block, size]
    missing = sorted(set(numbers) - {v[0] for v in out.values()})
    if missing:
        raise SystemExit(f"{constants}: types without sizes: {missing}")
    return dict(sorted(out.items(), key=lambda kv: int(kv[0])))


def _class_ints(tree: ast.Module, name: str) -> dict[str, int]:
    """The integer members of the class `name` (an IntEnum) of a parsed module."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return {t.id: _int(n.value, {}) for n in node.body if isinstance(n, ast.Assign)
                    for t in n.targets if isinstance(t, ast.Name)}
    raise SystemExit(f"no class {name}")


def value_types(gguf_py: pathlib.Path) -> dict[str, list]:
    """{value type number: [name, struct code or None (a string, an array)]}: constants.py's GGUFValueType,
    gguf_writer.py's `_simple_value_packing`."""
    numbers = _class_ints(ast.parse((gguf_py / "constants.py").read_text()), "GGUFValueType")
    codes: dict[str, str] = {}
    for node in ast.walk(ast.parse((gguf_py / "gguf_writer.py").read_text())):
        target = node.targets[0] if isinstance(node, ast.Assign) else None
        if isinstance(target, ast.Name) and target.id == "_simple_value_packing" and isinstance(node.value, ast.Dict):
            codes = {k.attr: v.value for k, v in zip(node.value.keys, node.value.values)
                     if isinstance(k, ast.Attribute) and isinstance(v, ast.Constant)}
    if not codes or set(codes) - set(numbers):
        raise SystemExit(f"{gguf_py}: no _simple_value_packing of GGUFValueType members")
    uncoded = sorted(set(numbers) - set(codes))
    if uncoded != ["ARRAY", "STRING"]:  # (gguf_file.py reads those two itself; any other needs its code)
        raise SystemExit(f"{gguf_py}: value types without a struct code: {uncoded}; gguf_file.py reads only ARRAY "
                         "and STRING so")
    return {str(n): [name, codes.get(name)] for name, n in sorted(numbers.items(), key=lambda kv: kv[1])}


def c_define(path: pathlib.Path, name: str) -> int:
    """The integer a C header or source #defines `name` as (literals, + - * //, parentheses)."""
    match = re.search(rf"^\s*#\s*define\s+{name}\s+(.+?)\s*(//.*)?$", path.read_text(), re.M)
    if match is None:
        raise SystemExit(f"{path}: no #define {name}")
    try:
        return _int(ast.parse(match.group(1), mode="eval").body, {})
    except (SyntaxError, ValueError) as exc:
        raise SystemExit(f"{path}: #define {name} {match.group(1)!r} is not an expression this script reads ({exc})")


def file_format(tree: pathlib.Path) -> dict[str, object]:
    """What gguf_file.py reads of the format besides the tensor types, from the tree's own files."""
    names: dict[str, int] = {}
    for node in ast.parse((tree / "gguf-py" / "gguf" / "constants.py").read_text()).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            try:
                names[node.targets[0].id] = _int(node.value, names)
            except ValueError:
                pass
    return {"value_types": value_types(tree / "gguf-py" / "gguf"),
            "default_alignment": names["GGUF_DEFAULT_ALIGNMENT"],
            "max_name": c_define(tree / "ggml" / "include" / "ggml.h", "GGML_MAX_NAME"),
            "max_string_length": c_define(tree / "ggml" / "src" / "gguf.cpp", "GGUF_MAX_STRING_LENGTH"),
            "max_array_elements": c_define(tree / "ggml" / "src" / "gguf.cpp", "GGUF_MAX_ARRAY_ELEMENTS")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--llama-cpp", required=True, type=pathlib.Path, help="a llama.cpp tree")
    ap.add_argument("--source", default="a llama.cpp tree",
                    help="where the tree came from, for the table (gguf_archs.json's source, say)")
    args = ap.parse_args()
    types = read(args.llama_cpp / "gguf-py" / "gguf" / "constants.py")
    rows = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in types.items())  # (one type a line)
    fmt = file_format(args.llama_cpp)
    rest = "".join(f' {json.dumps(k)}: {json.dumps(v)},\n' for k, v in fmt.items())
    OUT.write_text(f'{{\n "generated_by": "scripts/ggml_types.py",\n "source": {json.dumps(args.source + " gguf-py/gguf/constants.py, gguf_writer.py, ggml/include/ggml.h, ggml/src/gguf.cpp")},\n'
                   f'{rest} "types": {{\n{rows}\n }}\n}}\n')
    json.loads(OUT.read_text())  # (what was written reads back)
    print(f"{len(types)} GGML types -> {OUT}")


if __name__ == "__main__":
    main()
