"""`vkrope config PATH --plot FILE`: a model's inverse frequencies per pair
column against the unscaled ones (theta^(-2i/rot)), and the ratio of its
wavelengths to theirs: llama3's bands, YaRN's ramp, longrope's short and
long factors, linear scaling's constant, M-RoPE's sections by colour, one
line per layer type. The view engine authors draw when a long-context model
goes wrong. Needs matplotlib (the `bench` extra)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..charts import figure, save_figure
from .rope import ModelRope


def curves(rope: ModelRope) -> list[tuple[str, np.ndarray]]:
    """(label, inverse frequencies) to draw for one RoPE: at initialisation, and for rope types whose
    frequencies follow the call's positions (dynamic, longrope) also past twice the original context."""
    out = [("", rope.inv_freq(None, np.float64))]
    if rope.uses_seq_len():
        long = 2 * max(rope.orig, rope.mpe)
        out.append((f" (a call reaching position {long})", rope.inv_freq(long + 1, np.float64)))
    return out


def unscaled(rope: ModelRope) -> np.ndarray:
    """The default rope type's inverse frequencies of the same base and rotary dim, in float64."""
    return float(rope.theta) ** -(np.arange(0, rope.rotary_dim, 2, dtype=np.float64) / rope.rotary_dim)


def plot(ropes: list[ModelRope], path: str, title: str) -> None:
    """Draw `ropes` (one per layer type) to `path` (PNG, SVG or PDF, by its extension)."""
    fig = figure(figsize=(8, 7))
    top, bottom = fig.subplots(2, 1, sharex=True)
    ratios = [1.0]
    for i, rope in enumerate(ropes):
        said = ", ".join(n for n in (rope.part, rope.layer_type) if n)  # (DeepSeek-V3.2's parts: the same curves)
        name = f"{said}: " if said else ""
        base = unscaled(rope)
        cols = np.arange(len(base))
        top.plot(cols, base, color="0.6", linestyle=":", label=f"{name}unscaled (theta {rope.theta:g})")
        for label, inv in curves(rope):
            style = "--" if label else "-"
            top.plot(cols, inv, linestyle=style, color=f"C{i}", label=f"{name}{rope.rope_type}{label}")
            with np.errstate(divide="ignore"):
                ratio = base / inv
                bottom.plot(cols, ratio, linestyle=style, color=f"C{i}", label=f"{name}{rope.rope_type}{label}")
            ratios += [float(v) for v in ratio if np.isfinite(v) and v > 0]
        axes = rope.pair_axis
        if axes is not None:  # (M-RoPE: which position axis each pair reads; a still pair none)
            still = np.isinf(rope.freq_factors) if rope.freq_factors is not None else np.zeros(len(cols), bool)
            for a, colour in zip(range(3), ("C3", "C4", "C5")):
                sel = (np.asarray(axes) == a) & ~still
                top.scatter(cols[sel], base[sel], s=8, color=colour, label=f"{name}{('t', 'h', 'w')[a]} pairs")
    top.set_yscale("log")
    top.set_ylabel("inverse frequency")
    top.legend(fontsize=7)
    bottom.set_yscale("log")
    # (at least a factor 1.5 either side of 1: an unscaled model's ratios are 1 within float64 rounding, which
    # an axis fitted to them would draw as a jagged curve)
    bottom.set_ylim(min(ratios) / 1.5, max(ratios) * 1.5)
    bottom.set_ylabel("wavelength / unscaled")
    bottom.set_xlabel("pair column i (wavelength 2 pi / inverse frequency)")
    bottom.legend(fontsize=7)
    # (a path that is not UTF-8, or a config's lone surrogate, shown escaped: the font renderer takes text only)
    fig.suptitle(title.encode("utf-8", "backslashreplace").decode("utf-8"), fontsize=9)
    save_figure(fig, path, "--plot")


__all__: list[Any] = ["plot", "curves", "unscaled"]
