"""The documentation site (mkdocs.yml, docs/): the README stays short, the
site builds strict (a broken link, a page missing from the navigation or a
docstring that does not render fails), its API reference has an entry for
every public name, and a real headless browser renders it."""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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


@pytest.mark.parametrize("fault", ["none", "a page not in the nav", "a broken anchor", "a missing page",
                                   "an absolute link"])
def test_the_strict_build_fails_on_what_it_says(tmp_path, fault):
    """mkdocs 1.6 reports an omitted page or a broken anchor at INFO, which --strict passes: mkdocs.yml's
    `validation` block makes each a warning. A two-page site under that block builds clean and fails on each (a
    missing page warns by mkdocs' own default too: the control that the small site is read as the real one)."""
    import yaml

    validation = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["validation"]
    docs = tmp_path / "docs"
    docs.mkdir()
    link = {"a broken anchor": "b.md#no-such-heading", "a missing page": "c.md",
            "an absolute link": "/b/"}.get(fault, "b.md#the-heading")
    (docs / "a.md").write_text(f"# A\n\nSee [b]({link}).\n")
    (docs / "b.md").write_text("# B\n\n## The heading\n")
    if fault == "a page not in the nav":
        (docs / "stray.md").write_text("# Stray\n")
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump({"site_name": "t", "strict": True, "nav": ["a.md", "b.md"],
                                                         "validation": validation}))
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
                         capture_output=True, text=True, cwd=tmp_path)
    assert (res.returncode == 0) == (fault == "none"), res.stdout + res.stderr


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built strict (any warning fails) once for the tests that read it (a build takes 8 s here)."""
    site = tmp_path_factory.mktemp("site")
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"), "-d",
                          str(site)], capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0, res.stdout + res.stderr
    return site


def test_the_site_builds_strict(site):
    api = (site / "api" / "index.html").read_text()
    for name in vkrope.__all__:
        assert f'id="vkrope.{name}"' in api, name
    assert _members_without_an_entry(api) == []
    # (a builtin type's own docstring shown for a field, inspection's reading of `base = 10000.0`: scripts/
    # griffe_builtin_docs.py drops them; 21 fields showed float's, int's, bool's or tuple's)
    for t in (str, int, float, bool, tuple):
        first = html.escape(t.__doc__.strip().splitlines()[0], quote=False)
        assert first not in api, f"{t.__name__}'s docstring shown: {first!r}"
    index = (site / "index.html").read_text()
    assert "Getting started" in index and "rope_and_cache" in index
    # code highlighted at build time (a site read offline is too: no CDN script), classes shown with their
    # constructor's signature
    assert '<span class="kn">import</span>' in index and "highlight.min.js" not in index
    assert (site / "css" / "pygments.css").exists()
    assert re.search(r"vkrope\.RopeFreqs\(.*dim.*base", re.sub(r"<[^>]+>", "", api)), "no constructor signature"


def _members_without_an_entry(api: str) -> list[str]:
    """The public methods and properties of vkrope's classes, inherited ones
    too (Device.asarray is DeviceMemory's), that the API page has no entry
    for (a dataclass's fields are described in its docstring)."""
    import inspect

    missing = []
    for name in vkrope.__all__:
        obj = getattr(vkrope, name)
        if not inspect.isclass(obj) or issubclass(obj, BaseException):
            continue
        for attr in dir(obj):
            owner = next((k for k in obj.__mro__ if attr in vars(k)), None)
            if attr.startswith("_") or owner is None or not owner.__module__.startswith("vkrope") \
                    or attr in getattr(obj, "__dataclass_fields__", {}):
                continue
            if f'id="vkrope.{name}.{attr}"' not in api:
                missing.append(f"{name}.{attr}")
    return missing


def _browser() -> str:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    raise AssertionError("chromium is required by the test suite (scripts/test.sh installs it: apt-get install chromium)")


def test_the_site_renders_in_a_browser(site, tmp_path):
    """The built site opened in headless Chromium (Debian's): the index, a
    guide and the API page render with their content, the operations with
    their docstrings (a static reading once showed them as
    bare `on_default(...)` attributes); a screenshot of the API page is kept
    in $VKROPE_ARTIFACTS (default: the test's temporary folder)."""
    browser = [_browser(), "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + str(tmp_path / "b")]

    def dom(page: str) -> str:
        out = subprocess.run(browser + ["--dump-dom", (site / page).as_uri()], capture_output=True, text=True,
                             timeout=120)
        assert out.returncode == 0, out.stderr[-2000:]
        return out.stdout

    index = dom("index.html")
    assert "Getting started" in index and "rope_and_cache" in index
    guide = dom("guide/decode/index.html")
    assert "The decode step and the KV cache" in guide and "shift_cache" in guide
    api = dom("api/index.html")
    assert "Interleaved rotary position embedding" in api  # vkrope.apply's docstring
    assert "The context shift of a KV cache, in place" in api  # vkrope.shift_cache's, another bound operation
    assert "on_default(" not in api  # (not the line that binds it)
    assert "__dataclass_fields__" not in api  # (nor a dataclass's internals as members)
    shots = Path(os.environ.get("VKROPE_ARTIFACTS", tmp_path))
    shots.mkdir(parents=True, exist_ok=True)
    shot = shots / "site-api.png"
    out = subprocess.run(browser + ["--screenshot=" + str(shot), "--window-size=1200,900",
                                    (site / "api" / "index.html").as_uri()], capture_output=True, timeout=120)
    assert out.returncode == 0 and shot.stat().st_size > 10_000, out.stderr[-2000:]
