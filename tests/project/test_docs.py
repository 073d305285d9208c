"""Every public name has a docstring (what `python -m pydoc vkrope` shows),
and the README names what it must."""

from __future__ import annotations

import functools
import inspect
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import vkrope
from at_once import run_all

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


def test_the_readmes_table_names_every_public_op():
    """The README's family table (and so docs/index.md's, its copy) has a row for each module-level operation:
    a new front end is announced where a reader looks first."""
    from test_api_binding import FRONT_ENDS

    rows = re.findall(r"^\| `vkrope\.(\w+)` \|", (ROOT / "README.md").read_text(), re.M)
    assert sorted(rows) == sorted(f.__name__ for f in FRONT_ENDS)


def test_readme_names_the_two_commands_and_the_errors_page_every_exception():
    text = (ROOT / "README.md").read_text()
    assert "scripts/demo.sh" in text and "scripts/test.sh" in text
    errors = (ROOT / "docs" / "errors.md").read_text()
    for name in vkrope.__all__:
        if name.endswith("Error"):
            assert name in errors, f"docs/errors.md does not explain {name}"


DOC_PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _run_blocks(page: Path, cwd: Path) -> str:
    """A page's ```python blocks run in order in `cwd`, each in a process of its own: "" where all ran, else
    the first failure."""
    blocks = [b.split("```", 1)[0] for b in page.read_text().split("```python\n")[1:]]
    for i, block in enumerate(blocks):
        res = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True, cwd=cwd)
        if res.returncode != 0:
            return f"{page.name} block {i} failed:\n{block}\n{res.stderr}"
    return ""


@pytest.fixture(scope="module")
def page_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[Path, str]:
    """Every page's blocks run, the pages side by side (at_once.py), the blocks of a page in order."""
    return run_all({page: functools.partial(_run_blocks, page, tmp_path_factory.mktemp(page.stem))
                    for page in DOC_PAGES})


@pytest.mark.parametrize("page", DOC_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_code_blocks_run(page, page_runs):
    """Every ```python block of the README and the site's pages runs as written, on the real device."""
    assert page_runs[page] == ""


def test_the_pages_hold_their_code():
    """The README's three quickstarts, and the guides' examples, are there to run."""
    count = sum(p.read_text().count("```python\n") for p in DOC_PAGES)
    assert (ROOT / "README.md").read_text().count("```python\n") == 3 and count >= 12


def test_type_hints_check_with_mypy(mypy):
    """py.typed is shipped, so the hints must hold: mypy passes on the package."""
    res = mypy(ROOT / "vkrope")
    assert res.returncode == 0, res.stdout + res.stderr


def test_the_layout_page_names_every_module_and_script():
    """docs/layout.md lists the package's modules and the scripts; a new one must be named there (the review
    found ops/shift.py, kernels/shift.py and four scripts missing)."""
    page = (ROOT / "docs" / "layout.md").read_text()
    files = [p for p in (ROOT / "vkrope").rglob("*.py") if p.name != "__init__.py" and "bench" not in p.parts]
    files += [p for p in (ROOT / "scripts").iterdir() if p.suffix in (".py", ".sh")]
    files += list((ROOT / "glsl").glob("*.glsl"))
    missing = sorted(str(p.relative_to(ROOT)) for p in files if f"`{p.name}`" not in page)
    assert missing == []


def test_the_site_front_page_says_what_the_readme_says():
    """docs/index.md repeats the README's paragraphs for the site (mkdocs cannot include a file outside
    docs/): each of its paragraphs, links aside, is one of the README's, so an edit to one reaches both."""
    def paragraphs(path: Path) -> list[str]:
        text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", path.read_text())  # (links: their text)
        return [" ".join(p.split()) for p in text.split("\n\n") if p.strip() and not p.lstrip().startswith("#")]
    readme = set(paragraphs(ROOT / "README.md"))
    site = paragraphs(ROOT / "docs" / "index.md")
    assert len(site) > 10
    assert [p for p in site[:-1] if p not in readme] == []  # (the last: the site's own "Next:" pointer)



def test_the_model_tables_release_and_size_are_what_the_data_says():
    """The prose that names the model table's transformers release or its count of model types says what
    vkrope/data/hf_models.json holds (written by the script; the prose by hand)."""
    data = json.loads((ROOT / "vkrope" / "data" / "hf_models.json").read_text())
    release = ".".join(data["transformers"].split(".")[:2])
    texts = {p: p.read_text() for p in [*(ROOT / "docs").rglob("*.md"), ROOT / "README.md",
                                        ROOT / "vkrope" / "models" / "model_table.py"]}
    named = {(str(p.relative_to(ROOT)), m) for p, t in texts.items()
             for m in re.findall(r"\btransformers (5\.\d+)(?:'s own|\b(?! or))", t)}
    assert named and all(m == release for _, m in named), named
    counts = {(str(p.relative_to(ROOT)), int(m)) for p, t in texts.items()
              for m in re.findall(r"every one of its (\d+)\s+model types", t)}
    assert counts and all(n == len(data["models"]) for _, n in counts), counts


def test_the_config_rules_counts_are_what_the_data_says():
    """The counts model-rules.md gives of the measured config rules (strict nulls, a hidden size the heads do not
    divide) are vkrope/data/hf_config_rules.json's (written by the script; the prose by hand)."""
    rules = json.loads((ROOT / "vkrope" / "data" / "hf_config_rules.json").read_text())["models"]
    text = " ".join((ROOT / "docs" / "guide" / "model-rules.md").read_text().split())
    head_dim = sum("head_dim" in r.get("null_refused", []) for r in rules.values())
    hidden = sum("hidden_size" in r.get("null_refused", []) for r in rules.values())
    measured = [r["heads_divide"] for r in rules.values() if "heads_divide" in r]
    refuse = sum(bool(h["bare"]) for h in measured)
    assert f"{head_dim} types' `head_dim`" in text and f"{hidden} of {len(rules)} classes' `hidden_size`" in text
    assert f"{refuse} of the {len(measured)} model types measured refuse one" in text


def test_the_proof_counts_are_what_the_data_says():
    """model-rules.md's counts of what its proofs cover: the types whose attention rotates a width of its own, the
    types probed key by key, the golden configs and the golden cases (hand-written prose, stale once before)."""
    rules = json.loads((ROOT / "vkrope" / "data" / "hf_config_rules.json").read_text())["models"]
    text = " ".join((ROOT / "docs" / "guide" / "model-rules.md").read_text().split())
    width, probed = sum("width" in r for r in rules.values()), sum("unread" in r for r in rules.values())
    configs = len(list((ROOT / "tests" / "data" / "hf_configs").glob("*.json")))
    with np.load(ROOT / "tests" / "data" / "hf_golden.npz") as gold:
        cases = len({k.rsplit("/", 1)[0] for k in gold.files if k.count("/") == 2})
    assert f"{width} types whose attention rotates a key of its own" in text
    assert f"({probed} of {len(rules)}; not GLM-4V" in text
    assert f"on {configs} configs kept under tests/data/hf_configs" in text
    assert f"rotary modules on {configs} configs" in " ".join((ROOT / "docs" / "FAMILY.md").read_text().split())
    assert f"bit for bit on all {cases} cases" in text


def test_the_model_table_counts_are_what_the_data_says():
    """model-rules.md's counts of the model table's statuses (hand-written prose) are hf_models.json's: ok, no
    RoPE, not probed, no modeling file, and the rest refused; and its count of GGUF architectures is
    gguf_archs.json's."""
    models = json.loads((ROOT / "vkrope" / "data" / "hf_models.json").read_text())["models"]
    text = " ".join((ROOT / "docs" / "guide" / "model-rules.md").read_text().split())
    status = [str(e.get("status")) if e.get("rope") is not False else "no rope" for e in models.values()]
    ok, none = status.count("ok"), status.count("no rope")
    no_file = sum(s.endswith("could not be probed (no modeling file)") for s in status)
    probe = sum("could not be probed" in s for s in status) - no_file
    rest = len(status) - ok - none - probe - no_file
    assert f"{ok} of transformers 5.25's {len(status)} types. {none} apply no RoPE" in text
    assert f"{probe} could not be probed and {no_file} have no modeling file; the other {rest} are refused" in text
    archs = json.loads((ROOT / "vkrope" / "data" / "gguf_archs.json").read_text())["archs"]
    assert f"from llama.cpp's own source ({len(archs)} architectures)" in text


def test_docs_sh_without_a_venv_uses_the_python_that_has_mkdocs(tmp_path):
    """scripts/docs.sh builds with .venv when there is one; without it ($PYTHON or python3, after
    `pip install '.[docs]'`), with that Python when it imports mkdocs, mkdocstrings and vkrope, and otherwise
    says what it needs and exits 1 (it refused outright before)."""
    (tmp_path / "scripts").mkdir()
    script = tmp_path / "scripts" / "docs.sh"
    script.write_text((ROOT / "scripts" / "docs.sh").read_text())
    log = tmp_path / "calls"
    for name, rc in (("good", 0), ("bare", 1)):  # (a stand-in Python: logs its arguments, exits rc)
        fake = tmp_path / name
        fake.write_text(f'#!/bin/sh\necho "{name} $*" >> {log}\nexit {rc}\n')
        fake.chmod(0o755)
    here = tmp_path / "here"  # (OUTDIR is read from the folder the script runs in, not the repository's)
    here.mkdir()
    run = lambda py, out="out": subprocess.run(  # noqa: E731
        ["bash", str(script), out], capture_output=True, text=True, cwd=here,
        env={"PATH": "/usr/bin:/bin", "PYTHON": str(tmp_path / py), "CDPATH": str(ROOT)})  # (CDPATH ignored)
    res = run("good")
    assert res.returncode == 0, res.stderr
    assert log.read_text().splitlines()[-1] == f"good -m mkdocs build --strict -d {here / 'out'}"
    res = run("bare")
    assert res.returncode == 1 and "pip install '.[docs]'" in res.stderr
    assert not any(line.startswith("bare -m") for line in log.read_text().splitlines())
    # (mkdocs empties its folder: one that holds anything and no site built before is refused, untouched)
    (here / "work").mkdir()
    (here / "work" / "keep.txt").write_text("mine")
    res = run("good", "work")
    assert res.returncode == 1 and "exists, is not empty and holds no site built before" in res.stderr
    assert (here / "work" / "keep.txt").read_text() == "mine"
    (here / "work" / "sitemap.xml.gz").write_bytes(b"")  # (a site built before is built again)
    assert run("good", "work").returncode == 0


_DS3 = {"model_type": "deepseek_v3", "hidden_size": 7168, "num_attention_heads": 128, "num_key_value_heads": 128,
        "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "kv_lora_rank": 512, "q_lora_rank": 1536,
        "max_position_embeddings": 163840, "rope_theta": 10000}
_GEMMA3 = {"model_type": "gemma3_text", "hidden_size": 2560, "num_hidden_layers": 34, "sliding_window": 1024,
           "layer_types": (["sliding_attention"] * 5 + ["full_attention"]) * 5 + ["sliding_attention"] * 4}
_QWEN2_VL = {"model_type": "qwen2_vl", "hidden_size": 3584, "num_attention_heads": 28, "num_key_value_heads": 4,
             "rope_theta": 1e6, "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}}
_LLAMA = {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32}
# The calls that make the models guide's "Common errors" (a docs check found one quoted as it was once)
_COMMON_ERRORS = [
    lambda: vkrope.from_hf({"model_type": "kimi_k2", "hidden_size": 7168, "num_attention_heads": 64}),
    lambda: vkrope.from_hf({"hidden_size": 64, "num_attention_heads": 4}),
    lambda: vkrope.from_hf("meta-llama/Llama-3.1-8B"),
    lambda: vkrope.from_hf(_GEMMA3),
    lambda: vkrope.from_hf({"model_type": "lfm3", "hidden_size": 1024, "num_attention_heads": 16,
                            "num_hidden_layers": 2, "layer_types": ["hybrid", "full_attention"]}, layer=0),
    lambda: vkrope.from_hf({k: v for k, v in _GEMMA3.items() if k != "layer_types"}, layer=0),
    lambda: vkrope.from_hf({"model_type": "llama4_text", "hidden_size": 5120, "num_attention_heads": 40,
                            "num_hidden_layers": 4, "no_rope_layers": []}, layer=0),
    lambda: vkrope.apply_rotary_pos_emb(np.zeros((1, 128, 4, 192), np.float32), np.zeros((1, 1, 4, 64), np.float32),
                                        vkrope.from_hf(_DS3), np.arange(4)[None]),
    lambda: vkrope.from_hf({"model_type": "deepseek_v32", "hidden_size": 7168, "num_attention_heads": 128,
                            "qk_rope_head_dim": 64, "index_head_dim": 128, "index_n_heads": 64,
                            "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}}),
    lambda: vkrope.apply_rotary_pos_emb(np.zeros((1, 28, 5, 128), np.float32), np.zeros((1, 4, 5, 128), np.float32),
                                        vkrope.from_hf(_QWEN2_VL), np.zeros((2, 1, 5), int)),
    lambda: vkrope.rope_and_cache(*(np.zeros((1, 4, 1, 128), np.float32),) * 3,
                                  *(vkrope.default_device().asarray(np.zeros((1, 4, 8, 128), np.float32))
                                    for _ in range(2)), vkrope.from_hf(_QWEN2_VL), np.zeros((1, 1), int)),
    lambda: vkrope.from_hf({**_LLAMA, "rope_scaling": {"rope_type": "yarn"}}),
    lambda: vkrope.from_hf({**_LLAMA, "rope_scaling": {"rope_type": "foo", "factor": 2.0}}),
    lambda: vkrope.from_hf({"model_type": "nanochat", "hidden_size": 1024, "num_attention_heads": 8}),
]


@pytest.mark.parametrize("call", _COMMON_ERRORS)
def test_the_common_errors_the_models_guide_quotes_are_what_vkrope_says(call):
    """Each message the models guide's "Common errors" quotes is the one its call raises now, word for word."""
    with pytest.raises((ValueError, TypeError)) as info:
        call()
    text = (ROOT / "docs" / "guide" / "models.md").read_text(encoding="utf-8")
    assert f"`{info.value}`" in " ".join(text.split()), str(info.value)


def test_lists_and_tables_start_after_a_blank_line():
    """Python-Markdown (the site) reads a list item or a table row right after a paragraph's line as that
    paragraph's text: two of models.md's refusals showed as a literal "- A GGUF file ..." (a helper's)."""
    found = []
    for page in DOC_PAGES:
        lines, fenced = page.read_text().split("\n"), False
        for i, line in enumerate(lines):
            if line.strip().startswith("```"):
                fenced = not fenced
                continue
            prev = lines[i - 1] if i else ""
            if fenced or not prev.strip() or prev.startswith((" ", "|")) or re.match(r"^\s*([-*]|\d+\.) ", prev):
                continue
            if re.match(r"^([-*]|\d+\.) ", line) or line.startswith("|"):
                found.append(f"{page.relative_to(ROOT)}:{i + 1}: {line[:50]!r} after {prev[:50]!r}")
    assert found == []
