"""Charts: matplotlib (an optional dependency: the bench extra) loaded with
its file-only backend or an ImportError saying how to get it, and figures
written whole or not at all (files.write_whole), for the benchmark's chart
and `vkrope config --plot`."""

from __future__ import annotations

import os
from typing import Any

from .files import write_whole


def pyplot() -> Any:
    """matplotlib.pyplot with the Agg backend (no display needed); ImportError with the way to get it."""
    try:
        import matplotlib  # noqa: PLC0415  (the bench extra)
    except ImportError:
        raise ImportError("the chart needs matplotlib: pip install matplotlib (vkrope's bench extra: pip install "
                          "'.[bench]' in its clone)") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    return plt


def save_figure(fig: Any, path: str, what: str, **kw: Any) -> None:
    """Write `fig` to `path` in the format its extension names, whole or not at all (an interrupted chart
    leaves the old file); an OSError is a ValueError naming `what`. The figure is closed after."""
    fmt = os.path.splitext(path)[1][1:].lower() or "png"
    try:
        write_whole(path, lambda fh: fig.savefig(fh, format=fmt, **kw), what)
    finally:
        pyplot().close(fig)
