"""The two test tiers: tests/slow_tests.txt (written by scripts/test_tiers.py
from measured durations) names only test functions that exist, never one
of the modules that keep every op, storage and dtype in the fast tier, and
plain pytest deselects the slow ones."""

from __future__ import annotations

import ast
import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("tiers_script", ROOT / "scripts" / "test_tiers.py")
test_tiers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(test_tiers)


def _listed() -> list[str]:
    return [line.strip() for line in (ROOT / "tests" / "slow_tests.txt").read_text().splitlines()
            if line.strip() and not line.startswith("#")]


def test_every_listed_function_exists():
    for entry in _listed():
        path, name = entry.split("::")
        tree = ast.parse((ROOT / path).read_text())
        assert any(isinstance(n, ast.FunctionDef) and n.name == name for n in tree.body), entry


def test_coverage_modules_stay_fast():
    assert not [e for e in _listed() if e.startswith(test_tiers.KEEP_FAST)]


def test_plain_pytest_leaves_the_slow_tier_out(pytestconfig):
    assert "slow" in pytestconfig.getini("markers")[0]
    assert "not slow" in " ".join(pytestconfig.getini("addopts"))


def test_choose_keeps_the_fast_tier_within_budget():
    times = {"tests/a.py::t1": 50.0, "tests/a.py::t2": 30.0, "tests/a.py::t3": 5.0, "tests/a.py::t4": 0.1,
             "tests/kernels/test_contract_shapes.py::t": 40.0}
    slow = test_tiers.choose(times, sum(times.values()), budget=50.0, threshold=0.4)
    assert slow == ["tests/a.py::t1", "tests/a.py::t2"]
    assert test_tiers.choose(times, sum(times.values()), budget=200.0, threshold=0.4) == []
    log = "3.00s call     tests/x.py::f[a]\n1.50s setup    tests/x.py::f[b]\n0.25s call     tests/x.py::g\n"
    assert test_tiers.durations(log) == {"tests/x.py::f": 4.5, "tests/x.py::g": 0.25}
