"""Every public name has a docstring (what `python -m pydoc vkrope` shows),
and the README names what it must."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest

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
            for attr in dir(obj):  # (inherited members too: Device.asarray is DeviceMemory's)
                owner = next((k for k in obj.__mro__ if attr in vars(k)), None)
                if attr.startswith("_") or owner is None or not owner.__module__.startswith("vkrope"):
                    continue
                member = vars(owner)[attr]
                if callable(member) or isinstance(member, property):
                    if not inspect.getdoc(member):
                        missing.append(f"{name}.{attr}")
    assert not missing, missing


def test_pydoc_renders():
    res = subprocess.run([sys.executable, "-m", "pydoc", "vkrope"], capture_output=True, text=True)
    assert res.returncode == 0
    for word in ("apply_reference", "DeviceArray", "axial_freqs", "OutOfDeviceMemoryError"):
        assert word in res.stdout


def test_readme_names_the_two_commands_and_the_errors_page_every_exception():
    text = (ROOT / "README.md").read_text()
    assert "scripts/demo.sh" in text and "scripts/test.sh" in text
    errors = (ROOT / "docs" / "errors.md").read_text()
    for name in vkrope.__all__:
        if name.endswith("Error"):
            assert name in errors, f"docs/errors.md does not explain {name}"


DOC_PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


@pytest.mark.parametrize("page", DOC_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_code_blocks_run(tmp_path, page):
    """Every ```python block of the README and the site's pages runs as written, on the real device."""
    text = page.read_text()
    blocks = [b.split("```", 1)[0] for b in text.split("```python\n")[1:]]
    for i, block in enumerate(blocks):
        res = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True, cwd=tmp_path)
        assert res.returncode == 0, f"{page.name} block {i} failed:\n{block}\n{res.stderr}"


def test_the_pages_hold_their_code():
    """The README's three quickstarts, and the guides' examples, are there to run."""
    count = sum(p.read_text().count("```python\n") for p in DOC_PAGES)
    assert (ROOT / "README.md").read_text().count("```python\n") == 3 and count >= 12


def test_type_hints_check_with_mypy(tmp_path):
    """py.typed is shipped, so the hints must hold: mypy passes on the package."""
    res = subprocess.run(
        [sys.executable, "-m", "mypy", "--ignore-missing-imports", "--cache-dir", str(tmp_path), str(ROOT / "vkrope")],
        capture_output=True, text=True,
    )
    assert res.returncode == 0, res.stdout + res.stderr
