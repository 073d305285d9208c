"""The built package is self-contained: a non-editable install, used from
another folder, finds its SPIR-V inside the package and runs the operator."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np

from oracle import check_result

ROOT = Path(__file__).resolve().parents[2]


def test_non_editable_install_runs_from_another_folder(tmp_path):
    wheels, target, elsewhere = tmp_path / "wheels", tmp_path / "site", tmp_path / "elsewhere"
    elsewhere.mkdir()
    # (built from a copy without the checkout's build/: setuptools reuses build/lib, so a module deleted from the
    # source but still imported would pass from a stale copy there)
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns("build", ".venv", ".git", "site", ".offline",
                                                             "*.egg-info", "__pycache__", ".mypy_cache"))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(src)],
        check=True, capture_output=True,
    )
    (wheel,) = wheels.glob("vkrope-*.whl")
    modules = {n for n in zipfile.ZipFile(wheel).namelist() if n.endswith(".py")}
    assert modules == {p.relative_to(ROOT).as_posix() for p in (ROOT / "vkrope").rglob("*.py")}
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
        check=True, capture_output=True,
    )
    code = (
        "import numpy as np, vkrope, vkrope.runtime.manifest as s\n"
        "x = np.random.default_rng(0).standard_normal((2, 8, 16)).astype(np.float32)\n"
        "f = np.random.default_rng(1).standard_normal((8, 16)).astype(np.float32)\n"
        "y = vkrope.apply(x, f)\n"
        f"np.save({str(tmp_path / 'y.npy')!r}, y)\n"
        "print(vkrope.__file__); print(s.spirv_dir())\n"
    )
    env = dict(os.environ, PYTHONPATH=str(target))
    res = subprocess.run([sys.executable, "-c", code], cwd=elsewhere, env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    module_file, spirv = res.stdout.split()
    assert module_file.startswith(str(target)), module_file
    assert spirv == str(target / "vkrope" / "spirv"), spirv
    x = np.random.default_rng(0).standard_normal((2, 8, 16)).astype(np.float32)
    f = np.random.default_rng(1).standard_normal((8, 16)).astype(np.float32)
    check_result(np.load(tmp_path / "y.npy"), x, f)
    assert (target / "vkrope" / "py.typed").is_file()


def test_every_test_extra_imports():
    """The tests skip their ONNX comparisons where onnx or onnxruntime is missing (a user's bare checkout);
    scripts/test.sh installs the `test` extra, so there a missing one fails here instead of hiding them."""
    import configparser  # noqa: PLC0415
    import importlib  # noqa: PLC0415
    import re  # noqa: PLC0415

    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    names = [re.split(r"[\[<>=]", line.strip())[0] for line in cfg["options.extras_require"]["test"].splitlines()
             if line.strip()]
    assert "onnxruntime" in names
    missing = []
    modules = {"pymdown-extensions": "pymdownx"}  # (a distribution whose module is named otherwise)
    for name in names:
        try:
            importlib.import_module(modules.get(name, name))
        except ImportError:
            missing.append(name)
    assert missing == []


def test_the_test_extra_holds_the_user_extras_as_they_say():
    """The `test` extra repeats the user extras the tests need (onnx, docs, dask: a self-referencing
    `vkrope[...]` would send an offline install looking for vkrope on an index): each of their lines, pins
    included, is one of its lines, so the two cannot drift apart."""
    import configparser  # noqa: PLC0415

    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    extras = {k: {line.strip() for line in v.splitlines() if line.strip()}
              for k, v in cfg["options.extras_require"].items()}
    assert "gguf" not in extras  # (from_gguf reads files itself; gguf's writer is the tests', in `test`)
    for name in ("onnx", "docs", "dask"):
        assert extras[name] <= extras["test"], (name, extras[name] - extras["test"])
