"""Every public name has a docstring (what `python -m pydoc vkrope` shows),
and the README names what it must."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import vkrope

ROOT = Path(__file__).resolve().parents[2]


def test_every_public_name_has_a_docstring():
    missing = []
    for name in vkrope.__all__:
        obj = getattr(vkrope, name)
        if name == "__version__":
            continue
        if not inspect.getdoc(obj):
            missing.append(name)
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if attr.startswith("_"):
                    continue
                if callable(member) or isinstance(member, property):
                    if not inspect.getdoc(member):
                        missing.append(f"{name}.{attr}")
    assert not missing, missing


def test_pydoc_renders():
    res = subprocess.run([sys.executable, "-m", "pydoc", "vkrope"], capture_output=True, text=True)
    assert res.returncode == 0
    for word in ("apply_reference", "DeviceArray", "axial_freqs", "OutOfDeviceMemoryError"):
        assert word in res.stdout


def test_readme_names_the_two_commands_and_every_exception():
    text = (ROOT / "README.md").read_text()
    assert "scripts/demo.sh" in text and "scripts/test.sh" in text
    for name in vkrope.__all__:
        if name.endswith("Error"):
            assert name in text, f"README does not explain {name}"


def test_readme_code_blocks_run(tmp_path):
    """Every ```python block of the README runs as written."""
    text = (ROOT / "README.md").read_text()
    blocks = [b.split("```", 1)[0] for b in text.split("```python\n")[1:]]
    assert len(blocks) >= 2
    for i, block in enumerate(blocks):
        res = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True, cwd=tmp_path)
        assert res.returncode == 0, f"README block {i} failed:\n{block}\n{res.stderr}"


def test_type_hints_check_with_mypy(tmp_path):
    """py.typed is shipped, so the hints must hold: mypy passes on the package."""
    res = subprocess.run(
        [sys.executable, "-m", "mypy", "--ignore-missing-imports", "--cache-dir", str(tmp_path), str(ROOT / "vkrope")],
        capture_output=True, text=True,
    )
    assert res.returncode == 0, res.stdout + res.stderr
