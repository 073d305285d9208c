"""Charts: matplotlib (an optional dependency: the bench extra) or an
ImportError saying how to get it, and figures written whole or not at all
(files.write_whole), for the benchmark's chart and `vkrope config --plot`.
Figures are made without pyplot: no backend is chosen or switched (a
caller's own plots keep theirs), and a backend named in the environment
(MPLBACKEND) that matplotlib does not know, which a file needs none of,
cannot fail a chart."""

from __future__ import annotations

import os
import sys
from typing import Any

from .files import write_whole


def import_matplotlib() -> Any:
    """The matplotlib package; ImportError with the way to get it."""
    try:
        return _imported()
    except ValueError:
        # matplotlib checks MPLBACKEND on its import and raises on a name it does not know; a file needs no
        # backend, so then the name is hidden for the import (and put back; a valid one is left alone).
        if "MPLBACKEND" not in os.environ:
            raise
        for name in [n for n in sys.modules if n == "matplotlib" or n.startswith("matplotlib.")]:
            del sys.modules[name]  # (the failed import's submodules hold its half-made package)
        backend = os.environ.pop("MPLBACKEND")
        try:
            return _imported()
        finally:
            os.environ["MPLBACKEND"] = backend


def _imported() -> Any:
    try:
        import matplotlib  # noqa: PLC0415  (the bench extra)
        import matplotlib.figure  # noqa: PLC0415,F401  (Figure, below)
    except ImportError:
        raise ImportError("the chart needs matplotlib: pip install matplotlib (vkrope's bench extra: pip install "
                          "'.[bench]' in its clone)") from None
    return matplotlib


def figure(**kw: Any) -> Any:
    """A new matplotlib Figure (`figsize=...`), drawn to a file by `save_figure`."""
    return import_matplotlib().figure.Figure(**kw)


def _as_written(fig: Any) -> None:
    """Titles, axis labels and legends drawn as written: a path, model or device name holding `$` is text, not
    TeX (mathtext refused `a_$2^{$.json` with a parser's traceback); tick labels keep their math (10^2)."""
    texts = list(fig.texts)  # (suptitle's among them)
    for ax in fig.axes:
        texts += [ax.title, ax.xaxis.label, ax.yaxis.label]
        legend = ax.get_legend()
        texts += legend.get_texts() if legend is not None else []
    for text in texts:
        text.set_parse_math(False)


def save_figure(fig: Any, path: str, what: str, **kw: Any) -> None:
    """Write `fig` to `path` in the format its extension names, laid out tight (its texts as written), whole or
    not at all (an interrupted chart leaves the old file); an OSError is a ValueError naming `what`."""
    fmt = os.path.splitext(path)[1][1:].lower() or "png"
    _as_written(fig)
    fig.tight_layout()
    write_whole(path, lambda fh: fig.savefig(fh, format=fmt, **kw), what)
