"""Every script in scripts/ tells how to call it: python scripts answer
--help (exit 0), bash scripts parse and carry a usage line (running them
would install packages or need a GPU)."""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from at_once import run_all

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p for p in (ROOT / "scripts").iterdir() if p.suffix in (".py", ".sh"))
PYTHON_SCRIPTS = [p for p in SCRIPTS if p.suffix == ".py"]
BASH_SCRIPTS = [p for p in SCRIPTS if p.suffix == ".sh"]


def run(args, **kw):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=120, **kw)


def test_the_script_lists_are_complete():
    names = {p.name for p in SCRIPTS}
    assert {"compile_shaders.py", "kernel_ceiling.py", "perf_table.py"} <= names
    assert {"demo.sh", "gpu_bench.sh", "setup_env.sh", "test.sh"} <= names
    assert names == {p.name for p in (ROOT / "scripts").iterdir() if p.is_file()}, "a script of another kind"


@pytest.fixture(scope="module")
def helps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[subprocess.CompletedProcess[str], Path]]:
    """Every python script's `--help`, each in a folder of its own, run side by side (at_once.py)."""
    def job(path: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
        cwd = tmp_path_factory.mktemp(path.stem)
        return run([sys.executable, str(path), "--help"], cwd=cwd), cwd
    return run_all({p.name: functools.partial(job, p) for p in PYTHON_SCRIPTS})


@pytest.mark.parametrize("path", PYTHON_SCRIPTS, ids=lambda p: p.name)
def test_python_script_help(path, helps):
    res, cwd = helps[path.name]
    assert res.returncode == 0, res.stdout + res.stderr
    assert "usage:" in res.stdout.lower(), res.stdout
    assert list(cwd.iterdir()) == [], "--help wrote files"


@pytest.mark.parametrize("path", BASH_SCRIPTS, ids=lambda p: p.name)
def test_bash_script_parses_and_has_a_usage_line(path):
    res = run(["bash", "-n", str(path)])
    assert res.returncode == 0, res.stderr
    header = []
    for line in path.read_text().splitlines()[1:]:
        if not line.startswith("#"):
            break
        header.append(line)
    text = "\n".join(header)
    # "Usage: ...", or a line that shows the call itself: scripts/NAME ... / NAME [args] for a sourced function.
    call = re.escape(path.name) + "|" + re.escape(path.stem) + r" \["
    assert re.search(r"(?i)\busage\b", text) or re.search(call, text), f"{path.name}: no usage line in\n{text}"


def test_gpu_bench_help_and_budget():
    """#10, #35: the whole suite and every benchmark within 8 minutes of a
    15-minute lease (room for one rerun): each step runs under its own
    limit, and the fixed limits leave the two kernel benchmarks at least 60 s."""
    path = ROOT / "scripts" / "gpu_bench.sh"
    res = run(["bash", str(path), "--help"])
    assert res.returncode == 0 and "Usage: scripts/gpu_bench.sh OUTDIR" in res.stdout, res.stdout + res.stderr
    text = path.read_text()
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    budget = int(re.search(r"^budget=\$\{BUDGET:-(\d+)\}$", code, re.M).group(1))
    fixed = [int(t) for t in re.findall(r"\bstep (\d+) \"", code)]
    assert budget <= 480
    assert budget - sum(fixed) >= 60, (budget, fixed)
    assert re.search(r'timeout "\$limit" "\$@"', code), "a step runs under its limit"
    assert re.search(r'step \d+ "the whole suite[^"]*" \$py -m pytest', code), "the suite runs as a step"
    assert re.search(r'step \d+ "bench --family[^"]*" \$py -m vkrope bench --family', code), "the family benchmark too"
    assert re.search(r'step "\$left" "bench --quick[^"]*" \\\n\s*\$py -m vkrope bench --quick --out "\$out"', code)
    assert re.search(r"pytest [^\n]*\\\n(.*\\\n)*.* tests/$", code, re.M), "the whole suite"


def test_perf_table_without_json_prints_usage(tmp_path):
    """#10: on a fresh clone (no bench-out/bench.json) a clear usage error, exit 2."""
    res = run([sys.executable, str(ROOT / "scripts" / "perf_table.py")], cwd=tmp_path)
    assert res.returncode == 2, res.stdout + res.stderr
    assert res.stderr.startswith("usage:") and "vkrope bench" in res.stderr, res.stderr


def test_gen_vs_table_ablations_still_match_the_kernel():
    """--ablate edits the generated kernel's shaders by exact strings: each
    must occur in its file once, or the ablation measures nothing (it would
    exit)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen_vs_table", ROOT / "scripts" / "gen_vs_table.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for name, edits in mod.ABLATIONS.items():
        for file, old, _new in edits:
            assert (ROOT / file).read_text().count(old) == 1, (name, file, old)
