"""The public operations are written once, in their front ends
(vkrope/ops/), and bound to `Device` and to the module in one line each
(ops/call.py `bind`): what a user and their tools see of them must be the
front end's signature, hints and docstring, returning the call's result,
found where it is bound."""

from __future__ import annotations

import importlib
import inspect
import pickle
import pkgutil
import typing

import numpy as np
import pytest

import vkrope
import vkrope.ops
from vkrope.ops.call import Call


def _front_ends() -> list:
    """Every public operation a front end module (vkrope/ops/, but call.py's builders) defines: a public
    function returning a `Call`. Found, not listed, so that a new front end is checked without an edit here."""
    found = []
    for info in pkgutil.iter_modules(vkrope.ops.__path__):
        mod = importlib.import_module(f"vkrope.ops.{info.name}")
        found += [f for name, f in vars(mod).items() if inspect.isfunction(f) and f.__module__ == mod.__name__
                  and not name.startswith("_") and info.name != "call"
                  and typing.get_origin(typing.get_type_hints(f).get("return")) is Call]
    return found


FRONT_ENDS = _front_ends()


@pytest.mark.parametrize("front_end", FRONT_ENDS, ids=lambda f: f.__name__)
def test_module_function_and_method_show_the_front_end(front_end):
    name = front_end.__name__
    fn, method = getattr(vkrope, name), getattr(vkrope.Device, name)
    want = inspect.signature(front_end)
    for bound, extra in ((fn, []), (method, ["self"])):
        sig = inspect.signature(bound)
        assert list(sig.parameters) == extra + list(want.parameters), name
        assert [p.default for p in sig.parameters.values()][len(extra):] == [p.default for p in
                                                                             want.parameters.values()]
        assert bound.__doc__ == front_end.__doc__ and bound.__doc__
        hints = typing.get_type_hints(bound)  # resolvable where it is bound
        assert typing.get_origin(typing.get_type_hints(front_end)["return"]) is not None
        assert "Call" not in str(hints["return"]) and "Call" not in str(sig.return_annotation), name
    assert pickle.loads(pickle.dumps(fn)) is fn  # found where it is bound
    assert pickle.loads(pickle.dumps(method)) is method
    assert fn.__module__ == "vkrope.api" and method.__qualname__ == f"Device.{name}"


def test_the_module_function_checks_before_any_device(monkeypatch):
    """A bad argument is the front end's TypeError, raised before a default
    device is made (a machine without Vulkan gets it too)."""
    made = []
    monkeypatch.setattr(vkrope.api, "default_device", lambda: made.append(1))
    with pytest.raises(TypeError, match="freqs must be"):
        vkrope.apply(np.zeros((2, 4), np.float32), "not freqs")
    assert made == []


def test_type_checkers_see_the_result_of_x_kind(tmp_path, mypy):
    """Through ParamSpec the bound functions keep the front end's hints: a
    numpy x gives a numpy result, a DeviceArray a DeviceArray, and an unknown
    keyword is an error, for the module function and the method alike; a misspelt name of the module is
    one too (its lazy names come from a __getattr__ type checkers do not see)."""
    revealed, out = _revealed(tmp_path, mypy,
        "x = np.ones((1, 4, 8), np.float32)\n"
        "reveal_type(vkrope.apply(x, x[0]))\n"
        "dev = vkrope.Device()\n"
        "reveal_type(dev.apply(dev.asarray(x), x[0]))\n"
        "reveal_type(dev.apply_rotary_emb(x, x, x, x))\n"
        "vkrope.rotary_embedding(x, x, x, bogus=1)\n"
        "reveal_type(vkrope.bfloat16)\n"
        "vkrope.aply(x, x[0])\n")
    assert len(revealed) == 4, out
    assert revealed[0].startswith('"numpy.ndarray') and "DeviceArray" not in revealed[0]
    assert revealed[1] == '"vkrope.runtime.array.DeviceArray"'
    assert revealed[2].startswith('"tuple[numpy.ndarray'), revealed[2]
    assert 'Unexpected keyword argument "bogus"' in out
    assert revealed[3].startswith('"type['), revealed[3]  # (the lazy names are declared, any other is missing)
    assert 'Module has no attribute "aply"' in out, out


def _revealed(tmp_path, mypy, source: str) -> tuple[list[str], str]:
    """mypy's revealed types of `source` (a module using vkrope), in order, and its whole report."""
    src = tmp_path / "use.py"
    src.write_text("import numpy as np\nimport vkrope\n" + source)
    res = mypy(src)
    return [line.split("Revealed type is ")[1] for line in res.stdout.splitlines() if "Revealed type" in line], \
        res.stdout


def test_type_checkers_see_a_model_rope_where_no_layer_is_named(tmp_path, mypy):
    """from_hf / from_gguf naming no layer give a ModelRope (or raise NoRopeLayers), so the documented
    `vkrope.from_hf(path).cos_sin(...)` checks; naming a layer or a layer type may give None."""
    revealed, out = _revealed(tmp_path, mypy,
        "reveal_type(vkrope.from_hf({'model_type': 'llama'}))\n"
        "reveal_type(vkrope.from_hf('config.json', like='llama', angle='exact'))\n"
        "reveal_type(vkrope.from_hf({'model_type': 'llama'}, layer=0))\n"
        "reveal_type(vkrope.from_hf({'model_type': 'gemma3'}, layer_type='sliding_attention'))\n"
        "reveal_type(vkrope.from_gguf('model.gguf', context_length=4096))\n"
        "reveal_type(vkrope.from_gguf('model.gguf', layer=3))\n"
        "vkrope.from_hf('config.json').cos_sin(np.arange(4))\n")
    rope = '"vkrope.models.rope.ModelRope"'
    assert revealed == [rope, rope, '"vkrope.models.rope.ModelRope | None"', '"vkrope.models.rope.ModelRope | None"',
                        rope, '"vkrope.models.rope.ModelRope | None"'], out
    assert "error" not in out, out


def test_type_checkers_see_apply_many_results_of_x_kind(tmp_path, mypy):
    """Device.apply_many's results are of each job's x's kind, as apply's: DeviceArrays for DeviceArray x
    (docs/storage.md's `q_rot, k_rot = dev.apply_many(...)`, then `q_rot.get()`), numpy for numpy x, either
    for a mix."""
    revealed, out = _revealed(tmp_path, mypy,
        "x = np.ones((1, 4, 8), np.float32)\nf = np.ones((4, 8), np.float32)\n"
        "dev = vkrope.Device()\nq = dev.asarray(x)\n"
        "q_rot, k_rot = dev.apply_many([(q, f), (q, f, {'repeat': 1, 'exclude_last': 4})])\n"
        "reveal_type(k_rot)\nq_rot.get()\n"
        "reveal_type(dev.apply_many([(x, f), (x, f, {'inverse': True})]))\n"
        "reveal_type(dev.apply_many([(x, f), (q, f)]))\n"
        "jobs = [(q, f), (q, f)]\nreveal_type(dev.apply_many(jobs))\n")  # (a list built first: list is invariant)
    assert revealed[0] == '"vkrope.runtime.array.DeviceArray"', out
    assert revealed[1].startswith('"list[numpy.ndarray'), out
    assert "DeviceArray" not in revealed[1], out
    assert "numpy.ndarray" in revealed[2] and "DeviceArray" in revealed[2], out
    assert revealed[3] == '"list[vkrope.runtime.array.DeviceArray]"', out
    assert len(revealed) == 4 and "error" not in out, out


def test_every_bound_operation_is_listed():
    """Device binds exactly the front ends' operations (and the module exports them, checked above): none
    is left unbound, and none bound is missing from the front ends found above."""
    bound = {name for name, v in vars(vkrope.Device).items() if getattr(v, "__qualname__", "") == f"Device.{name}"
             and callable(v) and inspect.signature(v).return_annotation is not inspect.Signature.empty
             and name in vkrope.__all__}
    assert bound == {f.__name__ for f in FRONT_ENDS}


def test_every_public_op_has_an_op_case():
    """tests/op_cases.py, the one list of public ops that the op-wide tests (lifecycle, resident arguments,
    recordings, errors) run over, holds every front end's operation and Device's own apply_many: a new front end
    without its OpCase fails here, not silently outside those tests."""
    from op_cases import OPS

    assert {case.name for case in OPS} == {f.__name__ for f in FRONT_ENDS} | {"apply_many"}
