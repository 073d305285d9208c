"""The table kernel, glsl/rope_table.glsl: RoPE with separate cos / sin
tables (or frequencies computed in the shader from a spec), which most
front ends (vkrope/ops/) map their public signatures onto.

Every call becomes a `Request`: the tensor seen as R rows of C values
(its last axis), each row holding C / D heads of D values; row r is token
s = (r // token_rows) % S of batch item r // batch_rows; `row_of[b * S + s]` is the table
row that token reads (ONNX position_ids, ExecuTorch's start_pos + s, ...;
N-D: the coordinates' words per token, with a `Generated` in `cos`). The argument
helpers the front ends share, the plan, launches, tables, row blocks and
float64 reference below serve all of them. See docs/FAMILY.md for the
contracts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from . import TensorRequest, given_tables
from .generated import ANGLE_FLOAT32, ONE_BITS, STAND_IN, is_generated
from ..runtime.dtypes import axis, table_dtype, table_values
from ..runtime.manifest import find
from ..runtime import fit
from ..runtime.layout import read_apart, tensor_extent, texels
from ..runtime.array import DeviceArray
from ..runtime.operator import Tensor
from ..runtime.steps import READ, WRITE, Arg, Launch

KERNEL = "rope_table"


@dataclass
class Request(TensorRequest):
    """One checked call of the table kernel."""

    x: Any  # numpy array or DeviceArray, float32 / float16 / bfloat16
    out: Any  # numpy array, DeviceArray or None
    cos: Any  # numpy array [table rows, table_width] (float32/float16/bfloat16/float64), DeviceArray, or a
    # `Generated` (frequencies computed in the shader; sin None)
    sin: Any
    row_of: np.ndarray  # int32 [B * S]: table row of each (b, s) (generated: its words, [B * S, id_words] for N-D)
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
        """Frequencies computed in the shader (a `Generated` in `cos`)."""
        return is_generated(self.cos)

    @property
    def id_words(self) -> int:
        """int32 words of row_of per (b, s): 2 per axis of several coordinates
        per token (N-D, M-RoPE), else 1."""
        return max(1, self.cos.id_words) if self.generated else 1

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
        return [Tensor(self.x_name, self.x, self.shape, self.dtype, READ, self.storage), *given_tables(self.given),
                Tensor("out", self.out, self.shape, self.dtype, WRITE, self.storage,
                       on_device=isinstance(self.x, DeviceArray))]

    @property
    def in_place(self) -> bool:
        """Whether out may be x: interleaved pairs with an even D share a
        texel; otherwise an invocation reads a partner texel that another
        one writes."""
        return self.interleaved and self.head_dim % 2 == 0


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
    angle: int = ANGLE_FLOAT32  # frequencies in the shader: generated.ANGLE_* (the kernel's ANGLE)
    id_words: int = 0  # several coordinates per token: row_of words per token (0: one word)
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
                oa = Arg(out[0], out[0].serial, out[1] + off, ch.x_values * itemsize)
            else:
                xa, oa = Arg(x[0], x[0].serial), Arg(out[0], out[0].serial)
            ca, sa, ra = tables[ch.table]
            push = dict(
                row_begin=ch.r0, row_end=ch.r1,
                row_values=self.row_values, head_dim=self.head_dim, rot_half=self.rot_half,
                table_width=self.table_width, n_tokens=self.n_tokens, batch_rows=self.batch_rows,
                # (x_base modulo 2^32: a call holds up to 2^33 - 4 values, and the shader's uint r * C + v -
                # x_base, the value's place in a binding of less than 2^32, wraps to the same difference)
                token_rows=self.token_rows, x_base=ch.x_base % 2**32 if self.storage == "buffer" else self.row_offset,
                t_base=ch.t_base, idx_base=ch.idx_base, flags=flags,
                image_height=height, image_width=width, magnitude=self.magnitude_bits, id_words=self.id_words,
            )
            grid = (math.ceil(texels(self.row_values) / wx), math.ceil((ch.r1 - ch.r0) / wy), 1)
            whole = self.head_dim % 4 == 0 and self.rot_half % 4 == 0
            spec = dict(local_size_x=wx, local_size_y=wy, ALIGNED=self.row_values % 4 == 0, WHOLE_TEXELS=whole,
                        INTERLEAVED=self.interleaved, ANGLE=self.angle, ND=self.id_words > 0)
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
    if req.generated:
        req.cos.check_fits(KERNEL, req.rot_half, several=True)
    c = req.row_values
    width = texels(c)
    wx, wy = fit.workgroup(width, limits, f"{req.x_name} has {c} values per row")
    _, max_gy, _ = limits.max_compute_work_group_count
    align = max(limits.min_storage_buffer_offset_alignment, 4 * x_dtype.itemsize)
    budget = fit.binding_budget(limits, x_dtype.itemsize)
    row_bytes = c * x_dtype.itemsize
    # (generated: the tables are dim/2 frequencies; a token costs its row_of entry, or its ids)
    t_row_bytes = 4 * req.id_words if req.generated else req.table_width * np.dtype(f_name).itemsize
    table_budget = fit.call_table_budget(limits, t_row_bytes, x_dtype.itemsize)
    if max(row_bytes, t_row_bytes) > budget:
        tables = f"one token's row of position words ({t_row_bytes} bytes)" if req.generated else \
            f"one row of the cos / sin tables ({t_row_bytes} bytes)"
        what = f"one row of {req.x_name} ({c} values: {row_bytes} bytes)" if row_bytes > budget else tables
        raise ValueError(f"{what} does not fit the device's maxStorageBufferRange ({fit.budget_words(limits, budget)})")
    extent = None
    if storage == "texture3d":
        extent = tensor_extent(tuple(req.x.shape), limits.max_image_dimension_3d, req.x_name)  # as DeviceArrays lie
    resident_tables = _resident(req.cos) or _resident(req.sin)
    chunk_budget = fit.window_budget(table_budget, t_row_bytes, resident_tables,
                                     limits.min_storage_buffer_offset_alignment, "the cos / sin tables")
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
        angle=req.cos.angle if req.generated else ANGLE_FLOAT32,
        magnitude_bits=req.cos.magnitude_bits if req.generated else ONE_BITS,
        id_words=req.cos.id_words if req.generated else 0,
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


def plan_key(req: Request, limits: Any) -> tuple | None:
    """What a plan depends on, when that excludes the rows each token reads
    (position ids, start_pos): every field of the request but those rows and
    the caller's arguments as passed, an array by its kind, shape and dtype
    (a resident table: its rows decide whether it is bound whole). None where
    those rows shape the table segments (`_rows_matter`)."""
    if _rows_matter(req, limits):
        return None
    parts: list[Any] = [KERNEL, req.row_of.shape]
    for name in _KEY_FIELDS:
        v = getattr(req, name)
        parts.append((type(v), v.shape, v.dtype) if isinstance(v, (np.ndarray, DeviceArray)) else v)
    return tuple(parts)


# The request's fields a plan may read: all but the tokens' rows and the caller's arguments as passed.
_KEY_FIELDS = tuple(f.name for f in fields(Request) if f.name not in ("row_of", "given"))


def _rows_matter(req: Request, limits: Any) -> bool:
    """Whether the table segments of `plan` depend on the rows the tokens
    read (`fit.call_rows_matter`); never for frequencies computed in the
    shader (their columns are whole)."""
    if req.generated:
        return False
    resident = _resident(req.cos) or _resident(req.sin)
    return fit.call_rows_matter(limits, len(req.row_of), req.table_width * np.dtype(f_dtype_of(req)).itemsize,
                                req.dtype.itemsize, resident_rows=_table_rows(req.cos, req.table_width) if resident
                                else None)


def check_values(req: Request, names: tuple[str, str] = ("cos", "sin")) -> Request:
    """`req`, its numpy float64 tables' rows the call reads checked within float32's range (table_values: a
    ValueError naming the table, `names`), before any of the call runs; a front end's last check."""
    for t, name in zip((req.cos, req.sin), names):
        if isinstance(t, np.ndarray) and t.dtype.itemsize > 4 and req.row_of.size:
            table_values(t[np.unique(req.row_of)], np.float32, name)
    return req


def tables(req: Request, pl: Plan) -> list[list[Any]]:
    """Each segment's (cos, sin, row_of): numpy arrays to pack, or `Arg`s
    over resident tables."""
    out = []
    width = req.table_width
    for seg in pl.segments:
        kind = seg[0]
        if kind == "gen":  # the columns table (glsl/freqs.glsl); sin's binding is not read: 4 bytes stand in
            out.append([req.cos.columns, STAND_IN,
                        np.ascontiguousarray(req.row_of[seg[1]:seg[2]], dtype=np.int32).reshape(-1)])
            continue
        if kind in ("whole", "window"):
            _, t0, t1, bs0, bs1 = seg
            if kind == "whole":
                t1 = _table_rows(req.cos, width)
            cos, sin = (_window(t, t0, t1, width, pl.f_dtype) for t in (req.cos, req.sin))
            row_of = req.row_of[bs0:bs1]
        else:
            _, bs0, bs1 = seg
            keep, row_of = fit.gathered(kind, req.row_of[bs0:bs1])
            cos = table_values(req.cos[keep], pl.f_dtype).reshape(-1)
            sin = table_values(req.sin[keep], pl.f_dtype).reshape(-1)
        out.append([cos, sin, np.ascontiguousarray(row_of, dtype=np.int32)])
    return out


def _window(t: Any, t0: int, t1: int, width: int, f_dtype: str) -> Any:
    if isinstance(t, np.ndarray):
        return table_values(t[t0:t1], f_dtype).reshape(-1)
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
    x = read_apart(x, o, req.in_place)
    req = replace(req, cos=read_apart(req.cos, o, False), sin=read_apart(req.sin, o, False))
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
    if req.generated:  # the angles of the words row_of carries
        cos, sin = (t[:, None, :] for t in req.cos.cos_sin(trow))
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
