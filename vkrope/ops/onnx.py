"""ONNX `RotaryEmbedding` (opset 23) as the table kernel's requests (vkrope/kernels/table.py):
`vkrope.rotary_embedding`'s arguments checked and mapped onto rows and table rows; see docs/FAMILY.md."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..arguments import (
    check_out, check_plain_array, check_row_index, check_storage_of, check_table_array, describe, int_arg,
)
from . import full_width, per_axis_hint, resolve
from ..models import ModelRope
from ..spec_checks import check_positions
from ..freqs import InvFreqs, RopeFreqs, is_position_spec
from ..kernels.table import Request
from .lowering import lower
from .call import ArrayT, Call, one
from ..kernels import table as table_kernel
from ..runtime.array import DeviceArray
from ..runtime.dtypes import FREQS_DTYPES, is_integer_dtype, without_repeats
from .table_args import (
    check_flag, check_same_dtype, check_spec, check_table, check_tensor, position_rows, rows2d,
    refuse_grid_spec, refuse_missing_partner, spec_rows, swap_hint, token_positions,
)


def check_onnx(x: Any, cos_cache: Any, sin_cache: Any, position_ids: Any = None, *, interleaved: Any = 0,
               rotary_embedding_dim: Any = 0, num_heads: Any = 0, out: Any = None, storage: Any = "auto") -> Request:
    """ONNX RotaryEmbedding-23's arguments into a `Request` (docs/FAMILY.md)."""
    given = (("cos_cache", cos_cache), ("sin_cache", sin_cache), ("position_ids", position_ids))
    x = check_tensor("x", x)
    # (None: the attribute absent, as onnx.reference passes num_heads (no default in the schema); the other two
    # take it as well, each its schema's default, 0)
    inter = check_flag("interleaved", 0 if interleaved is None else interleaved)
    rot = int_arg("rotary_embedding_dim", 0 if rotary_embedding_dim is None else rotary_embedding_dim, 0)
    heads = int_arg("num_heads", 0 if num_heads is None else num_heads, 0)
    storage = check_storage_of("x", x, storage)
    heads_note = ""  # (3-D x: where its head size came from)
    if x.ndim == 4:
        b, h, s, d = (int(v) for v in x.shape)
        batch_rows = h * s
        swapped: tuple[int, ...] = (b, h)  # [B, S] were x [B, S, H, D] (the layout hint of a shape mismatch)
    elif x.ndim == 3:
        b, s, hidden = (int(v) for v in x.shape)
        if heads == 0:
            raise ValueError(f"x is 3D [B, S, H*D] = {tuple(x.shape)}: num_heads must be given (> 0)")
        if hidden % heads:
            raise ValueError(f"num_heads = {heads} must divide the last axis of x ({hidden}, shape {tuple(x.shape)})")
        d = hidden // heads
        batch_rows = s
        swapped = ()
        heads_note = f"D = {hidden} / num_heads {heads} = {d}"
    else:
        raise ValueError(f"x must be 4D [B, H, S, D] or 3D [B, S, H*D]; got shape {tuple(x.shape)}")
    rot_given = rot
    rot = rot or d
    if d == 1 and not rot_given:  # (no even rotary_embedding_dim fits: the advice below could not be taken)
        raise ValueError(f"x: its head size D = 1 has no pair of channels to rotate (x of shape {tuple(x.shape)})")
    if rot % 2 and not rot_given:
        raise ValueError(f"x: its head size D = {d} is odd: pass an even rotary_embedding_dim < D (0 means D)")
    if rot > d:
        raise ValueError(f"rotary_embedding_dim must be <= the head size {d}; got {rot}")
    if rot % 2:
        raise ValueError(f"rotary_embedding_dim must be even; got {rot}")
    half_from = f"{heads_note}, so rot/2 = {rot // 2}" if heads_note and not rot_given else ""
    given_spec = cos_cache  # (a ModelRope's words: its M-RoPE ids per axis)
    if isinstance(cos_cache, (ModelRope, InvFreqs)):
        cos_cache = resolve("cos_cache", cos_cache, _spec_positions(position_ids, s), inter, d)
    if is_position_spec(cos_cache):
        row_of = _onnx_spec_rows(cos_cache, sin_cache, position_ids, rot, (b, s), swapped, d, x.size,
                                 per_axis_hint(given_spec, position_ids, (b, s), "rotary_embedding"))
        return Request(x=x, out=check_out(out, x), cos=lower(cos_cache), sin=None, row_of=row_of, n_tokens=s,
                       batch_rows=batch_rows, token_rows=1, head_dim=d, rot_half=rot // 2, full_table=False,
                       interleaved=inter, storage=storage, given=given)
    refuse_grid_spec("cos_cache", cos_cache)
    refuse_missing_partner("cos_cache", cos_cache, "sin_cache", sin_cache)
    if position_ids is not None:
        check_table_array("cos_cache", cos_cache, FREQS_DTYPES)
        if cos_cache.ndim != 2:
            raise ValueError(f"with position_ids, cos_cache must be 2D [max_pos, rot/2]; got {describe(cos_cache)}")
        shape = (int(cos_cache.shape[0]), rot // 2)
        cos_cache = check_table("cos_cache", cos_cache, shape,
                                "[max_pos, rot/2]" + _note("cos_cache", cos_cache, sin_cache, shape, half_from), x)
        sin_cache = check_table("sin_cache", sin_cache, shape, "[max_pos, rot/2] (like cos_cache)" +
                                _note("sin_cache", sin_cache, cos_cache, shape, half_from), x)
        check_same_dtype(cos_cache, sin_cache, "cos_cache and sin_cache")
        row_of = position_rows("position_ids", position_ids, (b, s), shape[0], x.size, swapped)
    else:
        shape3, swapped3 = (b, s, rot // 2), swapped and swapped + (rot // 2,)
        cos_cache = check_table("cos_cache", cos_cache, shape3, "[B, S, rot/2] (no position_ids)" +
                                _note("cos_cache", cos_cache, sin_cache, shape3, half_from), x, swapped3)
        sin_cache = check_table("sin_cache", sin_cache, shape3, "[B, S, rot/2] (no position_ids)" +
                                _note("sin_cache", sin_cache, cos_cache, shape3, half_from), x, swapped3)
        check_same_dtype(cos_cache, sin_cache, "cos_cache and sin_cache")
        cos_cache, sin_cache = rows2d(cos_cache, b * s, rot // 2), rows2d(sin_cache, b * s, rot // 2)
        if x.size:
            check_row_index("cos_cache (row b * S + s of its [B, S] tokens)", b * s - 1)
        row_of = np.arange(b * s if x.size else 0, dtype=np.int32)  # (row b * S + s; none for no values)
    return table_kernel.check_values(Request(
        x=x, out=check_out(out, x), cos=cos_cache, sin=sin_cache, row_of=row_of, n_tokens=s, batch_rows=batch_rows,
        token_rows=1, head_dim=d, rot_half=rot // 2, full_table=False, interleaved=inter, storage=storage,
        given=given), ("cos_cache", "sin_cache"))


def _note(name: str, t: Any, partner: Any, shape: tuple[int, ...], half_from: str) -> str:
    """` (half_from)` where table `t`'s width is not the `shape`'s (a wrong num_heads shows as a wrong table width:
    the message says where the width came from); without a half_from, a numpy table `name` of twice the
    shape's width is told how to cut Hugging Face's full-width forms (read with its `partner`); else ""."""
    width = tuple(getattr(t, "shape", ())[-1:])
    if width == shape[-1:]:
        return ""
    if half_from:  # (where num_heads sets the width, a wrong one is as likely as a table of each value twice)
        return f" ({half_from})"
    # (a table of another rank, or resident, is not told how to cut a full-width one)
    if width != (2 * shape[-1],) or not isinstance(t, np.ndarray) or t.ndim != len(shape):
        return ""
    form = full_width.form_of(t, partner)
    return (f" (a table of each value twice, as Hugging Face's full-width ones: pass "
            f"{full_width.cut(form, 'rot // 2', name, full_width.ONNX_PAIRING)})")


def _onnx_spec_rows(spec: RopeFreqs, other: Any, position_ids: Any, rot: int, bs: tuple[int, int],
                    swapped: tuple[int, ...], d: int, values: int, per_axis: str) -> np.ndarray:
    """row_of of an ONNX call with a RopeFreqs spec for its caches: the
    position ids (token s at position s without them); `swapped`: [B, S]
    were x's axes 1 and 2 exchanged, d: the head size, values: x's size,
    `per_axis`: the words for an M-RoPE model's ids per axis."""
    b, s = bs
    hint = f" (pass rotary_embedding_dim={spec.dim} to rotate the first {spec.dim})" if spec.dim < d else ""
    check_spec("cos_cache", spec, other, "sin_cache", rot, hint)
    if position_ids is None:
        return spec_rows(spec, token_positions(b, s, values), "positions")
    check_plain_array("position_ids", position_ids)
    if not is_integer_dtype(position_ids.dtype):
        raise TypeError(f"position_ids must be an integer array of shape {(b, s)}; got dtype {position_ids.dtype}")
    if position_ids.shape != (b, s):
        raise ValueError(f"position_ids must have shape {(b, s)}; got {position_ids.shape}"
                         f"{per_axis or swap_hint('x', position_ids.shape, swapped)}")
    if not values:  # (no kernel runs: a broadcast array of any size is checked, not copied)
        check_positions("position_ids", without_repeats(position_ids))
        return spec_rows(spec, np.zeros(0, np.int64), "position_ids")
    return spec_rows(spec, position_ids, "position_ids")


def _spec_positions(position_ids: Any, s: int) -> Any:
    """The positions a ModelRope decides by (dynamic, longrope): position_ids
    when they are a proper integer array, else the tokens' own (a bad
    position_ids is reported by the checks that follow)."""
    if isinstance(position_ids, np.ndarray) and is_integer_dtype(position_ids.dtype) and position_ids.size:
        return position_ids
    return np.arange(s) if position_ids is None else None


def rotary_embedding(
    x: ArrayT,
    cos_cache: np.ndarray | DeviceArray | RopeFreqs | InvFreqs | ModelRope,
    sin_cache: np.ndarray | DeviceArray | None,
    position_ids: np.ndarray | None = None,
    *,
    interleaved: int | bool | None = 0,
    rotary_embedding_dim: int | None = 0,
    num_heads: int | None = 0,
    out: ArrayT | None = None,
    storage: str = "auto",
) -> Call[ArrayT]:
    """ONNX `RotaryEmbedding` (opset 23).

    x: float32 / float16 / bfloat16 `[B, H, S, D]`, or `[B, S, H*D]` with `num_heads`.
    None for `num_heads` is the attribute absent (onnx.reference passes it
    so); None for `interleaved` or `rotary_embedding_dim` is their default,
    0, as well.
    With `position_ids` (int `[B, S]`, each in `[0, max_pos)`), the caches
    are `[max_pos, rot/2]` and token (b, s) reads row `position_ids[b, s]`;
    without, they are `[B, S, rot/2]`. `rotary_embedding_dim` (`rot`, 0 =
    D) rotates the first `rot` channels of each head, the rest pass
    through; `interleaved` (0/1) pairs channels (2i, 2i+1), else rotate-half
    (i, i + rot/2). `out` receives the result (may be x itself).
    `storage`: "auto", "buffer" or "texture3d". `cos_cache` may instead
    be a frequency spec (`RopeFreqs`, `InvFreqs`, or a `ModelRope`, which
    decides its frequencies from the positions) with `sin_cache` None: cos
    and sin are then computed in the shader at `position_ids` (token s at
    position s without them). DeviceArrays in (x, the caches) stay on the
    device: a DeviceArray x gives a DeviceArray result.
    """
    return one(table_kernel, check_onnx(x, cos_cache, sin_cache, position_ids, interleaved=interleaved,
                                        rotary_embedding_dim=rotary_embedding_dim, num_heads=num_heads, out=out,
                                        storage=storage))
