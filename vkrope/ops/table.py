"""RoPE with separate cos / sin tables: ONNX `RotaryEmbedding` (opset 23),
ExecuTorch's `et_vk.apply_rotary_emb` (LLM, interleaved pairs) and
`et_vk.apply_rotary_emb_hf` (Hugging Face rotate-half), all on one kernel,
glsl/rope_table.glsl.

Every call becomes a `Request`: the tensor seen as R rows of C values
(its last axis), each row holding C / D heads of D values; row r is token
s = (r // token_rows) % S of batch item r // batch_rows; `row_of[b * S + s]` is the table
row that token reads (ONNX position_ids, ExecuTorch's start_pos + s, ...).
The `check_*` functions map their operator's arguments onto it; the
plan, launches, tables, row blocks and float64 reference below serve all
of them. See docs/FAMILY.md for the contracts. N-D axial RoPE
(`vkrope.apply_nd`, `check_nd`) runs here too: its frequencies are
computed in the shader from each token's ids (an `NdFreqs` spec in `cos`,
row_of holding the ids' words per token).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..arguments import (
    MAX_PAIRS, X_DTYPES, check_alive, check_out, check_plain_array, check_resident_table_dtype, check_storage_of,
    check_table_array, describe,
    int_arg,
)
from . import ONE_BITS, TensorRequest, check_model_head, given_tables, magnitude_bits, resolve, spec_angles, spec_rows
from ..models import ModelRope
from ..freqs import MROPE_AXES, InvFreqs, NdFreqs, RopeFreqs, check_position_ids, check_positions, is_position_spec
from ..runtime.dtypes import BFLOAT16, TENSOR_DTYPE_NAMES, axis, table_dtype
from ..runtime.kernels import find
from ..runtime import fit
from ..runtime.layout import same_view, tensor_extent, texels
from ..runtime.operator import Tensor
from ..runtime.steps import READ, WRITE, Arg, Launch, arg

KERNEL = "rope_table"
TABLE_DTYPES = (np.dtype(np.float32), np.dtype(np.float16), BFLOAT16, np.dtype(np.float64))


@dataclass
class Request(TensorRequest):
    """One checked call of the table kernel."""

    x: Any  # numpy array or DeviceArray, float32 / float16 / bfloat16
    out: Any  # numpy array, DeviceArray or None
    cos: Any  # numpy array [table rows, table_width] (float32/float16/bfloat16/float64) or DeviceArray
    sin: Any
    row_of: np.ndarray  # int32 [B * S]: table row of each (b, s) (an N-D spec: [B * S, id_words], its ids)
    n_tokens: int  # S
    batch_rows: int  # rows per batch item (H * S for 4D x, S for [B, S, H*D])
    token_rows: int  # consecutive rows of one token (H for [B, S, H, D], else 1)
    head_dim: int  # D
    rot_half: int  # rot / 2
    full_table: bool  # tables hold all rot columns (Hugging Face), else rot / 2
    interleaved: bool
    storage: str  # "buffer" or "texture3d" (a DeviceArray x: its own)
    row_offset: int = 0  # global index of x's first row (row blocks)
    x_name: str = "x"  # the caller's name of x (the ExecuTorch ops: xq, xk)
    given: tuple[tuple[str, Any], ...] = ()  # the caller's tables and position ids, as passed

    @property
    def generated(self) -> bool:
        """Frequencies computed in the shader from a `RopeFreqs`, `InvFreqs` or `NdFreqs` spec (in `cos`)."""
        return isinstance(self.cos, (RopeFreqs, InvFreqs, NdFreqs))

    @property
    def id_words(self) -> int:
        """int32 words of row_of per (b, s): 2 per axis of a several-axis spec
        (N-D, M-RoPE), else 1."""
        return 2 * self.cos.n_axes if several_axes(self.cos) else 1

    @property
    def row_values(self) -> int:
        """C: values per row (the last axis)."""
        return int(self.x.shape[-1])

    @property
    def rows(self) -> int:
        """R: rows of x."""
        return int(math.prod(self.x.shape[:-1]))

    @property
    def table_width(self) -> int:
        """Values per table row."""
        return 2 * self.rot_half if self.full_table else self.rot_half

    @property
    def empty(self) -> bool:
        """Nothing to compute (no rows, or rows of no values)."""
        return not (self.rows and self.row_values)

    def declare(self) -> list[Tensor]:
        """x and out, moved by the runtime; the caller's cos / sin tables (and
        position ids), which this op encodes."""
        from ..runtime.array import DeviceArray  # noqa: PLC0415  (array imports nothing of ours)

        return [Tensor(self.x_name, self.x, self.shape, self.dtype, READ, self.storage), *given_tables(self.given),
                Tensor("out", self.out, self.shape, self.dtype, WRITE, self.storage,
                       on_device=isinstance(self.x, DeviceArray))]

    @property
    def in_place(self) -> bool:
        """Whether out may be x: interleaved pairs with an even D share a
        texel; otherwise an invocation reads a partner texel that another
        one writes."""
        return self.interleaved and self.head_dim % 2 == 0


def several_axes(spec: Any) -> bool:
    """Whether a spec's tokens carry a position per axis (an `NdFreqs`, or an
    M-RoPE `InvFreqs`): the kernel's ND mode, each column reading its axis."""
    return isinstance(spec, NdFreqs) or (isinstance(spec, InvFreqs) and spec.mrope)


# --- argument checks ------------------------------------------------------------
def _flag(name: str, value: Any) -> bool:
    """ONNX passes attributes as ints: 0 / 1 (and bools) are accepted."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)) and int(value) in (0, 1):
        return bool(value)
    raise (ValueError if isinstance(value, (int, np.integer)) else TypeError)(
        f"{name} must be 0 or 1 (or a bool); got {describe(value)}")


def _tensor(name: str, x: Any) -> Any:
    from ..runtime.array import DeviceArray  # noqa: PLC0415  (array imports nothing of ours)

    if isinstance(x, DeviceArray):
        check_alive(name, x)
    else:
        check_plain_array(name, x)
    if np.dtype(x.dtype) not in X_DTYPES:
        raise TypeError(f"{name} must have dtype {TENSOR_DTYPE_NAMES}; got {x.dtype}")
    if math.prod(x.shape) > 2 * MAX_PAIRS:  # the kernel indexes values with 32-bit integers
        raise ValueError(f"{name} has {math.prod(x.shape)} values; vkrope handles at most {2 * MAX_PAIRS} per call")
    return x


def _table(name: str, t: Any, shape: tuple[int, ...], what: str, x: Any) -> Any:
    from ..runtime.array import DeviceArray  # noqa: PLC0415

    check_table_array(name, t, TABLE_DTYPES)
    if isinstance(t, DeviceArray):
        check_resident_table_dtype(name, t, x)
    if tuple(t.shape) != shape:
        raise ValueError(f"{name} must have shape {what} = {shape}; got {tuple(t.shape)}")
    return t


def _spec(name: str, spec: RopeFreqs, other: Any, other_name: str, rot: int) -> RopeFreqs:
    """A RopeFreqs spec given in place of both tables."""
    if other is not None:
        raise ValueError(f"{other_name} must be None when {name} is a frequency spec; got {describe(other)}")
    if spec.dim != rot:
        raise ValueError(f"{name}: the frequency spec has dim = {spec.dim}; this call rotates {rot} channels")
    return spec


def _spec_rows(spec: RopeFreqs, positions: np.ndarray, name: str) -> np.ndarray:
    """row_of for a spec: what the kernel reads per token (ops.spec_rows)."""
    return spec_rows(spec, check_positions(name, positions))


def _onnx_spec_rows(spec: RopeFreqs, other: Any, position_ids: Any, rot: int, b: int, s: int) -> np.ndarray:
    """row_of of an ONNX call with a RopeFreqs spec for its caches: the
    position ids (token s at position s without them)."""
    _spec("cos_cache", spec, other, "sin_cache", rot)
    if position_ids is None:
        return _spec_rows(spec, np.tile(np.arange(s), b), "positions")
    check_plain_array("position_ids", position_ids)
    if position_ids.dtype == np.bool_ or not np.issubdtype(position_ids.dtype, np.integer):
        raise TypeError(f"position_ids must be an integer array of shape {(b, s)}; got dtype {position_ids.dtype}")
    if position_ids.shape != (b, s):
        raise ValueError(f"position_ids must have shape {(b, s)}; got {position_ids.shape}")
    return _spec_rows(spec, position_ids, "position_ids")


def _spec_positions(position_ids: Any, s: int) -> Any:
    """The positions a ModelRope decides by (dynamic, longrope): position_ids
    when they are a proper integer array, else the tokens' own (a bad
    position_ids is reported by the checks that follow)."""
    if isinstance(position_ids, np.ndarray) and position_ids.dtype.kind in "iu" and position_ids.size:
        return position_ids
    return np.arange(s) if position_ids is None else None


def _same_dtype(a: Any, b: Any, names: str) -> None:
    if (not isinstance(a, np.ndarray) or not isinstance(b, np.ndarray)) and a.dtype != b.dtype:
        raise TypeError(f"{names} must have one dtype when either is a DeviceArray; got {a.dtype} and {b.dtype}")


def _positions(name: str, p: Any, shape: tuple[int, ...], rows: int) -> np.ndarray:
    check_plain_array(name, p)
    if p.dtype == np.bool_ or not np.issubdtype(p.dtype, np.integer):
        raise TypeError(f"{name} must be an integer array of shape {shape}; got dtype {p.dtype}")
    if p.shape != shape:
        raise ValueError(f"{name} must have shape {shape}; got {p.shape}")
    bad = p[(p < 0) | (p >= rows)]
    if bad.size:
        raise ValueError(f"{name} entries must lie in [0, {rows}) (rows of the cos / sin caches); got {int(bad.flat[0])}")
    return np.array(p, dtype=np.int32).reshape(-1)  # a copy: out may alias position_ids


def check_onnx(x: Any, cos_cache: Any, sin_cache: Any, position_ids: Any = None, *, interleaved: Any = 0,
               rotary_embedding_dim: Any = 0, num_heads: Any = 0, out: Any = None, storage: Any = "auto") -> Request:
    """ONNX RotaryEmbedding-23's arguments into a `Request` (docs/FAMILY.md)."""
    given = (("cos_cache", cos_cache), ("sin_cache", sin_cache), ("position_ids", position_ids))
    x = _tensor("x", x)
    inter = _flag("interleaved", interleaved)
    rot = int_arg("rotary_embedding_dim", rotary_embedding_dim, 0)
    heads = int_arg("num_heads", num_heads, 0)
    storage = check_storage_of("x", x, storage)
    if x.ndim == 4:
        b, h, s, d = (int(v) for v in x.shape)
        batch_rows = h * s
    elif x.ndim == 3:
        b, s, hidden = (int(v) for v in x.shape)
        if heads == 0:
            raise ValueError(f"x is 3D [B, S, H*D] = {tuple(x.shape)}: num_heads must be given (> 0)")
        if hidden % heads:
            raise ValueError(f"num_heads = {heads} must divide the last axis of x ({hidden}, shape {tuple(x.shape)})")
        d = hidden // heads
        batch_rows = s
    else:
        raise ValueError(f"x must be 4D [B, H, S, D] or 3D [B, S, H*D]; got shape {tuple(x.shape)}")
    rot_given = rot
    rot = rot or d
    if rot % 2 and not rot_given:
        raise ValueError(f"the head size D = {d} is odd: pass an even rotary_embedding_dim < D (0 means D)")
    if rot > d:
        raise ValueError(f"rotary_embedding_dim must be <= the head size {d}; got {rot}")
    if rot % 2:
        raise ValueError(f"rotary_embedding_dim must be even; got {rot}")
    if isinstance(cos_cache, (ModelRope, InvFreqs)):
        cos_cache = resolve("cos_cache", cos_cache, _spec_positions(position_ids, s), inter, d)
    if is_position_spec(cos_cache):
        row_of = _onnx_spec_rows(cos_cache, sin_cache, position_ids, rot, b, s)
        return Request(x=x, out=check_out(out, x), cos=cos_cache, sin=None, row_of=row_of, n_tokens=s,
                       batch_rows=batch_rows, token_rows=1, head_dim=d, rot_half=rot // 2, full_table=False,
                       interleaved=inter, storage=storage, given=given)
    if position_ids is not None:
        check_table_array("cos_cache", cos_cache, TABLE_DTYPES)
        if cos_cache.ndim != 2:
            raise ValueError(f"with position_ids, cos_cache must be 2D [max_pos, rot/2]; got {describe(cos_cache)}")
        shape = (int(cos_cache.shape[0]), rot // 2)
        cos_cache = _table("cos_cache", cos_cache, shape, "[max_pos, rot/2]", x)
        sin_cache = _table("sin_cache", sin_cache, shape, "[max_pos, rot/2] (like cos_cache)", x)
        _same_dtype(cos_cache, sin_cache, "cos_cache and sin_cache")
        row_of = _positions("position_ids", position_ids, (b, s), shape[0])
    else:
        shape3 = (b, s, rot // 2)
        cos_cache = _table("cos_cache", cos_cache, shape3, "[B, S, rot/2] (no position_ids)", x)
        sin_cache = _table("sin_cache", sin_cache, shape3, "[B, S, rot/2] (no position_ids)", x)
        _same_dtype(cos_cache, sin_cache, "cos_cache and sin_cache")
        cos_cache, sin_cache = _rows2d(cos_cache, b * s, rot // 2), _rows2d(sin_cache, b * s, rot // 2)
        row_of = np.arange(b * s, dtype=np.int32)
    return Request(x=x, out=check_out(out, x), cos=cos_cache, sin=sin_cache, row_of=row_of, n_tokens=s,
                   batch_rows=batch_rows, token_rows=1, head_dim=d, rot_half=rot // 2, full_table=False, interleaved=inter,
                   storage=storage, given=given)


def _rows2d(t: Any, rows: int, width: int) -> Any:
    """A [B, S, w] table as [B*S, w] (a view for numpy; DeviceArrays are flat already)."""
    from ..runtime.array import DeviceArray  # noqa: PLC0415

    if isinstance(t, DeviceArray):
        return t
    return t.reshape(rows, width)


def _q_and_k(xq: Any, xk: Any, names: tuple[str, str] = ("xq", "xk"),
             token_axis: int = 1) -> tuple[Any, Any, int, int, int]:
    """q and k of one dtype, 4D with their tokens on `token_axis` ([B, S, H,
    D]: 1, ExecuTorch's; [B, H, S, D]: 2, transformers'), sharing B, S and
    D: (q, k, B, S, D)."""
    qn, kn = names
    layout = "[B, S, H, D]" if token_axis == 1 else "[B, H, S, D]"
    q, k = _tensor(qn, xq), _tensor(kn, xk)
    for name, x in ((qn, q), (kn, k)):
        if x.ndim != 4:
            raise ValueError(f"{name} must be 4D {layout}; got shape {tuple(x.shape)}")
    b, s, d = (int(q.shape[a]) for a in (0, token_axis, 3))
    if tuple(int(k.shape[a]) for a in (0, token_axis, 3)) != (b, s, d):
        raise ValueError(f"{kn} {tuple(k.shape)} must share B, S and D with {qn} {tuple(q.shape)} ({layout})")
    if q.dtype != k.dtype:
        raise TypeError(f"{qn} and {kn} must have one dtype; got {q.dtype} and {k.dtype}")
    return q, k, b, s, d


def _bshd(name: str, x: Any, cos: Any, sin: Any, row_of: np.ndarray, rot_half: int, full: bool,
          inter: bool) -> Request:
    """The `Request` of [B, S, H, D] tensor `name`: rows of D values, H rows a token."""
    _, s, h, d = (int(v) for v in x.shape)
    return Request(x=x, out=None, cos=cos, sin=sin, row_of=row_of, n_tokens=s, batch_rows=s * h, token_rows=h,
                   head_dim=d, rot_half=rot_half, full_table=full, interleaved=inter,
                   storage=check_storage_of(name, x, "auto"), x_name=name,
                   given=(("freqs_cos", cos), ("freqs_sin", sin)))


def check_llm(xq: Any, xk: Any, freqs_cos: Any, freqs_sin: Any) -> tuple[Request, Request]:
    """ExecuTorch `apply_rotary_emb(xq, xk, freqs_cos, freqs_sin)`: [B, S, H, D]
    tensors, [S, D/2] tables, interleaved pairs; one `Request` per tensor."""
    q, k, b, s, d = _q_and_k(xq, xk)
    if d % 2:
        raise ValueError(f"the head size D must be even; got {d} (xq shape {tuple(q.shape)})")
    freqs_cos = resolve("freqs_cos", freqs_cos, np.arange(s), True, d)
    if is_position_spec(freqs_cos):
        spec = _spec("freqs_cos", freqs_cos, freqs_sin, "freqs_sin", d)
        rows = _spec_rows(spec, np.tile(np.arange(s), b), "positions")
        return _bshd("xq", q, spec, None, rows, d // 2, False, True), _bshd("xk", k, spec, None, rows, d // 2, False, True)
    fc = _table("freqs_cos", freqs_cos, (s, d // 2), "[S, D/2]", q)
    fs = _table("freqs_sin", freqs_sin, (s, d // 2), "[S, D/2]", q)
    _same_dtype(fc, fs, "freqs_cos and freqs_sin")
    row_of = np.tile(np.arange(s, dtype=np.int32), b)
    return _bshd("xq", q, fc, fs, row_of, d // 2, False, True), _bshd("xk", k, fc, fs, row_of, d // 2, False, True)


def check_hf(xq: Any, xk: Any, freqs_cos: Any, freqs_sin: Any, start_pos: Any = 0) -> tuple[Request, Request]:
    """ExecuTorch `apply_rotary_emb_hf(xq, xk, freqs_cos, freqs_sin, start_pos)`:
    [B, S, H, D] tensors, [max_seq, rot] full-width tables (Hugging Face's
    cat(freqs, freqs)), rotate-half pairs, token s reads row start_pos + s,
    channels past rot pass through."""
    q, k, b, s, d = _q_and_k(xq, xk)
    if isinstance(freqs_cos, (ModelRope, InvFreqs)):
        first = int_arg("start_pos", start_pos, 0)
        freqs_cos = resolve("freqs_cos", freqs_cos, np.arange(first, first + s), False, d)
    if is_position_spec(freqs_cos):
        if freqs_cos.dim > d:
            raise ValueError(f"freqs_cos: the frequency spec has dim = {freqs_cos.dim} > D = {d}")
        spec = _spec("freqs_cos", freqs_cos, freqs_sin, "freqs_sin", freqs_cos.dim)
        start = int_arg("start_pos", start_pos, 0)
        rows = _spec_rows(spec, np.tile(np.arange(start, start + s), b), "start_pos + s")
        return (_bshd("xq", q, spec, None, rows, spec.dim // 2, False, False),
                _bshd("xk", k, spec, None, rows, spec.dim // 2, False, False))
    check_table_array("freqs_cos", freqs_cos, TABLE_DTYPES)
    if freqs_cos.ndim != 2:
        raise ValueError(f"freqs_cos must be 2D [max_seq, rot]; got {describe(freqs_cos)}")
    max_seq, rot = (int(v) for v in freqs_cos.shape)
    fc = _table("freqs_cos", freqs_cos, (max_seq, rot), "[max_seq, rot]", q)
    fs = _table("freqs_sin", freqs_sin, (max_seq, rot), "[max_seq, rot] (like freqs_cos)", q)
    _same_dtype(fc, fs, "freqs_cos and freqs_sin")
    if rot % 2 or rot > d or rot == 0:
        raise ValueError(f"the rotary width (freqs_cos.shape[1]) must be even, > 0 and <= D = {d}; got {rot}")
    start = int_arg("start_pos", start_pos, 0)
    if start + s > max_seq:
        raise ValueError(f"start_pos + S = {start} + {s} must be <= max_seq = {max_seq} (rows of freqs_cos)")
    row_of = np.tile(np.arange(start, start + s, dtype=np.int32), b)
    return _bshd("xq", q, fc, fs, row_of, rot // 2, True, False), _bshd("xk", k, fc, fs, row_of, rot // 2, True, False)


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
    qx, kx, b, s, d = _q_and_k(q, k, ("q", "k"), token_axis=2)
    freqs: InvFreqs | RopeFreqs
    if isinstance(spec, ModelRope):
        check_model_head(spec, d, "q")
        p = spec.check_position_ids(position_ids)
        freqs, pairs = spec.freqs(p), spec.interleaved
    elif isinstance(spec, (InvFreqs, RopeFreqs)):
        freqs, pairs = spec, False
        p = check_position_ids(position_ids, several_axes(spec))
    else:
        raise TypeError(f"spec must be a vkrope.ModelRope (vkrope.from_hf), InvFreqs or RopeFreqs; got "
                        f"{describe(spec)}")
    if p.shape[-2:-1] == (1,) and b > 1 and p.shape[-1] == s:  # one row for every item, as transformers broadcasts
        p = np.broadcast_to(p, p.shape[:-2] + (b, s))
    if tuple(p.shape[-2:]) != (b, s):
        raise ValueError(f"position_ids must be [B, S] = [{b}, {s}] (q's batch and tokens)"
                         f"{' (or [3, B, S])' if several_axes(freqs) else ''}; got {list(position_ids.shape)}")
    if freqs.dim > d:
        raise ValueError(f"spec: its rotary dim {freqs.dim} is more than the head dim D = {d} of q and k")
    if several_axes(freqs):
        ids = np.moveaxis(p, 0, -1).reshape(b * s, MROPE_AXES).astype(np.float64)
        row_of = nd_words(freqs, ids)
    else:
        row_of = spec_rows(freqs, p.reshape(-1))
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
        return Request(x=x, out=check_out(out, x, out_name, name), cos=freqs, sin=None, row_of=row_of, n_tokens=s,
                       batch_rows=h * s, token_rows=1, head_dim=d, rot_half=freqs.dim // 2, full_table=False,
                       interleaved=pairs, storage=check_storage_of(name, x, "auto"), x_name=name, given=given)

    return request("q", qx, out_q, "out_q"), request("k", kx, out_k, "out_k")


def nd_words(spec: Any, ids: np.ndarray) -> np.ndarray:
    """int32 [..., 2 * n_axes]: what the kernel reads of each token's ids
    (checked float64): per axis (whole, frac) with id = whole + frac / 2^32
    for the exact angle, else (the float32 id's bits, 0)."""
    words = np.zeros(ids.shape + (2,), np.int32)
    if spec.angle == "exact":
        q = np.round(ids * 2.0**32)  # the id in units of 2^-32: exact in float64 below 2^52
        whole = np.floor(q / 2.0**32)
        words[..., 0] = whole.astype(np.int32)
        words[..., 1] = (q - whole * 2.0**32).astype(np.uint32).view(np.int32)
    else:
        words[..., 0] = ids.astype(np.float32).view(np.int32)
    return words.reshape(ids.shape[:-1] + (2 * spec.n_axes,))


def check_nd(x: Any, spec: Any, ids: Any, *, token_axis: Any = -2, inverse: Any = False, out: Any = None,
             storage: Any = "auto", ids_name: str = "ids") -> Request:
    """`vkrope.apply_nd(x, spec, ids)` (and `apply(x, spec, positions=ids)`
    with an `NdFreqs` spec): x [..., N, C] (token_axis -2) or [..., N, H, C]
    (-3, Wan's [B, S, H, D]), ids [N, n_axes] for every leading item or
    [B, N, n_axes] per item of x's first axis; the first spec.dim channels
    rotate, the rest pass through."""
    if not isinstance(spec, NdFreqs):
        raise TypeError(f"spec must be a vkrope.NdFreqs; got {describe(spec)}")
    x = _tensor("x", x)
    storage = check_storage_of("x", x, storage)
    if not isinstance(token_axis, (int, np.integer)) or isinstance(token_axis, (bool, np.bool_)) \
            or token_axis not in (-2, -3):
        raise ValueError(f"token_axis must be -2 (x [..., N, C]) or -3 (x [..., N, H, C]); got {token_axis!r}")
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
                         f"{list(v.shape)}")
    if inverse:
        v = -v  # the rotation by -angle
    if v.ndim == 3 and (not lead or lead[0] != v.shape[0]):
        raise ValueError(f"{ids_name} [B, N, {spec.n_axes}] needs x's first axis to be B = {v.shape[0]} "
                         f"(and N on axis {token_axis}); got x {tuple(x.shape)}")
    words = nd_words(spec, v)  # [N, w], or [B, N, w]
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
    return Request(x=x, out=check_out(out, x), cos=spec, sin=None, row_of=np.ascontiguousarray(row_of, np.int32),
                   n_tokens=n, batch_rows=batch_rows, token_rows=heads, head_dim=c, rot_half=spec.dim // 2,
                   full_table=False, interleaved=spec.interleaved, storage=storage, given=((ids_name, ids),))


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


# --- plan ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Chunk:
    """One dispatch: rows [r0, r1) (global); the x / out buffer bindings
    start at value `x_base` and span `x_values`; the tables are segment
    `table` (its first table row `t_base`, its row_of from (b, s) `idx_base`)."""

    r0: int
    r1: int
    x_base: int
    x_values: int
    t_base: int
    idx_base: int
    table: int


@dataclass(frozen=True)
class Plan:
    """Everything about one call but the data; hashable."""

    storage: str
    x_dtype: str
    f_dtype: str
    row_values: int
    head_dim: int
    rot_half: int
    table_width: int
    n_tokens: int
    batch_rows: int
    token_rows: int
    interleaved: bool
    full_table: bool
    workgroup: tuple[int, int]
    image_extent: tuple[int, int, int] | None
    row_offset: int
    chunks: tuple[Chunk, ...]
    segments: tuple[tuple, ...]
    in_place: bool  # out may be x (see Request.in_place)
    x_name: str = "x"  # the request's name of x (the ExecuTorch ops: xq, xk)
    exact: bool = False  # frequencies in the shader with the exact angle
    id_words: int = 0  # an N-D spec: row_of words per token (0: not N-D)
    magnitude_bits: int = ONE_BITS  # frequencies in the shader: float32 bits of the cos / sin factor (YaRN)

    def may_alias(self, written: str, read: str) -> bool:
        """out may be x only for interleaved pairs with an even D."""
        return self.in_place and (written, read) == ("out", self.x_name)

    def launches(self, where: Any, tables: list[list[Arg]]) -> tuple[Launch, ...]:
        """One launch per chunk over x and out (where: resource and byte
        offset of row `row_offset` of each) and each segment's (cos, sin,
        row_of) ranges."""
        x, out = where[self.x_name], where["out"]
        kernel = find(KERNEL, storage=self.storage, x=axis(self.x_dtype),
                      freqs="gen" if self.f_dtype == "gen" else axis(self.f_dtype))
        itemsize = np.dtype(self.x_dtype).itemsize
        wx, wy = self.workgroup
        width, height = self.image_extent[:2] if self.image_extent else (0, 0)
        flags = kernel.flag("FLAG_FULL_TABLE") if self.full_table else 0
        origin = self.row_offset * self.row_values  # value index of the bound tensor's start
        launches = []
        for ch in self.chunks:
            if self.storage == "buffer":
                off = (ch.x_base - origin) * itemsize
                xa = Arg(x[0], x[0].serial, x[1] + off, ch.x_values * itemsize)
                oa = Arg(out[0], out[0].serial, out[1] + off, ch.x_values * itemsize, WRITE)
            else:
                xa, oa = Arg(x[0], x[0].serial), Arg(out[0], out[0].serial, access=WRITE)
            ca, sa, ra = tables[ch.table]
            push = dict(
                row_begin=ch.r0, row_end=ch.r1,
                row_values=self.row_values, head_dim=self.head_dim, rot_half=self.rot_half,
                table_width=self.table_width, n_tokens=self.n_tokens, batch_rows=self.batch_rows,
                token_rows=self.token_rows, x_base=ch.x_base if self.storage == "buffer" else self.row_offset, t_base=ch.t_base, idx_base=ch.idx_base, flags=flags,
                image_height=height, image_width=width, magnitude=self.magnitude_bits, id_words=self.id_words,
            )
            grid = (math.ceil(texels(self.row_values) / wx), math.ceil((ch.r1 - ch.r0) / wy), 1)
            whole = self.head_dim % 4 == 0 and self.rot_half % 4 == 0
            spec = dict(local_size_x=wx, local_size_y=wy, ALIGNED=self.row_values % 4 == 0, WHOLE_TEXELS=whole,
                        INTERLEAVED=self.interleaved, EXACT=self.exact, ND=self.id_words > 0)
            launches.append(Launch(kernel.name, tuple((k, int(v)) for k, v in spec.items()), tuple(push.items()),
                                   kernel.args(out=oa, x=xa, cos=ca, sin=sa, row_of=ra), grid))
        return tuple(launches)


def f_dtype_of(req: Request) -> str:
    """The table dtype the kernel reads: a 16-bit dtype only when x and both
    tables have it, else float32; "gen" when the frequencies are computed in
    the shader."""
    if req.generated:
        return "gen"
    return table_dtype(req.dtype, req.cos.dtype, req.sin.dtype)


def _resident(t: Any) -> bool:
    return not isinstance(t, np.ndarray)


def plan(req: Request, limits: Any) -> Plan:
    """The dispatches of `req` on a device with `limits` (PhysicalDeviceInfo)."""
    storage = req.storage
    x_dtype, f_name = req.dtype, f_dtype_of(req)
    c = req.row_values
    width = texels(c)
    wx, wy = fit.workgroup(width, limits, f"x has {c} values per row")
    _, max_gy, _ = limits.max_compute_work_group_count
    align = max(limits.min_storage_buffer_offset_alignment, 4 * x_dtype.itemsize)
    budget = fit.binding_budget(limits, x_dtype.itemsize)
    row_bytes = c * x_dtype.itemsize
    # (generated: the tables are dim/2 frequencies; a token costs its row_of entry, or its ids)
    t_row_bytes = 4 * req.id_words if req.generated else req.table_width * np.dtype(f_name).itemsize
    table_budget = fit.table_budget(limits, t_row_bytes, budget)
    if max(row_bytes, t_row_bytes) > budget:
        raise ValueError(f"one row of x ({c} values) does not fit the device's maxStorageBufferRange")
    extent = None
    if storage == "texture3d":
        extent = tensor_extent(tuple(req.x.shape), limits.max_image_dimension_3d)  # as DeviceArrays lie
    resident_tables = _resident(req.cos) or _resident(req.sin)
    chunk_budget = fit.window_budget(table_budget, t_row_bytes, resident_tables,
                                     limits.min_storage_buffer_offset_alignment)
    rows_per = min(max_gy * wy, chunk_budget // t_row_bytes)
    if storage == "buffer":
        rows_per = min(rows_per, max(1, budget // row_bytes))
    chunks, segments = [], {}  # type: ignore[var-annotated]
    x_align = max(1, align // x_dtype.itemsize)
    origin = req.row_offset * c  # value index where the bound tensor starts (a row block's first row)

    def halve(span: tuple[int, int]) -> list[tuple[int, int]]:
        r0, r1 = span
        if r1 - r0 <= req.token_rows:
            return []
        # A resident cache window too wide for these tokens (scattered
        # positions): fewer tokens per dispatch, each with its own window.
        mid = r0 + max(req.token_rows, (r1 - r0) // 2 // req.token_rows * req.token_rows)
        return [(r0, mid), (mid, r1)]

    fitted = fit.fit_spans(_row_spans(req, rows_per), lambda span: _segment(
        req, *_token_span(req, *span), t_row_bytes, table_budget, limits), halve)
    for (r0, r1), seg in fitted:
        table = segments.setdefault(seg, len(segments))
        x0 = origin + (r0 * c - origin) // x_align * x_align  # an aligned offset into the bound tensor
        chunks.append(Chunk(r0, r1, x0, r1 * c - x0, seg[1] if seg[0] == "window" else 0, _token_span(req, r0, r1)[0],
                            table))
    return Plan(
        storage=storage, x_dtype=x_dtype.name, f_dtype=f_name, row_values=c, head_dim=req.head_dim,
        rot_half=req.rot_half, table_width=req.table_width, n_tokens=req.n_tokens, batch_rows=req.batch_rows,
        token_rows=req.token_rows, interleaved=req.interleaved, full_table=req.full_table, workgroup=(wx, wy), image_extent=extent,
        row_offset=req.row_offset, chunks=tuple(chunks), segments=tuple(segments), in_place=req.in_place,
        x_name=req.x_name,
        exact=req.generated and req.cos.angle == "exact",
        magnitude_bits=magnitude_bits(req.cos) if req.generated else ONE_BITS,
        id_words=req.id_words if several_axes(req.cos) else 0,
    )


def _tokens_repeat(req: Request) -> bool:
    """[B, H, S, D]: the S tokens repeat for every head (rows run b, h, s)."""
    return req.token_rows == 1 and req.batch_rows > req.n_tokens


def _row_spans(req: Request, rows_per: int) -> list[tuple[int, int]]:
    """Chunks of at most `rows_per` rows, each reading at most `rows_per`
    tokens' table rows. Where tokens repeat per head ([B, H, S, D]) chunks
    end at run boundaries: within one head's S tokens when S is more than a
    chunk, else within one batch item, else at whole batch items; so every
    head's chunk binds the same table segment."""
    first, last = req.row_offset, req.row_offset + req.rows
    run = 0
    if _tokens_repeat(req):
        run = req.n_tokens if req.n_tokens > rows_per else req.batch_rows
        if rows_per >= run:
            rows_per = rows_per // run * run
    spans = []
    r0 = first
    while r0 < last:
        r1 = min(last, r0 + rows_per)
        if run:
            r1 = min(r1, r0 // run * run + max(run, rows_per)) if rows_per >= run else min(r1, (r0 // run + 1) * run)
        spans.append((r0, r1))
        r0 = r1
    return spans


def _token_span(req: Request, r0: int, r1: int) -> tuple[int, int]:
    """[bs0, bs1): the (batch, token) indices rows [r0, r1) read, or a range
    that holds them all."""
    s = req.n_tokens
    if not _tokens_repeat(req):  # rows run in token order: bs(r) = r // token_rows grows with r
        return r0 // req.token_rows, (r1 - 1) // req.token_rows + 1
    if r0 // s == (r1 - 1) // s:  # inside one head's run of S tokens
        b = r0 // req.batch_rows
        return b * s + r0 % s, b * s + (r1 - 1) % s + 1
    return r0 // req.batch_rows * s, (r1 - 1) // req.batch_rows * s + s


def _table_rows(t: Any, width: int) -> int:
    """Rows of a table (a [B, S, w] DeviceArray counts B * S)."""
    return int(math.prod(t.shape)) // width if width else 0


def _segment(req: Request, bs0: int, bs1: int, t_row_bytes: int, budget: int, limits: Any) -> tuple:
    """The tables tokens (b, s) in [bs0, bs1) bind (fit.table_segment):
    ("whole" | "window", t0, t1, bs0, bs1) table rows bound as they are (a
    resident table: whole when it fits one binding); ("rows" | "tokens",
    bs0, bs1) rows gathered for these tokens (their distinct rows, or one a
    token), row_of renumbered to them."""
    if req.generated:
        return ("gen", bs0, bs1)  # the frequencies are whole in every segment; the tokens' positions
    resident = _resident(req.cos) or _resident(req.sin)
    seg = fit.table_segment(req.row_of[bs0:bs1], bs1 - bs0, t_row_bytes, budget,
                            resident_rows=_table_rows(req.cos, req.table_width) if resident else None,
                            offset_align=limits.min_storage_buffer_offset_alignment)
    if seg.kind in ("whole", "window"):
        return (seg.kind, seg.r0, seg.r1, bs0, bs1)
    return (seg.kind, bs0, bs1)


def plan_key(req: Request) -> tuple | None:
    """Never memoised: a plan's table segments depend on the rows each token
    reads (position ids, start_pos)."""
    return None


def tables(req: Request, pl: Plan) -> list[list[Any]]:
    """Each segment's (cos, sin, row_of): numpy arrays to pack, or `Arg`s
    over resident tables."""
    out = []
    width = req.table_width
    for seg in pl.segments:
        kind = seg[0]
        if kind == "gen":
            inv, quarter = kernel_tables(req.cos)
            out.append([inv, quarter, np.ascontiguousarray(req.row_of[seg[1]:seg[2]], dtype=np.int32).reshape(-1)])
            continue
        if kind in ("whole", "window"):
            _, t0, t1, bs0, bs1 = seg
            if kind == "whole":
                t1 = _table_rows(req.cos, width)
            cos, sin = (_window(t, t0, t1, width, pl.f_dtype) for t in (req.cos, req.sin))
            row_of = req.row_of[bs0:bs1]
        else:
            _, bs0, bs1 = seg
            if kind == "tokens":  # a row per token, in token order
                keep, row_of = req.row_of[bs0:bs1], np.arange(bs1 - bs0)
            else:  # the distinct rows, renumbered
                keep, row_of = np.unique(req.row_of[bs0:bs1], return_inverse=True)
            cos = np.ascontiguousarray(req.cos[keep], dtype=pl.f_dtype).reshape(-1)
            sin = np.ascontiguousarray(req.sin[keep], dtype=pl.f_dtype).reshape(-1)
        out.append([cos, sin, np.ascontiguousarray(row_of, dtype=np.int32)])
    return out


@functools.lru_cache(maxsize=64)
def kernel_tables(spec: RopeFreqs | InvFreqs | NdFreqs) -> tuple[np.ndarray, np.ndarray]:
    """What this kernel reads of a spec in place of cos / sin (made once per
    spec): the float32 inverse frequencies and, for the exact angle, their
    quarter turns (uint32, 4 words a column); zeros for the unused one. A
    several-axis spec's (N-D, M-RoPE) fourth word of each column is its
    axis (in both modes)."""
    if spec.angle == "exact":
        inv, quarter = np.zeros(spec.dim // 2, np.float32), np.array(spec.quarter_turns, np.uint32)
    else:
        inv, quarter = np.asarray(spec.inv_freq32, np.float32), np.zeros((spec.dim // 2, 4), np.uint32)
    if isinstance(spec, (NdFreqs, InvFreqs)) and several_axes(spec):
        quarter[:, 3] = spec.pair_axis
    quarter = np.ascontiguousarray(quarter).reshape(-1)
    inv.flags.writeable = False
    quarter.flags.writeable = False
    return inv, quarter


def _window(t: Any, t0: int, t1: int, width: int, f_dtype: str) -> Any:
    if isinstance(t, np.ndarray):
        return np.ascontiguousarray(t[t0:t1], dtype=f_dtype).reshape(-1)
    if np.dtype(t.dtype) != np.dtype(f_dtype):
        raise TypeError(f"a device-resident table must have dtype {f_dtype} here (the dtype the kernel reads); "
                        f"got {t.dtype}")
    return fit.window(t.resource, t0, min(t1, _table_rows(t, width)), width * np.dtype(t.dtype).itemsize)


def row_blocks(req: Request, outs: dict[str, np.ndarray], max_bytes: int) -> list[tuple[Request, dict[str, Any]]]:
    """A call larger than one allocation as calls on blocks of whole rows
    (numpy x and out, C-contiguous out). `out` may overlap x or the tables:
    they are then read from copies."""
    out = outs["out"]
    x = req.x.reshape(req.rows, req.row_values)
    o = out.reshape(req.rows, req.row_values)
    if np.shares_memory(x, o) and not (same_view(x, o) and req.in_place):
        x = x.copy()
    if isinstance(req.cos, np.ndarray) and np.shares_memory(req.cos, o):
        req = replace(req, cos=req.cos.copy())
    if isinstance(req.sin, np.ndarray) and np.shares_memory(req.sin, o):
        req = replace(req, sin=req.sin.copy())
    per = max(1, max_bytes // max(1, req.row_values * req.dtype.itemsize))
    # (row_offset is global: a block of a block, which the runtime makes
    # when a block's tables do not fit beside it, starts at its parent's)
    return [(replace(req, x=x[r0:r1], out=None, row_offset=req.row_offset + r0), {"out": o[r0:r1]})
            for r0 in range(0, req.rows, per) for r1 in [min(req.rows, r0 + per)]]


def reference(req: Request) -> np.ndarray:
    """The operator in float64 numpy for a checked request (numpy inputs)."""
    x = np.asarray(req.x, dtype=np.float64).reshape(req.rows, req.row_values // req.head_dim, req.head_dim)
    rows = np.arange(req.rows) + req.row_offset
    trow = req.row_of[rows // req.batch_rows * req.n_tokens + (rows // req.token_rows) % req.n_tokens]
    if several_axes(req.cos):  # the angles of the ids row_of carries
        spec = req.cos
        w = trow.reshape(len(rows), spec.n_axes, 2)
        if spec.angle == "exact":
            ids = w[..., 0].astype(np.float64) + w[..., 1].view(np.uint32) / 2.0**32
        else:
            ids = w[..., 0].copy().view(np.float32).astype(np.float64)
        angles = spec.angles(ids if isinstance(spec, NdFreqs) else ids.astype(np.int64))
        m = np.float64(spec.magnitude)
        cos, sin = m * np.cos(angles)[:, None, :], m * np.sin(angles)[:, None, :]
    elif req.generated:  # the angle the spec stands for, from the positions row_of carries
        spec = req.cos
        angles = spec_angles(spec, trow)
        m = np.float64(spec.magnitude)
        cos, sin = m * np.cos(angles)[:, None, :], m * np.sin(angles)[:, None, :]
    else:
        cos = np.asarray(req.cos, dtype=np.float64).reshape(-1, req.table_width)[trow][:, None, :]
        sin = np.asarray(req.sin, dtype=np.float64).reshape(-1, req.table_width)[trow][:, None, :]
    h = req.rot_half
    out = x.copy()
    if req.interleaved:
        a, b = x[..., 0:2 * h:2], x[..., 1:2 * h:2]
        out[..., 0:2 * h:2] = a * cos - b * sin
        out[..., 1:2 * h:2] = b * cos + a * sin
    else:
        a, b = x[..., :h], x[..., h:2 * h]
        ca, sa = (cos[..., :h], sin[..., :h])
        cb, sb = (cos[..., h:2 * h], sin[..., h:2 * h]) if req.full_table else (ca, sa)
        out[..., :h] = a * ca - b * sa
        out[..., h:2 * h] = b * cb + a * sb
    return out.reshape(req.shape)
