"""The ONNX backend conformance cases for ``RotaryEmbedding``, read from disk.

ONNX's backend test data for an operator lives in
``onnx/backend/test/data/node/test_rotary_embedding*/`` (``model.onnx`` plus
``test_data_set_0/input_<j>.pb`` and ``output_0.pb``). The onnx source tree
holds it; the onnx 1.23.2 wheel and sdist on PyPI ship no ``data/node``
directory at all, only the generator
(``onnx/backend/test/case/node/rotaryembedding.py``) and the tool that writes
the data (``onnx/backend/test/cmd_tools.py generate-data``).

So :func:`onnx_rotary_cases` reads the installed package's data directories
when they exist, and otherwise writes them the way ``generate-data`` does
(same layout, same serialisation through ``onnx.numpy_helper``) from the
installed generator into a temporary directory and reads those. The
generator seeds ``np.random.seed(0)`` before every export, so the values are
reproducible. :func:`onnx_rotary_cases_origin` says which happened.

Each case's ``_expanded`` twin (the same data run through the schema's
function body instead of the single node) is included; its attributes are
those of the single-node model it expands.
"""

from __future__ import annotations

import atexit
import functools
import importlib
import sys
import shutil
import tempfile
from pathlib import Path
from typing import NamedTuple

import numpy as np

OP_TYPE = "RotaryEmbedding"
PREFIX = "test_rotary_embedding"


class OnnxCase(NamedTuple):
    name: str
    inputs: dict  # ONNX formal input name (X, cos_cache, sin_cache, position_ids) -> ndarray
    attributes: dict  # attribute name -> python value, only those set on the node
    expected: np.ndarray


def _installed_data_root() -> Path:
    import onnx

    return Path(onnx.__file__).parent / "backend" / "test" / "data" / "node"


def _case_dirs(root: Path) -> list[Path]:
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and p.name.startswith(PREFIX) and (p / "model.onnx").is_file())


def _write_generated(root: Path) -> None:
    """Run onnx's shipped generator for RotaryEmbedding and write its cases
    in the ``cmd_tools.py generate-data`` layout."""
    import onnx.backend.test.case.node as node_cases
    from onnx import numpy_helper

    # Importing the module runs its exports (the metaclass seeds np.random
    # with 0 before each one) and appends them to the package's case list.
    importlib.import_module("onnx.backend.test.case.node.rotaryembedding")
    cases = [c for c in getattr(node_cases, "_NodeTestCases", []) if c.name.startswith(PREFIX)]
    if not cases:  # the private list moved: the public path (imports every op's cases)
        cases = [c for c in node_cases.collect_testcases(OP_TYPE) if c.name.startswith(PREFIX)]
    for case in cases:
        d = root / case.name
        for i, (inputs, outputs) in enumerate(case.data_sets):
            ds = d / f"test_data_set_{i}"
            ds.mkdir(parents=True, exist_ok=True)
            for j, arr in enumerate(inputs):
                name = case.model.graph.input[j].name
                (ds / f"input_{j}.pb").write_bytes(numpy_helper.from_array(arr, name).SerializeToString())
            for j, arr in enumerate(outputs):
                name = case.model.graph.output[j].name
                (ds / f"output_{j}.pb").write_bytes(numpy_helper.from_array(arr, name).SerializeToString())
        (d / "model.onnx").write_bytes(case.model.SerializeToString())


def _read_tensor(path: Path) -> np.ndarray:
    from onnx import TensorProto, numpy_helper

    t = TensorProto()
    t.ParseFromString(path.read_bytes())
    return numpy_helper.to_array(t)


def _read_case(d: Path) -> tuple[str, list, list | None, dict | None, list[np.ndarray], list[np.ndarray]]:
    import onnx
    from onnx import helper

    model = onnx.load(str(d / "model.onnx"))
    graph = model.graph
    attrs = None
    node_inputs = None
    if len(graph.node) == 1 and graph.node[0].op_type == OP_TYPE:
        node = graph.node[0]
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        node_inputs = list(node.input)
    ds = d / "test_data_set_0"
    ins = [_read_tensor(ds / f"input_{j}.pb") for j in range(len(graph.input))]
    outs = [_read_tensor(ds / f"output_{j}.pb") for j in range(len(graph.output))]
    return d.name, [i.name for i in graph.input], node_inputs, attrs, ins, outs


def _formal_names() -> list[str]:
    import onnx.defs

    return [i.name for i in onnx.defs.get_schema(OP_TYPE, domain="").inputs]


@functools.lru_cache(maxsize=1)
def _load() -> tuple[str, tuple[OnnxCase, ...], dict[str, Path]]:
    root = _installed_data_root()
    dirs = _case_dirs(root)
    if dirs:
        origin = f"installed onnx package data: {root}"
    else:
        gen_root = Path(tempfile.mkdtemp(prefix="onnx_rotary_cases_"))
        atexit.register(shutil.rmtree, gen_root, True)
        _write_generated(gen_root)
        dirs = _case_dirs(gen_root)
        origin = (
            f"regenerated by the installed onnx's generator (onnx/backend/test/case/node/rotaryembedding.py) "
            f"into {gen_root}; the installed package ships no {root}"
        )
    formal = _formal_names()
    read = [_read_case(d) for d in dirs]
    by_name = {r[0]: r for r in read}
    cases = []
    for name, graph_inputs, node_inputs, attrs, ins, outs in read:
        if attrs is None:  # an _expanded model: take the single-node twin's node
            base = by_name.get(name.removesuffix("_expanded"))
            if base is None or base[3] is None:
                raise RuntimeError(f"{name}: no single-node model to take attributes from")
            node_inputs, attrs = base[2], base[3]
        assert node_inputs is not None
        # node input position -> formal name; graph inputs are fed by name
        feed = dict(zip(graph_inputs, ins))
        inputs = {formal[p]: feed[n] for p, n in enumerate(node_inputs) if n}
        if len(outs) != 1:
            raise RuntimeError(f"{name}: expected one output, found {len(outs)}")
        cases.append(OnnxCase(name, inputs, attrs, outs[0]))
    if not cases:
        raise RuntimeError(f"no {PREFIX}* cases found ({origin})")
    return origin, tuple(cases), {d.name: d for d in dirs}


def onnx_rotary_cases() -> list[OnnxCase]:
    """Every ``test_rotary_embedding*`` backend case: ``(name, inputs,
    attributes, expected)`` with ``inputs`` keyed by the schema's input names
    (``X``, ``cos_cache``, ``sin_cache``, ``position_ids``)."""
    return list(_load()[1])


def onnx_rotary_cases_origin() -> str:
    """Where :func:`onnx_rotary_cases` found its cases."""
    return _load()[0]


def onnx_rotary_case_model(name: str):
    """The ``model.onnx`` (an ``onnx.ModelProto``) of the case called ``name``."""
    import onnx

    return onnx.load(str(_load()[2][name] / "model.onnx"))


if __name__ == "__main__":  # a listing, for reports
    for c in onnx_rotary_cases():
        shapes = {k: (v.shape, str(v.dtype)) for k, v in c.inputs.items()}
        print(c.name, c.attributes, shapes, c.expected.dtype)
    print(onnx_rotary_cases_origin(), "-", len(onnx_rotary_cases()), "cases", file=sys.stderr)
