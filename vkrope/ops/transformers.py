"""transformers' `apply_rotary_pos_emb` with a model's own RoPE (`vkrope.apply_rotary_pos_emb`): q and k as
the table kernel's requests (vkrope/kernels/table.py), the frequencies computed in the shader."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..arguments import check_out, check_storage_of, describe
from ..models import ModelRope
from ..spec_checks import MROPE_AXES, check_position_ids
from ..freqs import InvFreqs, RopeFreqs
from ..kernels.table import Request
from ..runtime.dtypes import is_real_float_dtype
from .lowering import lower, several_axes
from . import full_width
from .call import ArrayT, Call, two
from ..kernels import table as table_kernel
from .table_args import q_and_k, swap_hint


def _same_memory(a: Any, b: Any) -> bool:
    """Whether two arguments may share memory (numpy: overlapping bytes;
    DeviceArrays: the same array)."""
    if a is None or b is None:
        return False
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return bool(np.shares_memory(a, b))
    return a is b


def check_pos_emb(q: Any, k: Any, spec: Any, position_ids: Any, *, out_q: Any = None,
                  out_k: Any = None) -> tuple[Request, Request]:
    """transformers' `apply_rotary_pos_emb(q, k, cos, sin)` with the rotary
    module's (cos, sin) of `position_ids` computed in the shader: q [B, Hq,
    S, D], k [B, Hk, S, D] of one dtype; spec a `ModelRope` (its pairs), or
    an `InvFreqs` / `RopeFreqs` (rotate-half); position_ids [B, S] (M-RoPE:
    [3, B, S], or [B, S] for text); channels past the rotary dim pass
    through. One `Request` per tensor."""
    qx, kx, b, s, d = q_and_k(q, k, ("q", "k"), token_axis=2, spec=spec)
    freqs: InvFreqs | RopeFreqs
    if isinstance(spec, ModelRope):
        if spec.mrope_section is not None and getattr(position_ids, "ndim", None) == 1 \
                and position_ids.shape[0] != 4 * s:  # (before the layout's own checks, which read it as [4 * S])
            raise ValueError(f"position_ids of one axis are llama.cpp's M-RoPE layout [4 * S] = [{4 * s}] for q's "
                             f"S = {s} (t | h | w | e, one item), or else [B, S] / [3, B, S]; got "
                             f"{list(position_ids.shape)}")
        p = spec.check_position_ids(position_ids)
        freqs, pairs = spec.freqs(p), spec.interleaved
    elif isinstance(spec, (InvFreqs, RopeFreqs)):
        freqs, pairs = spec, False
        p = check_position_ids(position_ids, several_axes(spec))
    else:
        raise TypeError(f"spec must be a vkrope.ModelRope (vkrope.from_hf), InvFreqs or RopeFreqs; got "
                        f"{describe(spec)}" + (
                            " (transformers' apply_rotary_pos_emb(q, k, cos, sin) takes the rotary module's tables; "
                            "this one takes the model's RoPE and position_ids. Its tables go to "
                            f"{full_width.rotary_embedding_route(full_width.form_of(spec, position_ids))}, once "
                            "for q and once for k)" if _a_table(spec) else ""))
    if p.shape[-2:-1] == (1,) and b != 1 and p.shape[-1] == s:  # one row serves every item (B = 0 too)
        p = np.broadcast_to(p, p.shape[:-2] + (b, s))
    if tuple(p.shape[-2:]) != (b, s):
        got = (b, int(p.shape[-1])) if p.ndim >= 2 and int(p.shape[-2]) in (1, b) else ()  # ([1, S] serves all B)
        raise ValueError(f"position_ids must be [B, S] = [{b}, {s}] (q's batch and tokens)"
                         f"{' (or [3, B, S])' if several_axes(freqs) else ''}; got {list(position_ids.shape)}"
                         f"{swap_hint('q and k', got, (b, int(qx.shape[1])))}")
    if freqs.dim > d:
        raise ValueError(f"spec: its rotary dim {freqs.dim} is more than the head dim D = {d} of q and k")
    gen = lower(freqs)
    if not (qx.size or kx.size):  # no kernel runs, and B * S may be any size (broadcast ids): no words
        p = p[..., :0]
    if several_axes(freqs):
        row_of = gen.words(np.moveaxis(p, 0, -1).reshape(-1, MROPE_AXES).astype(np.float64))
    else:
        row_of = gen.words(p.reshape(-1))
    row_of = np.ascontiguousarray(row_of, np.int32)
    given = (("position_ids", position_ids),)
    # transformers computes both results from the inputs; here k's job runs after q's, so out_q must not be
    # k's memory (k would be read rotated), nor out_k's (one result would be lost).
    for a, an, b2, bn in ((out_q, "out_q", kx, "k"), (out_q, "out_q", out_k, "out_k")):
        if _same_memory(a, b2):
            raise ValueError(f"{an} and {bn} are the same memory: q's result would overwrite {bn} before k is "
                             f"done; pass separate arrays (out_q may be q, out_k may be k)")

    def request(name: str, x: Any, out: Any, out_name: str) -> Request:
        h = int(x.shape[1])
        return Request(x=x, out=check_out(out, x, out_name, name), cos=gen, sin=None, row_of=row_of, n_tokens=s,
                       batch_rows=h * s, token_rows=1, head_dim=d, rot_half=freqs.dim // 2, full_table=False,
                       interleaved=pairs, storage=check_storage_of(name, x, "auto"), x_name=name, given=given)

    return request("q", qx, out_q, "out_q"), request("k", kx, out_k, "out_k")


def _a_table(t: Any) -> bool:
    """Whether `t`, given as a spec, reads as a rotary module's cos or sin table: a float numpy array of 2 or more
    axes (ids given in its place are not told about tables)."""
    return isinstance(t, np.ndarray) and t.ndim >= 2 and is_real_float_dtype(t.dtype)


def apply_rotary_pos_emb(q: ArrayT, k: ArrayT, spec: Any, position_ids: np.ndarray, *, out_q: ArrayT | None = None,
                         out_k: ArrayT | None = None) -> Call[tuple[ArrayT, ArrayT]]:
    """transformers' `apply_rotary_pos_emb(q, k, cos, sin)` with the model's
    own RoPE: `(cos, sin)` of `position_ids` as its rotary module computes
    them (`spec.cos_sin`), computed in the shader; q and k in one submission.

    q `[B, Hq, S, D]`, k `[B, Hk, S, D]` (grouped-query heads; transformers'
    `unsqueeze_dim=1`: q and k of `unsqueeze_dim=2`, `[B, S, H, D]`, go in as
    `q.transpose(0, 2, 1, 3)`, which a shape with H == S cannot tell), one dtype
    (float32, float16, bfloat16), numpy or DeviceArrays. spec: a
    `vkrope.ModelRope` (`vkrope.from_hf`, `vkrope.from_gguf`: its rope
    type, attention factor and pairs), or an `InvFreqs` / `RopeFreqs`
    (rotate-half). position_ids: int `[B, S]` (`[1, S]` serves every item);
    M-RoPE `[3, B, S]` (temporal, height, width; `[B, S]` is text, all three
    equal; llama.cpp's 1-D `[4 * S]` t | h | w | e for one item). Dynamic NTK and
    longrope decide by this call's `max(position_ids) + 1`. The first
    `rotary_dim` channels of each head rotate, the rest pass through; D
    must be the spec's head dim (DeepSeek: `qk_rope_head_dim`, the rotary
    part of its heads). DeepSeek's interleaved pairs come back interleaved
    (transformers' `apply_rotary_pos_emb_interleave` permutes them to
    `cat(even, odd)`). `out_q`, `out_k` receive the results (`out_q=q`,
    `out_k=k` in place; `out_q` on k's or out_k's memory: ValueError).
    Returns `(q_out, k_out)`."""
    return two(table_kernel, *check_pos_emb(q, k, spec, position_ids, out_q=out_q, out_k=out_k))
