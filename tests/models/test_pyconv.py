"""vkrope/models/pyconv.py, the interpreter of llama.cpp's converter code:
it runs its whitelist exactly, refuses (Unknown) anything else, reports
the converter's own errors (Raised), and cannot be made to hang or to
exhaust memory by a config's values."""

from __future__ import annotations

import textwrap

import pytest

from vkrope.models import pyconv


class _World:
    """A world with no objects of its own: every attribute and call it is asked for is Unknown."""

    def attr(self, obj, name):
        raise pyconv.Unknown(name)

    def set_attr(self, obj, name, value):
        raise pyconv.Unknown(name)

    def call(self, fn, args, kwargs):
        raise pyconv.Unknown("call")

    def super_of(self, owner, obj):
        raise pyconv.Unknown("super")


def run(source: str, *args, **kwargs):
    interp = pyconv.Interpreter(_World(), {"opaque": pyconv.Opaque("a path")})
    fn = pyconv.Function(pyconv.parse_function(textwrap.dedent(source)), None)
    return interp.run(fn, list(args), kwargs), interp


def test_runs_the_converter_s_python():
    src = """
    def f(hparams, optional=False):
        key = next((k for k in ["n_layer", "num_hidden_layers"] if k in hparams), None)
        out = {"n": hparams[key] if key else None}
        rope = hparams.get("rope_scaling") or {}
        if (t := rope.get("type")) is not None and t.lower() == "linear":
            out["factor"] = rope["factor"]
        sections = list(hparams.get("mrope_section", []))
        while len(sections) < 4:
            sections.append(0)
        out["sections"] = sections[:4]
        out["dims"] = [d // 2 for d in range(2, 8, 2) if d != 4]
        out["half"] = int(hparams["hidden_size"] * 0.5) // hparams.get("heads", 1)
        out["text"] = f"{key}={out['n']}"
        out["chain"] = (1 < 5 < 3, 3 > 2 > 1)
        if "rope_ratio" in hparams:
            out["ratio"] = True
        try:
            hparams["missing"]
        except KeyError:
            out["caught"] = True
        return out
    """
    out, interp = run(src, {"num_hidden_layers": 28, "rope_scaling": {"type": "Linear", "factor": 2.0},
                            "mrope_section": [16, 24], "hidden_size": 4096})
    assert out == {"n": 28, "factor": 2.0, "sections": [16, 24, 0, 0], "dims": [1, 3], "half": 2048,
                   "text": "num_hidden_layers=28", "caught": True, "chain": (False, True)}
    assert {"num_hidden_layers", "rope_scaling", "type", "factor", "hidden_size", "missing",
            "rope_ratio"} <= interp.keys_read


@pytest.mark.parametrize("body", [
    "import os",
    "with open('config.json') as f:\n        pass",
    "return opaque / 'config.json'",
    "return open('/etc/passwd')",
    "return (lambda: 1)()",
    "def g():\n        return 1",
    "return ().__class__",
    "return 'x'.format(1)",
    "return getattr(1, 'real')",
    "return __import__('os')",
    "global x",
    "return eval('1')",
])
def test_anything_else_is_unknown(body):
    with pytest.raises(pyconv.Unknown):
        run(f"def f():\n    {body}\n")


@pytest.mark.parametrize("body, kind", [
    ("return {}['k']", "KeyError"),
    ("assert 1 == 2", "AssertionError"),
    ("raise ValueError('no')", "ValueError"),
    ("return [][3]", "IndexError"),
    ("return 1 // 0", "ZeroDivisionError"),
    ("for x in None:\n        pass", "TypeError"),
    ("a, b = [1, 2, 3]", "ValueError"),
])
def test_the_converter_s_errors_are_raised(body, kind):
    with pytest.raises(pyconv.Raised) as exc:
        run(f"def f():\n    {body}\n")
    assert exc.value.kind == kind


def test_except_catches_the_converter_s_errors_not_unknown():
    out, _ = run("def f():\n    try:\n        return {}['k']\n    except Exception:\n        return 'caught'\n")
    assert out == "caught"
    with pytest.raises(pyconv.Unknown):
        run("def f():\n    try:\n        import os\n    except Exception:\n        return 'caught'\n")


@pytest.mark.parametrize("body", [
    "while True:\n        pass",
    "return 2 ** 100000",
    "return 'x' * 10 ** 12",
    "return [0] * 10 ** 12",
    "return list(range(10 ** 12))",
])
def test_a_config_cannot_make_it_hang_or_exhaust_memory(body):
    """Each stopped by the interpreter's own bounds (its step count, its value sizes), not by chance."""
    with pytest.raises(pyconv.Unknown, match="runs too long|too large"):
        run(f"def f():\n    {body}\n")


def test_arguments_bind_as_python_does():
    src = "def f(a, b=2, *rest, c=3, **kw):\n    return (a, b, rest, c, kw)\n"
    assert run(src, 1)[0] == (1, 2, (), 3, {})
    assert run(src, 1, 5, 6, 7, c=8, d=9)[0] == (1, 5, (6, 7), 8, {"d": 9})
    with pytest.raises(pyconv.Raised):
        run(src)


@pytest.mark.parametrize("body", [
    "return ~5",
    "return isinstance(1, opaque)",
    "x = 1\n    return f'{x!r}'",
    "x = 1.5\n    return f'{x:.2f}'",
    "return f'{opaque}'",
    "return [y := 1 for _ in range(2)]",
    "a, *b = [1, 2, 3]",
])
def test_what_python_does_otherwise_is_unknown(body):
    with pytest.raises(pyconv.Unknown):
        run(f"def f():\n    {body}\n")


def test_loops_try_and_augmented_assignment_as_python():
    src = """
    def f(d):
        out = []
        alias = out
        out += [1]
        i = 0
        while i < 3:
            i += 1
        else:
            out.append("while-else")
        for x in [1, 2]:
            if x == 2:
                break
        else:
            out.append("never")
        keys = iter_keys = ["a"]
        d[keys[0]] += 1
        try:
            d["missing"]
        except LookupError:
            out.append("lookup")
        else:
            out.append("never")
        finally:
            out.append("finally")
        try:
            out.append("body")
        except KeyError:
            out.append("never")
        else:
            out.append("else")
        return out, alias is out, d
    """
    out, _ = run(src, {"a": 1})
    assert out == (([1, "while-else", "lookup", "finally", "body", "else"]), True, {"a": 2})


@pytest.mark.parametrize("body, kind", [
    ("raise KeyError", "KeyError"),
    ("try:\n        {}['k']\n    except KeyError:\n        raise", "KeyError"),
    ("def_ = 1\n    return g(1, a=2)", "TypeError"),
])
def test_raise_kinds(body, kind):
    src = f"def f():\n    {body}\n"
    interp = pyconv.Interpreter(_World(), {})
    interp.globals["g"] = pyconv.Function(pyconv.parse_function("def g(a):\n    return a\n"), None)
    with pytest.raises(pyconv.Raised) as exc:
        interp.run(pyconv.Function(pyconv.parse_function(src), None), [], {})
    assert exc.value.kind == kind


def test_work_in_comprehensions_and_membership_is_counted():
    """A config's long list searched per turn of a long comprehension (KimiK3's full_attn_layers) ends
    as Unknown, fast, not after n * L comparisons."""
    src = "def f(n, layers):\n    return [i for i in range(n) if (i + 1) in layers]\n"
    with pytest.raises(pyconv.Unknown, match="runs too long"):  # (the step count, per comparison)
        run(src, 999_999, [0] * 20_000)
    assert run(src, 60, [4, 8, 12])[0] == [3, 7, 11]


def test_plain_copies_and_bounds_a_config():
    import collections

    import numpy as np
    nested = cur = {}
    for _ in range(100):
        cur["a"] = {}
        cur = cur["a"]
    with pytest.raises(ValueError, match="nests deeper"):
        pyconv.plain(nested)
    given = collections.OrderedDict(x=(1, 2), y=np.int64(3), z={"w": [np.float32(0.5)]})
    out = pyconv.plain(given)
    assert out == {"x": [1, 2], "y": 3, "z": {"w": [0.5]}} and type(out) is dict and type(out["y"]) is int
    out["z"]["w"].append(1)
    assert given["z"]["w"] == [np.float32(0.5)]


def test_a_comprehension_that_never_ends_is_stopped():
    """10^12 turns with no membership test: each turn counts, so it ends as Unknown (a SIGALRM after 20 s
    fails the test instead of hanging it)."""
    import signal

    def late(*_):
        raise AssertionError("the interpreter ran past 20 s")

    old = signal.signal(signal.SIGALRM, late)
    signal.alarm(20)
    try:
        with pytest.raises(pyconv.Unknown):
            run("def f():\n    return [1 for i in range(999_999) for j in range(999_999) if False]\n")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("body", [
    "x = 3\n    for _ in range(20):\n        x = x * x\n    return x",
    "try:\n        {}['k']\n    except KeyError as e:\n        return e",
])
def test_more_of_python_is_refused(body):
    with pytest.raises(pyconv.Unknown):
        run(f"def f():\n    {body}\n")


def test_work_in_builtins_is_counted():
    src = "def f(big):\n    for _ in range(100000):\n        max(big)\n"
    with pytest.raises(pyconv.Unknown, match="runs too long"):  # (max's work counted as steps)
        run(src, list(range(900_000)))
