"""Hugging Face's full-width (cos, sin) tables, which hold each value twice: which of its two forms a table
takes (rotate-half's `cat(freqs, freqs)`, GPT-J's and Cohere's `repeat_interleave(freqs, 2)`), and the words
the front ends' errors use to name the cut or the call that takes it. Stated once here: a hint that named one
form's cut for the other's table led to a silently wrong result (4.8 off, a reviewer measured)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..arguments import REPEATS_READ
from ..runtime.array import DeviceArray
from ..runtime.dtypes import is_real_float_dtype

CAT = "cat(freqs, freqs)"
INTERLEAVED = "repeat_interleave(freqs, 2)"
# How each form is cut to one value per pair, its last axis [..., rot] to [..., rot / 2] (`h`: rot / 2 as written)
HALVES = {CAT: ":{h}", INTERLEAVED: "::2"}


def form_of(*tables: Any, rows: int = REPEATS_READ) -> str:
    """Which full-width form the numpy `tables` (last axis the columns) take ("" for none, or none to read):
    each value twice, columns j and j + half alike (cat) or 2j and 2j + 1 (repeat_interleave), in the first
    `rows` rows of their first item, not every column alike (a test's stand-in of one frequency, or a table of
    position 0 alone, is taken as given). Resident tables are not read back; only the first rows are read (a
    table may be a broadcast view of 2^40)."""
    host = []
    for t in tables:
        if isinstance(t, DeviceArray) or not isinstance(t, np.ndarray) or t.ndim < 2 or not t.size:
            continue
        first = t[(0,) * (t.ndim - 2)] if t.ndim > 2 else t  # (the first item's rows: a [B, S, rot] table's S)
        if not is_real_float_dtype(first.dtype):  # (ids, or a complex table, are no full-width form)
            continue
        host.append(np.asarray(first[:rows], np.float64))
    width = int(host[0].shape[1]) if host else 0
    if width < 2 or width % 2 or all(np.all(t == t[:, :1]) for t in host):
        return ""
    h = width // 2
    halves = {CAT: (slice(None, h), slice(h, None)), INTERLEAVED: (slice(0, None, 2), slice(1, None, 2))}
    for form, (one, other) in halves.items():
        if all(t.shape[1] == width and np.array_equal(t[:, one], t[:, other]) for t in host):
            return form
    return ""


def cut(form: str, h: str, name: str) -> str:
    """Table `name` cut to one value per pair, as code (`h`: the half width as the message writes it):
    `name[..., :h]` for cat, `name[..., ::2]` for repeat_interleave; for "" (a form not known) both, each named."""
    if form:
        return f"{name}[..., {HALVES[form].format(h=h)}]"
    return (f"{name}[..., {HALVES[CAT].format(h=h)}] of a {CAT} table, {name}[..., {HALVES[INTERLEAVED]}] of a "
            f"{INTERLEAVED} one")


def rotary_embedding_route(form: str) -> str:
    """The call that takes transformers' rotary-module tables (cos, sin) `[B or 1, S, rot]` (or `[S, rot]`) of
    x `[B, H, S, D]`: ONNX's op, one value per pair broadcast over the batch; interleaved pairs for a
    repeat_interleave table."""
    call = ("vkrope.rotary_embedding(x, c, s, rotary_embedding_dim=rot{inter}) with c = np.broadcast_to({c}, "
            "(B, S, rot // 2)) and s likewise")
    if form:
        return call.format(inter=", interleaved=1" if form == INTERLEAVED else "", c=cut(form, "rot // 2", "cos"))
    return (call.format(inter="", c="cos[..., :rot // 2]") + f" (of {CAT} tables; of {INTERLEAVED} ones c of "
            "cos[..., ::2], and interleaved=1)")
