"""Write vkrope/data/gguf_convert.json: how llama.cpp's converter
(convert_hf_to_gguf.py and its conversion/ package) turns a Hugging Face
config into GGUF metadata, for the model families transformers cannot load
without remote code (ChatGLM, InternLM 2, MiniCPM, Baichuan, Qwen 1, ...).
Run it in a separate venv with torch and transformers (it runs the
converter; scripts/llama_converter.py):

    python scripts/gguf_convert_table.py --llama-cpp PATH   # a llama.cpp tree
    python scripts/gguf_convert_table.py --pypi             # llama-cpp-python's sdist

The table holds the converter's own Python, never a hand summary: for each
class registered for a Hugging Face architecture, its bases, its class
attributes, and the source of every method reachable from `__init__`,
`set_gguf_parameters` and `generate_extra_tensors` (vkrope/models/
gguf_convert.py runs them on a config with a whitelisted interpreter);
load_hparams's renames of nested configs; from gguf-py, the metadata key
each writer method sets and the enums the code names; whether transformers
knows the architecture (then its model type is read from transformers'
code, never through the converter); and, measured by running the class's
own modify_tensors on index-coded Q and K weights for the configs of
tests/data/remote_configs, how it reorders each head's rows ("llama":
LlamaModel.permute, so llama.cpp's adjacent pairs are the checkpoint's
rotate-half pairs; "none"; "other" or "unmeasured": refused).
"""

from __future__ import annotations

import ast
import json
import pathlib
import re
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from gguf_arch_table import llama_cpp_root, tree_arguments  # noqa: E402  (the same command line)

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "vkrope" / "data" / "gguf_convert.json"
ENTRY_METHODS = ("__init__", "set_gguf_parameters", "generate_extra_tensors")
PRIMITIVES = {f"add_{k}" for k in ("uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64",
                                    "float32", "float64", "bool", "string", "array")}
ENUMS = ("RopeScalingType", "ExpertGatingFuncType", "LlamaFileType", "GGUFEndian")
# methods that handle tensors, vocabularies or vision towers: never part of the metadata a config gives
SKIP = re.compile(r"tensors$|mxfp4|nvfp4|vocab|vision|projector|tokenizer|^_?repack")


def _name(node: ast.AST) -> str | None:
    """`A` or the last part of `a.b.A`."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _registered(cls: ast.ClassDef) -> list[str]:
    """The architectures of `@ModelBase.register("A", "B")` decorators."""
    out = []
    for d in cls.decorator_list:
        if isinstance(d, ast.Call) and _name(d.func) == "register":
            out += [a.value for a in d.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    return out


def _called_methods(fn: ast.FunctionDef) -> set[str]:
    """Names called as self.X(...), super().X(...) or Class.X(...) in a function."""
    out = set()
    for n in ast.walk(fn):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            out.add(n.func.attr)
    return out


def read_classes(conversion: pathlib.Path) -> tuple[dict, dict, dict]:
    """(classes, architecture -> the classes registered for it, module-level functions) of the package."""
    classes: dict[str, dict] = {}
    archs: dict[str, list[str]] = {}
    functions: dict[str, str] = {}
    for path in sorted(conversion.glob("*.py")):
        text = path.read_text()
        tree = ast.parse(text)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                functions[node.name] = ast.get_source_segment(text, node)
            if not isinstance(node, ast.ClassDef):
                continue
            attrs, methods = {}, {}
            for item in node.body:
                if isinstance(item, ast.Assign) and len(item.targets) == 1 and isinstance(item.targets[0], ast.Name):
                    attrs[item.targets[0].id] = ast.unparse(item.value)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.value is not None:
                    attrs[item.target.id] = ast.unparse(item.value)
                elif isinstance(item, ast.FunctionDef):
                    kind = next((_name(d) for d in item.decorator_list
                                 if _name(d) in ("staticmethod", "classmethod")), None)
                    methods[item.name] = {"source": ast.get_source_segment(text, item), "kind": kind, "node": item}
            classes[node.name] = {"bases": [b for b in map(_name, node.bases) if b], "attrs": attrs,
                                  "methods": methods, "file": f"conversion/{path.name}"}
            for a in _registered(node):
                archs.setdefault(a, []).append(node.name)
    return classes, archs, functions


def mro(classes: dict, name: str) -> list[str]:
    """C3 linearisation over the classes the package defines (others, such as Generic, left out)."""
    def lin(c: str) -> list[str]:
        bases = [b for b in classes[c]["bases"] if b in classes]
        seqs = [lin(b) for b in bases] + [bases]
        out = [c]
        while any(seqs):
            for seq in seqs:
                head = seq[0] if seq else None
                if head and not any(head in s[1:] for s in seqs):
                    break
            else:
                raise ValueError(f"no MRO for {c}")
            out.append(head)
            seqs = [s[1:] if s and s[0] == head else s for s in seqs]
        return out
    return lin(name)


def reachable(classes: dict, names: list[str]) -> dict[str, dict[str, str]]:
    """For each class in `names`: the sources of methods reachable from the entry methods."""
    want = set(ENTRY_METHODS)
    while True:
        more = set()
        for c in names:
            for m, info in classes[c]["methods"].items():
                if m in want and not SKIP.search(m):
                    more |= _called_methods(info["node"])
        if more <= want:
            break
        want |= more
    want = {m for m in want if m in ENTRY_METHODS or not SKIP.search(m)}
    return {c: {m: info["source"] for m, info in classes[c]["methods"].items() if m in want} for c in names}


def load_hparams_renames(conversion: pathlib.Path) -> str:
    """load_hparams's statements after it read the config (the renames of nested configs), as a function."""
    text = (conversion / "base.py").read_text()
    fn = next(n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.FunctionDef) and n.name == "load_hparams")
    body = fn.body[[isinstance(s, ast.Try) for s in fn.body].index(True) + 1:]
    return "def load_hparams_renames(config):\n" + "\n".join("    " + ast.unparse(s).replace("\n", "\n    ")
                                                             for s in body)


def gguf_facts(gguf_py: pathlib.Path) -> dict:
    """From gguf-py: the GGUF name of each MODEL_ARCH, tensor names, enums, and writer method -> key."""
    consts = ast.parse((gguf_py / "constants.py").read_text())
    keys: dict[str, str] = {}
    enums: dict[str, dict] = {}
    names: dict[str, dict] = {}
    for node in consts.body:
        if isinstance(node, ast.ClassDef) and node.name == "Keys":
            for sub in node.body:
                if isinstance(sub, ast.ClassDef):
                    for a in sub.body:
                        if isinstance(a, ast.Assign) and isinstance(a.value, ast.Constant):
                            keys[f"Keys.{sub.name}.{a.targets[0].id}"] = a.value.value
        elif isinstance(node, ast.ClassDef) and (node.name in ENUMS or node.name in ("MODEL_ARCH", "MODEL_TENSOR")):
            members = [a for a in node.body if isinstance(a, ast.Assign)]
            enums[node.name] = {a.targets[0].id: (a.value.value if isinstance(a.value, ast.Constant) else a.targets[0].id)
                                for a in members}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                and node.target.id in ("MODEL_ARCH_NAMES", "TENSOR_NAMES") and isinstance(node.value, ast.Dict):
            names[node.target.id] = {k.attr: v.value for k, v in zip(node.value.keys, node.value.values)
                                     if isinstance(k, ast.Attribute) and isinstance(v, ast.Constant)}
    writer: dict[str, dict] = {}
    wtree = ast.parse((gguf_py / "gguf_writer.py").read_text())
    cls = next(n for n in wtree.body if isinstance(n, ast.ClassDef) and n.name == "GGUFWriter")
    for fn in cls.body:
        if not isinstance(fn, ast.FunctionDef) or not fn.name.startswith("add_"):
            continue
        used = {ast.unparse(n) for n in ast.walk(fn) if isinstance(n, ast.Attribute) and ast.unparse(n) in keys}
        if not used:
            continue
        arch_keys = sorted(keys[u] for u in used if keys[u].startswith("{arch}."))
        if len(arch_keys) != 1:  # (a general.* or tokenizer key: None; several of the model's: unknown)
            writer[fn.name] = {"key": "unknown" if arch_keys else None}
            continue
        enum_value = any(isinstance(n, ast.Attribute) and n.attr == "value" for n in ast.walk(fn))
        kinds = sorted({n.func.attr[len("add_"):] for n in ast.walk(fn) if isinstance(n, ast.Call)
                        and isinstance(n.func, ast.Attribute) and n.func.attr in PRIMITIVES})
        writer[fn.name] = {"key": arch_keys[0][len("{arch}."):], "enum": enum_value, "types": kinds}
    return {"arch_names": names["MODEL_ARCH_NAMES"], "tensor_names": names["TENSOR_NAMES"], "enums": enums,
            "writer": writer}


def measure(root: pathlib.Path, entries: dict) -> None:
    """Each entry's "transformers" (whether transformers has the architecture) and, for the architectures
    of tests/data/remote_configs, "qk_rows" as the converter's modify_tensors reorders Q and K."""
    import llama_converter  # noqa: PLC0415  (torch and transformers: this script's venv)

    cb, gguf = llama_converter.load(root)
    known = llama_converter.transformers_architectures()
    for arch, entry in entries.items():
        entry["transformers"] = arch in known
    for name, config in llama_converter.configs(cb, defaults=False):
        arch = config["architectures"][0]
        obj = llama_converter.instance(cb, gguf, config, arch)
        rows = llama_converter.qk_rows(gguf, obj, llama_converter.metadata(obj)["kv"])
        before = entries[arch]["qk_rows"]
        if before not in ("unmeasured", rows):
            rows = "other"  # (configs of one architecture disagree)
        entries[arch]["qk_rows"] = rows
        print(f"  {name}: {arch} Q / K rows {rows}")


def build(root: pathlib.Path, origin: str) -> dict:
    """The whole table."""
    conversion = root / "conversion"
    classes, archs, functions = read_classes(conversion)
    needed: set[str] = set()
    entries = {}
    for arch, registered in sorted(archs.items()):
        # (the text model's converter: an architecture also registers its vision or audio tower's)
        cls = next((c for c in registered if "TextModel" in mro(classes, c)), None)
        if cls is None:
            continue
        order = mro(classes, cls)
        needed |= set(order)
        entries[arch] = {"class": cls, "qk_rows": "unmeasured"}
    measure(root, entries)
    kept = sorted(needed)
    sources = reachable(classes, kept)
    base_text = (conversion / "base.py").read_text()
    model_type = next(n for n in ast.parse(base_text).body if isinstance(n, ast.ClassDef) and n.name == "ModelType")
    out_classes = {c: {"bases": [b for b in classes[c]["bases"] if b in classes], "attrs": classes[c]["attrs"],
                       "methods": sources[c], "file": classes[c]["file"],
                       "decorators": {m: i["kind"] for m, i in classes[c]["methods"].items()
                                      if i["kind"] and m in sources[c]}}
                   for c in kept}
    return {"source": origin, "license": "llama.cpp: MIT License, Copyright (c) 2023-2024 The ggml authors",
            "architectures": entries, "classes": out_classes,
            "functions": {"get_model_architecture": functions["get_model_architecture"],
                          "load_hparams_renames": load_hparams_renames(conversion)},
            "model_type": {a.targets[0].id: ast.unparse(a.value) for a in model_type.body if isinstance(a, ast.Assign)},
            "gguf": gguf_facts(root / "gguf-py" / "gguf")}


def main() -> int:
    args = tree_arguments(__doc__, OUT)
    with tempfile.TemporaryDirectory() as tmp:
        root, origin = llama_cpp_root(args, pathlib.Path(tmp))
        table = build(root, origin)
    pathlib.Path(args.out).write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    print(f"wrote {args.out}: {len(table['architectures'])} architectures, {len(table['classes'])} classes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
