"""`vkrope config PATH --plot FILE` (vkrope/models/chart.py): what it draws
is the model's frequencies against the unscaled ones, checked against the
config's own numbers; the file is written, bad paths refused first."""

from __future__ import annotations

import json
import math
import os
import sys

import numpy as np
import pytest

import vkrope
from vkrope.__main__ import main
from vkrope.models import chart

CONFIGS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "hf_configs")


def cfg(name: str) -> dict:
    with open(os.path.join(CONFIGS, name + ".json")) as f:
        return json.load(f)


def test_llama3_bands_are_what_the_config_says():
    """Llama 3.1: wavelengths below orig / high_freq_factor unscaled, above orig / low_freq_factor scaled by
    factor, between them a smooth step (from the config's numbers, not vkrope's)."""
    c = cfg("llama-3.1-8b")
    rs = c["rope_scaling"]
    rope = vkrope.from_hf(c)
    (label, inv), = chart.curves(rope)
    base = chart.unscaled(rope)
    dim = c["hidden_size"] // c["num_attention_heads"]
    assert np.allclose(base, c["rope_theta"] ** -(np.arange(0, dim, 2) / dim), rtol=1e-12)
    wavelength = 2 * math.pi / base
    ratio = base / inv
    high = wavelength < rs["original_max_position_embeddings"] / rs["high_freq_factor"]
    low = wavelength > rs["original_max_position_embeddings"] / rs["low_freq_factor"]
    assert high.any() and low.any() and label == ""
    assert np.allclose(ratio[high], 1.0, rtol=1e-6) and np.allclose(ratio[low], rs["factor"], rtol=1e-6)
    mid = ~high & ~low
    assert ((ratio[mid] > 1) & (ratio[mid] < rs["factor"])).all()


def test_longrope_draws_both_factor_sets():
    rope = vkrope.from_hf(cfg("phi-3.5-mini"))
    (short_label, short), (long_label, long) = chart.curves(rope)
    c = cfg("phi-3.5-mini")["rope_scaling"]
    base = chart.unscaled(rope)
    assert np.allclose(base / short, c["short_factor"], rtol=1e-5)
    assert np.allclose(base / long, c["long_factor"], rtol=1e-5) and "position" in long_label


@pytest.mark.parametrize("name", ["llama-3.1-8b", "qwen3-vl-8b", "gemma-3-4b"])
def test_cli_writes_the_picture(name, tmp_path, capsys):
    out = tmp_path / "freqs.png"
    assert main(["config", os.path.join(CONFIGS, name + ".json"), "--plot", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000


def test_a_path_that_is_not_utf8_titles_the_picture(tmp_path):
    """The chart's title names PATH: one whose bytes are not UTF-8 (a surrogate in Python's str) gave a
    matplotlib TypeError of four lines; it is drawn escaped, and the command prints the path escaped on a
    UTF-8 terminal (stdout's strict encoder raised UnicodeEncodeError there)."""
    import subprocess

    path = os.path.join(os.fsencode(str(tmp_path)), b"\xff.json")
    with open(path, "wb") as fh:
        fh.write(open(os.path.join(CONFIGS, "llama-3.1-8b.json"), "rb").read())
    out = tmp_path / "u.png"
    env = {**os.environ, "PYTHONIOENCODING": "utf-8", "LC_ALL": "C.UTF-8"}
    res = subprocess.run([sys.executable, "-m", "vkrope", "config", path, "--plot", str(out)], env=env,
                         capture_output=True)
    assert res.returncode == 0, res.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and b"\\udcff.json" in res.stdout


@pytest.mark.parametrize("target, message", [("dir", "is a directory"), ("missing/x.png", "does not exist"),
                                             ("x.txt", "must end in .png, .svg or .pdf")])
def test_bad_plot_paths_are_refused_first(target, message, tmp_path, capsys):
    path = str(tmp_path) if target == "dir" else str(tmp_path / target)
    assert main(["config", os.path.join(CONFIGS, "llama-3.1-8b.json"), "--plot", path]) == 1
    err = capsys.readouterr().err
    assert message in err and "--plot" in err
    assert not os.path.exists(tmp_path / "x.txt")


def test_without_matplotlib_says_how_to_get_it(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match="pip install matplotlib \\(vkrope's bench extra"):
        chart.plot([vkrope.from_hf(cfg("llama-3.1-8b"))], str(tmp_path / "x.png"), "t")
    assert not os.path.exists(tmp_path / "x.png")


def test_unscaled_spans_the_rotary_dim():
    """Phi-2 rotates 32 of its 80 channels: the unscaled frequencies are theta^(-2i/32)."""
    c = cfg("phi-2")
    rope = vkrope.from_hf(c)
    rot = int(c["hidden_size"] // c["num_attention_heads"] * c["partial_rotary_factor"])
    assert np.allclose(chart.unscaled(rope), c.get("rope_theta", 10000.0) ** -(np.arange(0, rot, 2) / rot))
    assert np.allclose(chart.curves(rope)[0][1], chart.unscaled(rope), rtol=1e-12)


@pytest.mark.parametrize("name, scaled", [("qwen3-vl-8b", False), ("llama-3.1-8b", True)])
def test_the_wavelength_panel_is_not_float_rounding(name, scaled, monkeypatch, tmp_path):
    """An unscaled model's wavelength ratios are 1 within float64 rounding (1 +- 2e-16): an axis fitted to them
    drew that rounding as a jagged curve. The panel spans at least a factor 1.5 either side of 1 and every
    ratio drawn (Llama 3.1's 8)."""
    pytest.importorskip("matplotlib")
    seen = {}
    monkeypatch.setattr(chart, "save_figure", lambda fig, path, flag: seen.update(fig=fig))
    chart.plot([vkrope.from_hf(cfg(name))], str(tmp_path / "x.png"), name)
    lo, hi = seen["fig"].axes[1].get_ylim()
    assert lo <= 1 / 1.5 + 1e-12 and hi >= 1.5 - 1e-12
    assert (hi >= 8 * 1.5 - 1e-9) == scaled
