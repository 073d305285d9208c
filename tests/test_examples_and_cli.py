"""Every example runs and checks itself; the command line works end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import vkrope
from oracle import check_result

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


def run(args, **kw):
    env = dict(os.environ)
    env.update(kw.pop("env", {}))
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=600, **kw)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs_and_checks_itself(path):
    res = run([sys.executable, str(path)], cwd=ROOT, env={"VKROPE_VALIDATION": "1"})
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.rstrip().endswith("OK"), res.stdout
    assert "Vulkan validation" not in res.stderr, res.stderr


def test_examples_exist():
    names = {p.name for p in EXAMPLES}
    assert {"attention_numpy.py", "edgetam_memory_keys.py", "streaming_device.py", "dask_batch.py"} <= names


def cli(*args, **kw):
    """Run the command with the validation layer on; it must stay silent."""
    res = run([sys.executable, "-m", "vkrope", *args], env={"VKROPE_VALIDATION": "1"}, **kw)
    assert "Vulkan validation" not in res.stderr, res.stderr
    return res


def test_help_and_info():
    res = cli("--help")
    assert res.returncode == 0 and "info" in res.stdout and "bench" in res.stdout and "apply" in res.stdout
    res = cli("info")
    assert res.returncode == 0, res.stderr
    assert vkrope.default_device().name in res.stdout and "vkrope uses" in res.stdout
    res = cli("info", "--json")
    facts = json.loads(res.stdout)
    assert facts["chosen"]["name"] == facts["devices"][facts["chosen"]["index"]]["name"]
    assert facts["chosen"]["name"] == vkrope.default_device().name


@pytest.mark.parametrize("extra", [[], ["--inverse"], ["--repeat", "2", "--exclude-last", "1"], ["--storage", "texture3d"]])
def test_cli_apply_round_trip_equals_api(tmp_path, extra):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 9, 12)).astype(np.float32)
    nf = 4 if "--repeat" in extra else 9
    f = rng.standard_normal((nf, 12)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "f.npy", f)
    res = cli("apply", str(tmp_path / "x.npy"), str(tmp_path / "f.npy"), "-o", str(tmp_path / "y.npy"), *extra)
    assert res.returncode == 0, res.stderr
    y = np.load(tmp_path / "y.npy")
    kw = {"inverse": "--inverse" in extra}
    if "--repeat" in extra:
        kw.update(repeat=2, exclude_last=1)
    check_result(y, x, f, **kw)
    if "--storage" in extra:
        kw["storage"] = "texture3d"
    assert y.tobytes() == vkrope.apply(x, f, **kw).tobytes()


def test_cli_apply_positions(tmp_path):
    x = np.ones((1, 3, 4), np.float32)
    f = np.array([[0, 1, 0, 1], [1, 0, 1, 0]], np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "f.npy", f)
    np.save(tmp_path / "p.npy", np.array([1, -1, 0]))
    res = cli("apply", str(tmp_path / "x.npy"), str(tmp_path / "f.npy"), "-o", str(tmp_path / "y.npy"),
              "--positions", str(tmp_path / "p.npy"))
    assert res.returncode == 0, res.stderr
    y = np.load(tmp_path / "y.npy")
    check_result(y, x, f, positions=np.array([1, -1, 0]))
    np.testing.assert_array_equal(y, vkrope.apply(x, f, positions=np.array([1, -1, 0])))


@pytest.mark.parametrize("case,words", [
    ("missing_file", ["X", "no such file"]),
    ("bad_dtype", ["TypeError", "float64"]),
    ("odd_c", ["ValueError", "even"]),
    ("bad_storage", ["ValueError", "storage"]),
    ("bad_repeat", ["ValueError", "repeat"]),
    ("not_npy", ["not a readable .npy"]),
])
def test_cli_errors_are_one_line(tmp_path, case, words):
    x = np.ones((1, 3, 4), np.float32)
    f = np.ones((3, 4), np.float32)
    if case == "bad_dtype":
        x = x.astype(np.float64)
    if case == "odd_c":
        x = np.ones((1, 3, 5), np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "f.npy", f)
    if case == "not_npy":
        (tmp_path / "x.npy").write_text("hello")
    args = ["apply", str(tmp_path / ("nope.npy" if case == "missing_file" else "x.npy")), str(tmp_path / "f.npy"),
            "-o", str(tmp_path / "y.npy")]
    if case == "bad_storage":
        args += ["--storage", "texture2d"]
    if case == "bad_repeat":
        args += ["--repeat", "0"]
    res = cli(*args)
    assert res.returncode != 0
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vkrope: error:"), res.stderr
    for w in words:
        assert w in lines[0], lines[0]
    assert "Traceback" not in res.stderr
    debug = cli("--debug", *args)
    assert debug.returncode != 0 and "Traceback" in debug.stderr


def test_cli_bench_quick_tiny(tmp_path):
    """The benchmark runs and writes JSON and a chart (sizes kept tiny here)."""
    res = cli("bench", "--shapes", "1x16x8,2x64x16", "--repeats", "1", "--out", str(tmp_path))
    assert res.returncode == 0, res.stdout + res.stderr
    result = json.loads((tmp_path / "bench.json").read_text())
    assert len(result["rows"]) == 2 * 2 * 2
    row = result["rows"][0]
    assert row["kernel_s"] > 0 and row["apply_s"] > 0 and row["copy_gbps"] > 0
    assert (tmp_path / "bench.png").stat().st_size > 1000


def test_cli_demo():
    res = cli("demo")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "correct" in res.stdout and "float16" in res.stdout
