"""Imports point one way (docs/ARCHITECTURE.md): API -> front ends (ops)
-> kernels -> runtime -> Vulkan layer -> binding, with the frequency specs and model
readers as data, and the benchmarks outside the core. Read from each
module's own import statements, relative ones resolved."""

from __future__ import annotations

import ast
import pathlib
import re
import sys

import pytest

PKG = pathlib.Path(__file__).resolve().parents[2] / "vkrope"


def _module(path: pathlib.Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: pathlib.Path) -> set[str]:
    """Every vkrope module `path` imports (at any depth of its code)."""
    name = _module(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("vkrope")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.startswith("vkrope"):  # (what it names, under the module: `from .. import errors` is
                # vkrope.errors, not the package vkrope itself)
                out |= {f"{mod}.{a.name}" for a in node.names}
    return out


MODULES = {_module(p): p for p in PKG.rglob("*.py")}


def _under(mod: str, *prefixes: str) -> bool:
    return any(mod == p or mod.startswith(p + ".") for p in prefixes)


def _violations(sources: list[str], forbidden: tuple[str, ...], allowed: tuple[str, ...] = ()) -> list[str]:
    return sorted(f"{m} imports {i}" for m in sources for i in imports_of(MODULES[m])
                  if _under(i, *forbidden) and not _under(i, *allowed))


def test_the_walker_sees_imports():
    """The check can fail: device.py does import the ops, the kernels and the runtime."""
    found = imports_of(MODULES["vkrope.device"])
    assert all(any(_under(i, layer) for i in found) for layer in ("vkrope.ops", "vkrope.kernels", "vkrope.runtime"))


def test_nothing_in_the_core_imports_the_benchmarks():
    core = [m for m in MODULES if not _under(m, "vkrope.bench", "vkrope.__main__", "vkrope.cli")]
    assert _violations(core, ("vkrope.bench",)) == []


# What each layer may import besides itself (an allow-list: a new module of vkrope is below none of them until
# named here). The front ends and the shared checks reach the runtime for its array type and dtypes only; the
# kernels name no spec class (a spec reaches a kernel lowered, ops/lowering.py); freqs.py and models/ are data the
# ops read (models/chart.py draws through charts.py, matplotlib's one place).
SPECS = ("vkrope.freqs", "vkrope.spec_checks", "vkrope.yarn", "vkrope.nd_freqs")  # the frequency specs' modules
MAY_IMPORT = {
    "vkrope.errors": (),
    "vkrope.words": (),
    "vkrope.exact_math": (),
    "vkrope.files": ("vkrope.errors",),
    "vkrope.vk": ("vkrope.errors",),
    "vkrope.runtime": ("vkrope.vk", "vkrope.errors"),
    "vkrope.kernels": ("vkrope.runtime", "vkrope.errors"),
    "vkrope.spec_checks": ("vkrope.words", "vkrope.runtime.dtypes", "vkrope.errors"),
    "vkrope.yarn": ("vkrope.spec_checks", "vkrope.words", "vkrope.runtime.dtypes", "vkrope.errors"),
    "vkrope.freqs": ("vkrope.spec_checks", "vkrope.yarn", "vkrope.nd_freqs", "vkrope.exact_math", "vkrope.words",
                     "vkrope.runtime.dtypes", "vkrope.errors"),
    "vkrope.nd_freqs": ("vkrope.freqs", "vkrope.spec_checks", "vkrope.exact_math", "vkrope.words",
                        "vkrope.runtime.dtypes", "vkrope.errors"),
    "vkrope.models": (*SPECS, "vkrope.exact_math", "vkrope.words", "vkrope.runtime.dtypes", "vkrope.errors",
                      "vkrope.files", "vkrope.charts"),
    "vkrope.arguments": (*SPECS, "vkrope.words", "vkrope.runtime.array", "vkrope.runtime.dtypes",
                         "vkrope.errors"),
    "vkrope.ops": ("vkrope.kernels", "vkrope.models", *SPECS, "vkrope.words", "vkrope.arguments",
                   "vkrope.runtime.array", "vkrope.runtime.dtypes", "vkrope.errors"),
    # The API layer's reach below the ops, each module as docs/ARCHITECTURE.md says it owns or reports:
    "vkrope.owner": ("vkrope.arguments", "vkrope.words", "vkrope.errors", "vkrope.runtime.array_memory",
                     "vkrope.runtime.array", "vkrope.runtime.engine", "vkrope.runtime.imports",
                     "vkrope.runtime.left_running", "vkrope.runtime.layout", "vkrope.runtime.dtypes",
                     "vkrope.vk.context", "vkrope.vk.instance"),
    "vkrope.device": ("vkrope.arguments", "vkrope.errors", "vkrope.ops", "vkrope.kernels", "vkrope.owner",
                      "vkrope.runtime.array", "vkrope.runtime.execute", "vkrope.runtime.kept_calls",
                      "vkrope.runtime.operator", "vkrope.vk.instance", "vkrope.vk.commands"),
    "vkrope.api": ("vkrope.arguments", "vkrope.errors", "vkrope.ops", "vkrope.device", "vkrope.owner",
                   "vkrope.runtime.array"),
}


@pytest.mark.parametrize("layer", sorted(MAY_IMPORT))
def test_imports_point_one_way(layer):
    """Each layer imports itself and what MAY_IMPORT lists, nothing else of vkrope."""
    mods = [m for m in MODULES if _under(m, layer)]
    assert mods, f"no module under {layer}"
    wrong = sorted(f"{m} imports {i}" for m in mods for i in imports_of(MODULES[m])
                   if not _under(i, layer, *MAY_IMPORT[layer]))
    assert wrong == []


def test_the_errors_are_a_leaf():
    """errors.py, which every layer raises from, imports nothing of vkrope."""
    assert imports_of(MODULES["vkrope.errors"]) == set()


ORACLES = sorted((PKG.parent / "tests" / "oracles").glob("*.py"))


def test_only_the_vulkan_layer_names_vulkan():
    """Nothing outside vkrope/vk/ names a Vulkan enum, result or function (VK_..., vk...) or imports the binding:
    the runtime speaks the Vulkan layer's words (vk/sync.py's stages and layouts, resources.rgba_format)."""
    found = []
    for name, path in MODULES.items():
        if name.startswith("vkrope.vk"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            word = node.attr if isinstance(node, ast.Attribute) else \
                node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""
            if re.fullmatch(r"VK_[A-Z0-9_]+|vk[A-Z]\w+", word):
                found.append(f"{name}: {word}")
        found += [f"{name}: imports the binding" for i in imports_of(path) if _under(i, "vkrope.vk.binding")]
    assert not found


def test_the_oracles_share_no_code_with_vkrope():
    """tests/oracles/*.py import numpy, ml_dtypes, the standard library and each other, never vkrope (or a test
    helper that does), nor import by name at run time (importlib, __import__): an oracle that called vkrope
    would agree with it by construction."""
    assert len(ORACLES) >= 5
    allowed = set(sys.stdlib_module_names) - {"importlib"} | {"numpy", "ml_dtypes", "__future__"} | \
        {p.stem for p in ORACLES}
    for path in ORACLES:
        text = path.read_text()
        assert "__import__" not in text and not re.search(r"""["']vkrope""", text), path.name
        for node in ast.walk(ast.parse(text)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for name in names:
                assert name.split(".")[0] in allowed, f"{path.name} imports {name}"


def test_size_rules():
    """The house rules (CONTRIBUTING.md): a class at most 250 lines, a
    function at most 80, in the package, its scripts and its tests alike."""
    too_long = []
    for path in [p for top in ("vkrope", "scripts", "tests") for p in (PKG.parent / top).rglob("*.py")]:
        for n in ast.walk(ast.parse(path.read_text())):
            size = getattr(n, "end_lineno", 0) - getattr(n, "lineno", 0) + 1
            if (isinstance(n, ast.ClassDef) and size > 250) or \
                    (isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and size > 80):
                too_long.append(f"{path.relative_to(PKG.parent)}:{n.lineno} {n.name} ({size} lines)")
    assert not too_long
