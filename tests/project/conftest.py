"""Fixtures of the project's checks."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def mypy(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Path], subprocess.CompletedProcess[str]]:
    """Run mypy on a path with one cache for the session: the first run reads numpy's and vkrope's stubs
    and sources (about 11 s here), the later ones reuse what it cached (each check its own file)."""
    cache = tmp_path_factory.mktemp("mypy-cache")

    def run(path: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "mypy", "--ignore-missing-imports", "--cache-dir", str(cache),
                               str(path)], capture_output=True, text=True)
    return run
