"""The documentation site (mkdocs.yml, docs/): the README stays short, the
site builds strict (a broken link, a page missing from the navigation or a
docstring that does not render fails), and its API reference has an entry
for every public name."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import vkrope

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_is_short():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 200


def test_every_public_name_has_an_api_entry():
    entries = re.findall(r"^::: vkrope\.(\w+)$", (ROOT / "docs" / "api.md").read_text(), re.M)
    assert sorted(entries) == sorted(vkrope.__all__)


def test_every_page_is_in_the_navigation():
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    assert pages == set(re.findall(r":\s+(\S+\.md)$", nav, re.M))


def test_the_site_builds_strict(tmp_path):
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"), "-d",
                          str(tmp_path / "site")], capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0, res.stdout + res.stderr
    api = (tmp_path / "site" / "api" / "index.html").read_text()
    for name in vkrope.__all__:
        assert f'id="vkrope.{name}"' in api, name
    index = (tmp_path / "site" / "index.html").read_text()
    assert "Getting started" in index and "rope_and_cache" in index
