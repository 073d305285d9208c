"""ExecuTorch's `et_vk.apply_rotary_emb` (LLM, interleaved pairs) and `et_vk.apply_rotary_emb_hf`
(Hugging Face rotate-half) as the table kernel's requests (vkrope/kernels/table.py); see docs/FAMILY.md."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..arguments import check_row_index, check_storage_of, check_table_array, describe, int_arg
from . import full_width, resolve
from ..models import ModelRope
from ..freqs import InvFreqs, RopeFreqs, is_position_spec
from ..kernels.table import Request
from .lowering import lower
from .call import ArrayT, Call, two
from ..kernels import table as table_kernel
from ..runtime.dtypes import FREQS_DTYPES
from .table_args import (
    check_same_dtype, check_spec, check_table, q_and_k, refuse_grid_spec, refuse_missing_partner,
    spec_rows, spec_start, token_positions,
)


def _table_hint(name: str, t: Any, partner: Any, s: int, d: int) -> str:
    """What a numpy [S, D/2] table of the wrong shape likely is: ExecuTorch's `Rope.freqs_cos` of every position
    (its `Rope.get_freqs` takes the call's rows), or a full-width table of each value twice (GPT-J's
    repeat_interleave, cut to these pairs; rotate-half's cat, apply_rotary_emb_hf's); else ""."""
    shape = tuple(t.shape) if isinstance(t, np.ndarray) else ()
    if len(shape) == 2 and shape[1] == d // 2 and shape[0] > s:
        return (f" (a table of every position, as ExecuTorch's Rope.freqs_cos: pass the rows of these S = {s} "
                f"tokens, {name}[input_pos], as its Rope.get_freqs does)")
    if len(shape) != 2 or shape[1] != d or not d:
        return ""
    form = full_width.form_of(t, partner)
    rotate_half = f"a rotate-half {full_width.CAT} table goes to vkrope.apply_rotary_emb_hf"
    if form == full_width.CAT:
        return f" (D values a row, each twice: {rotate_half})"
    return (f" (D values a row, each twice: pass {full_width.cut(full_width.INTERLEAVED, 'D // 2', name)} of a "
            f"{full_width.INTERLEAVED} table" + ("" if form else f"; {rotate_half}") + ")")


def _bshd(name: str, x: Any, cos: Any, sin: Any, row_of: np.ndarray, rot_half: int, full: bool,
          inter: bool) -> Request:
    """The `Request` of [B, S, H, D] tensor `name`: rows of D values, H rows a token."""
    _, s, h, d = (int(v) for v in x.shape)
    return table_kernel.check_values(Request(
        x=x, out=None, cos=cos, sin=sin, row_of=row_of, n_tokens=s, batch_rows=s * h, token_rows=h, head_dim=d,
        rot_half=rot_half, full_table=full, interleaved=inter, storage=check_storage_of(name, x, "auto"), x_name=name,
        given=(("freqs_cos", cos), ("freqs_sin", sin))), ("freqs_cos", "freqs_sin"))


def check_llm(xq: Any, xk: Any, freqs_cos: Any, freqs_sin: Any) -> tuple[Request, Request]:
    """ExecuTorch `apply_rotary_emb(xq, xk, freqs_cos, freqs_sin)`: [B, S, H, D]
    tensors, [S, D/2] tables, interleaved pairs; one `Request` per tensor."""
    q, k, b, s, d = q_and_k(xq, xk, spec=freqs_cos)
    values = q.size + k.size
    if d % 2:
        raise ValueError(f"the head size D must be even; got {d} (xq shape {tuple(q.shape)})")
    if isinstance(freqs_cos, (ModelRope, InvFreqs)):  # (a ModelRope's may follow the call's tokens 0 .. S - 1)
        freqs_cos = resolve("freqs_cos", freqs_cos, np.arange(s) if isinstance(freqs_cos, ModelRope) else None, True,
                            d)
    if is_position_spec(freqs_cos):
        spec = check_spec("freqs_cos", freqs_cos, freqs_sin, "freqs_sin", d)
        rows = spec_rows(spec, token_positions(b, s, values), "positions")
        gen = lower(spec)
        return _bshd("xq", q, gen, None, rows, d // 2, False, True), _bshd("xk", k, gen, None, rows, d // 2, False, True)
    refuse_grid_spec("freqs_cos", freqs_cos)
    refuse_missing_partner("freqs_cos", freqs_cos, "freqs_sin", freqs_sin)
    fc = check_table("freqs_cos", freqs_cos, (s, d // 2), "[S, D/2]", q, x_name="xq",
                     hint=lambda: _table_hint("freqs_cos", freqs_cos, freqs_sin, s, d))
    fs = check_table("freqs_sin", freqs_sin, (s, d // 2), "[S, D/2]", q, x_name="xq",
                     hint=lambda: _table_hint("freqs_sin", freqs_sin, freqs_cos, s, d))
    check_same_dtype(fc, fs, "freqs_cos and freqs_sin")
    if values:  # (no values: no row is read, however many tokens; as the spec path and the ONNX tables)
        check_row_index("xq (its token s reads row s of freqs_cos)", s - 1)
    row_of = token_positions(b, s, values, dtype=np.int32)
    return _bshd("xq", q, fc, fs, row_of, d // 2, False, True), _bshd("xk", k, fc, fs, row_of, d // 2, False, True)


def check_hf(xq: Any, xk: Any, freqs_cos: Any, freqs_sin: Any, start_pos: Any = 0) -> tuple[Request, Request]:
    """ExecuTorch `apply_rotary_emb_hf(xq, xk, freqs_cos, freqs_sin, start_pos)`:
    [B, S, H, D] tensors, [max_seq, rot] full-width tables (Hugging Face's
    cat(freqs, freqs)), rotate-half pairs, token s reads row start_pos + s,
    channels past rot pass through."""
    q, k, b, s, d = q_and_k(xq, xk, spec=freqs_cos)
    values = q.size + k.size
    read = s if values else 0  # (no values: no position is read, however many tokens; B = 0 over 2^40)
    start = spec_start(start_pos, read) if isinstance(freqs_cos, (ModelRope, InvFreqs, RopeFreqs)) else 0
    if isinstance(freqs_cos, (ModelRope, InvFreqs)):
        freqs_cos = resolve("freqs_cos", freqs_cos, np.arange(start, start + read), False, d)
    if is_position_spec(freqs_cos):
        if freqs_cos.dim > d:
            raise ValueError(f"freqs_cos: the frequency spec has dim = {freqs_cos.dim} > D = {d}")
        spec = check_spec("freqs_cos", freqs_cos, freqs_sin, "freqs_sin", freqs_cos.dim)
        rows = spec_rows(spec, token_positions(b, s, values, start), "start_pos + s")
        gen = lower(spec)
        return (_bshd("xq", q, gen, None, rows, spec.dim // 2, False, False),
                _bshd("xk", k, gen, None, rows, spec.dim // 2, False, False))
    refuse_grid_spec("freqs_cos", freqs_cos)
    refuse_missing_partner("freqs_cos", freqs_cos, "freqs_sin", freqs_sin)
    check_table_array("freqs_cos", freqs_cos, FREQS_DTYPES)
    if freqs_cos.ndim != 2:
        raise ValueError(f"freqs_cos must be 2D [max_seq, rot]; got {describe(freqs_cos)}")
    max_seq, rot = (int(v) for v in freqs_cos.shape)
    fc = check_table("freqs_cos", freqs_cos, (max_seq, rot), "[max_seq, rot]", q, x_name="xq")
    fs = check_table("freqs_sin", freqs_sin, (max_seq, rot), "[max_seq, rot] (like freqs_cos)", q, x_name="xq")
    check_same_dtype(fc, fs, "freqs_cos and freqs_sin")
    if rot % 2 or rot > d or rot == 0:
        raise ValueError(f"the rotary width (freqs_cos.shape[1]) must be even, > 0 and <= D = {d}; got {rot}")
    start = int_arg("start_pos", start_pos, 0)
    if start + s > max_seq:
        raise ValueError(f"start_pos + S = {start} + {s} must be <= max_seq = {max_seq} (rows of freqs_cos)")
    if values:
        check_row_index("start_pos + S - 1", start + s - 1)
    row_of = token_positions(b, s, values, start, np.int32)
    return _bshd("xq", q, fc, fs, row_of, rot // 2, True, False), _bshd("xk", k, fc, fs, row_of, rot // 2, True, False)


def apply_rotary_emb(xq: ArrayT, xk: ArrayT, freqs_cos: Any, freqs_sin: Any) -> Call[tuple[ArrayT, ArrayT]]:
    """ExecuTorch's LLM RoPE (`et_vk.apply_rotary_emb`, llama `rope.py`):
    xq `[B, S, Hq, D]`, xk `[B, S, Hk, D]` (Hk may differ: grouped-query
    attention), freqs_cos / freqs_sin `[S, D/2]`, interleaved pairs (2i,
    2i+1); q and k in one submission. Returns `(xq_out, xk_out)`.
    freqs_cos may be a frequency spec instead (`RopeFreqs`, `InvFreqs`, or a
    `ModelRope` of interleaved pairs) with freqs_sin None: cos / sin
    computed in the shader at position s."""
    return two(table_kernel, *check_llm(xq, xk, freqs_cos, freqs_sin))


def apply_rotary_emb_hf(xq: ArrayT, xk: ArrayT, freqs_cos: Any, freqs_sin: Any,
                        start_pos: int = 0) -> Call[tuple[ArrayT, ArrayT]]:
    """ExecuTorch's Hugging Face RoPE (`et_vk.apply_rotary_emb_hf`): xq
    `[B, S, Hq, D]`, xk `[B, S, Hk, D]`, freqs_cos / freqs_sin `[max_seq,
    rot]` full width (HF's `cat(freqs, freqs)`; `rot <= D`, channels past it
    pass through), token s reads row `start_pos + s`, rotate-half pairs (i,
    i + rot/2); q and k in one submission. Returns `(xq_out, xk_out)`.
    freqs_cos may be a frequency spec instead (`RopeFreqs`, `InvFreqs`, or a
    `ModelRope` of rotate-half pairs) with freqs_sin None: cos / sin
    computed in the shader at position start_pos + s."""
    return two(table_kernel, *check_hf(xq, xk, freqs_cos, freqs_sin, start_pos))
