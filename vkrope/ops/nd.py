"""N-D axial RoPE (`vkrope.apply_nd`, `vkrope.apply` with an `NdFreqs`): the table kernel's requests
(vkrope/kernels/table.py), the frequencies computed in the shader from each token's ids."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..arguments import check_out, check_storage_of, describe, int_arg
from ..nd_freqs import NdFreqs
from ..kernels.table import Request
from .lowering import lower
from .call import ArrayT, Call, one
from ..kernels import table as table_kernel
from .table_args import check_tensor
from ..runtime.dtypes import is_int


def check_nd(x: Any, spec: Any, ids: Any, *, token_axis: Any = -2, inverse: Any = False, out: Any = None,
             storage: Any = "auto", ids_name: str = "ids") -> Request:
    """`vkrope.apply_nd(x, spec, ids)` (and `apply(x, spec, positions=ids)`
    with an `NdFreqs` spec): x [..., N, C] (token_axis -2) or [..., N, H, C]
    (-3, Wan's [B, S, H, D]), ids [N, n_axes] for every leading item or
    [B, N, n_axes] per item of x's first axis; the first spec.dim channels
    rotate, the rest pass through."""
    if not isinstance(spec, NdFreqs):
        raise TypeError(f"spec must be a vkrope.NdFreqs; got {describe(spec)}")
    x = check_tensor("x", x)
    storage = check_storage_of("x", x, storage)
    if not is_int(token_axis):
        raise TypeError(f"token_axis must be an int, -2 or -3; got {describe(token_axis)}")
    if token_axis not in (-2, -3):
        raise ValueError(f"token_axis must be -2 (x [..., N, C]) or -3 (x [..., N, H, C]); got {describe(token_axis)}")
    if not isinstance(inverse, (bool, np.bool_)):
        raise TypeError(f"inverse must be a bool; got {describe(inverse)}")
    if x.ndim < -token_axis:
        raise ValueError(f"x must have at least {-token_axis} axes with token_axis={token_axis}; got shape "
                         f"{tuple(x.shape)}")
    c = int(x.shape[-1])
    if spec.dim > c:
        raise ValueError(f"spec: axes_dim sum to {spec.dim} channels, more than x's last axis ({c})")
    n = int(x.shape[token_axis])
    heads = int(x.shape[-2]) if token_axis == -3 else 1
    lead = tuple(int(v) for v in x.shape[:token_axis])
    v = spec.check_ids(ids, ids_name)
    if v.shape[-2] != n:
        raise ValueError(f"{ids_name} must hold one row per token: N = {n} (x's axis {token_axis}); got "
                         f"{list(v.shape)}{_token_axis_hint(x, tuple(v.shape), int(token_axis), ids_name)}")
    if v.ndim == 3 and (not lead or lead[0] != v.shape[0]):
        shared = f" (ids shared by every item are [N, {spec.n_axes}]: pass {ids_name}[0])" if v.shape[0] == 1 else ""
        raise ValueError(f"{ids_name} [B, N, {spec.n_axes}] needs x's first axis to be B = {v.shape[0]} "
                         f"(and N on axis {token_axis}); got x {tuple(x.shape)}{shared}")
    if not x.size:  # no kernel runs, and N may be any size (broadcast ids): no words
        v = v[..., :0, :]
    if inverse:
        v = -v  # the rotation by -angle
    words = lower(spec).words(v)  # [N, w], or [B, N, w]
    rows = math.prod(x.shape[:-1])
    if token_axis == -2:
        # Rows run (leading items..., token): shared ids are one row_of entry
        # per token for every item (batch_rows spans all rows, so the batch
        # index stays 0); per-item ids one per (item of the first axis, token).
        row_of = words.reshape(-1, words.shape[-1])
        batch_rows = max(1, rows if words.ndim == 2 else rows // max(1, int(v.shape[0])))
    else:
        # Rows run (leading items..., token, head): one row_of entry per
        # (leading item, token), the ids copied for each leading item they
        # are shared by (the heads share one entry).
        if words.ndim == 3:
            words = words.reshape((words.shape[0],) + (1,) * (len(lead) - 1) + words.shape[1:])
        row_of = np.broadcast_to(words, lead + words.shape[-2:]).reshape(-1, words.shape[-1])
        batch_rows = n * heads
    return Request(x=x, out=check_out(out, x), cos=lower(spec), sin=None, row_of=np.ascontiguousarray(row_of, np.int32),
                   n_tokens=n, batch_rows=batch_rows, token_rows=heads, head_dim=c, rot_half=spec.dim // 2,
                   full_table=False, interleaved=spec.interleaved, storage=storage, given=((ids_name, ids),))


def _token_axis_hint(x: Any, ids_shape: tuple[int, ...], token_axis: int, ids_name: str) -> str:
    """The hint of an ids / x mismatch that x's other token axis explains
    (diffusers' [B, S, H, D] with the default token_axis=-2), where per-item
    ids' B is x's first axis with it too (the hint's call must then run)."""
    other = -3 if token_axis == -2 else -2
    rows = ids_shape[-2]
    if x.ndim < 3 or int(x.shape[other]) != rows:
        return ""
    if len(ids_shape) == 3 and (x.ndim <= -other or int(x.shape[0]) != ids_shape[0]):
        return ""
    layout = "[..., N, H, C] (diffusers' [B, S, H, D])" if other == -3 else "[..., N, C] ([B, H, S, D])"
    how = f"pass token_axis={other}" if ids_name == "ids" else f"use vkrope.apply_nd(x, spec, ids, token_axis={other})"
    return f" (x's axis {other} has {rows}: if x is {layout}, {how})"


def check_apply_nd(x: Any, freqs: NdFreqs, *, out: Any = None, inverse: Any = False, repeat: Any = 1,
                   exclude_last: Any = 0, positions: Any = None, storage: Any = "auto") -> Request:
    """`vkrope.apply(x, spec, positions=ids)` with an `NdFreqs` spec: the ids
    come as `positions`; repeat and exclude_last have no meaning there."""
    if int_arg("repeat", repeat, 1) != 1 or int_arg("exclude_last", exclude_last, 0) != 0:
        raise ValueError(f"repeat and exclude_last do not apply to a vkrope.NdFreqs spec (every token has its ids in "
                         f"positions); got repeat={repeat}, exclude_last={exclude_last}")
    if positions is None:
        raise ValueError(f"freqs is a vkrope.NdFreqs spec: pass positions, the ids [N, {freqs.n_axes}] (a position "
                         "per axis of each token; vkrope.grid_ids makes grids)")
    return check_nd(x, freqs, positions, inverse=inverse, out=out, storage=storage, ids_name="positions")


def apply_nd(
    x: ArrayT,
    spec: NdFreqs,
    ids: np.ndarray,
    *,
    token_axis: int = -2,
    inverse: bool = False,
    out: ArrayT | None = None,
    storage: str = "auto",
) -> Call[ArrayT]:
    """N-D axial rotary position embedding (Flux, Wan, HunyuanVideo,
    CogVideoX, Qwen-Image; SAM2's grid is the 2-axis case), cos / sin
    computed in the shader from each token's ids.

    x: float32, float16 or bfloat16 `[..., N, C]` (token_axis=-2: BFL's
    Flux reference code's `[B, H, S, D]`) or `[..., N, H, C]`
    (token_axis=-3: diffusers' attention of Flux, Wan, HunyuanVideo and
    Qwen-Image, `[B, S, H, D]`; pass it for that layout always: where H =
    S, the shape cannot tell the two apart); the first `spec.dim` channels rotate (per axis, see
    `vkrope.NdFreqs`), the rest pass through. ids: `[N, n_axes]` positions
    per axis (integers or floats; fractional and negative allowed, |id| <
    2^30) shared by every leading item, or `[B, N, n_axes]`, one set per
    item of x's first axis (`vkrope.grid_ids` builds grids). The bytes moved
    are x, the result and the ids. `inverse=True` rotates by -angle. `out`
    receives the result (may be x itself, or overlap it). `storage`:
    "auto", "buffer" or "texture3d".

    Returns a new array of x's shape and dtype (or `out`; a `DeviceArray`
    for a `DeviceArray` x).
    """
    return one(table_kernel, check_nd(x, spec, ids, token_axis=token_axis, inverse=inverse, out=out,
                                       storage=storage))
