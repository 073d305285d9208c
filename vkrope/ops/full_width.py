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
    """Which full-width form the numpy `tables` (last axis the columns) take ("" for none, for both, or none to
    read): each value twice, columns j and j + half alike (cat) or 2j and 2j + 1 (repeat_interleave), in the
    first `rows` rows of the first `rows` items (a decode step's table of item 0 at position 0 has every column
    alike); a table both forms fit is no form: every column alike (a test's stand-in of one frequency, taken as
    given), or a one-row half-precision table (43 of 2 x 10^5 positions at rot 8, a reviewer counted).
    Resident tables are not read back; only those rows are read (a table may be a broadcast view of 2^40)."""
    host = []
    for t in tables:
        if isinstance(t, DeviceArray) or not isinstance(t, np.ndarray) or t.ndim < 2 or not t.size:
            continue
        if not is_real_float_dtype(t.dtype):  # (ids, or a complex table, are no full-width form)
            continue
        first = t[(0,) * (t.ndim - 3)] if t.ndim > 3 else t  # (a [B, S, rot] table's first items and rows)
        host.append(np.asarray(first[(slice(None, rows),) * (first.ndim - 1)], np.float64).reshape(-1, t.shape[-1]))
    width = int(host[0].shape[1]) if host else 0
    if width < 2 or width % 2 or any(t.shape[1] != width for t in host):
        return ""
    h = width // 2
    halves = {CAT: (slice(None, h), slice(h, None)), INTERLEAVED: (slice(0, None, 2), slice(1, None, 2))}
    fits = [form for form, (one, other) in halves.items() if all(np.array_equal(t[:, one], t[:, other]) for t in host)]
    return fits[0] if len(fits) == 1 else ""


def cut(form: str, h: str, name: str, pairing: dict[str, str] | None = None) -> str:
    """Table `name` cut to one value per pair, as code (`h`: the half width as the message writes it):
    `name[..., :h]` for cat, `name[..., ::2]` for repeat_interleave, each followed by the call's flag for its pairs
    where the call has one (`pairing`: form -> "interleaved=..."; the cut alone rotates the wrong pairs where the
    flag disagrees); for "" (a form not known) both, each named."""
    def one(f: str) -> str:
        return f"{name}[..., {HALVES[f].format(h=h)}]" + (f" with {pairing[f]}" if pairing else "")
    if form:
        return one(form)
    return f"{one(CAT)} of a {CAT} table, {one(INTERLEAVED)} of a {INTERLEAVED} one"


def rotary_embedding_route(form: str) -> str:
    """The call that takes transformers' rotary-module tables (cos, sin) `[B or 1, S, rot]` (or `[S, rot]`) of
    x `[B, H, S, D]`: ONNX's op, one value per pair broadcast over the batch, with the pairing of the form."""
    def one(f: str) -> str:
        return (f"vkrope.rotary_embedding(x, c, s, rotary_embedding_dim=rot, {ONNX_PAIRING[f]}) with c = "
                f"np.broadcast_to({cut(f, 'rot // 2', 'cos')}, (B, S, rot // 2)) and s likewise")
    return one(form) if form else f"{one(CAT)} (of {CAT} tables; of {INTERLEAVED} ones, {one(INTERLEAVED)})"


# The flag of each form's pairs in ONNX's op and in the decode step
ONNX_PAIRING = {CAT: "interleaved=0", INTERLEAVED: "interleaved=1"}
DECODE_PAIRING = {CAT: "interleaved=False", INTERLEAVED: "interleaved=True"}
