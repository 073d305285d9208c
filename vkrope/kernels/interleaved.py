"""The interleaved ("complex-number") RoPE of SAM2 / EdgeTAM: ExecuTorch's
`et_vk.apply_rotary_emb_interleaved`, `vkrope.apply`.

What a kernel module holds: its `Request` (which vkrope/ops/sam2.py
checks the public arguments into), its plan for a device's limits (`plan`: kernel variant,
workgroup shape, dispatch chunks), the launches of a plan over bound
resources (`Plan.launches`), the per-call tables it binds (`tables`),
the row blocks a too-large call runs in (`row_blocks`), and its float64
reference (`reference`). It never touches Vulkan: the runtime
(vkrope/runtime) binds, records and submits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from . import TensorRequest, given_tables
from .generated import ANGLE_FLOAT32, ONE_BITS, is_generated
from ..runtime import fit
from ..runtime.blocks import row_blocks as split_rows
from ..runtime.dtypes import axis, frozen, table_dtype, table_values
from ..runtime.manifest import find
from ..runtime.layout import read_apart, tensor_extent, texels
from ..runtime.array import DeviceArray
from ..runtime.operator import Tensor
from ..runtime.steps import READ, WRITE, Arg, Launch

KERNEL = "rope_interleaved"
# The positions table of a call without positions (the kernel reads none: one word to bind).
NO_POSITIONS = frozen(np.zeros(1, np.int32))


@dataclass
class Request(TensorRequest):
    """One validated call: everything the plan and the reference need."""

    x: Any  # the caller's numpy array (any memory layout) or DeviceArray, float32, float16 or bfloat16
    freqs_pairs: Any  # [Nf, C/2, 2] real pairs (numpy: the caller's dtype, float32/64 for complex), a DeviceArray,
    # or a `Generated` (computed in the shader; its rows: positions, or an axial grid's rows)
    n_tokens: int  # N
    channels: int  # C
    n_freq_rows: int  # Nf
    row_of: np.ndarray  # int32 [N] (int64 past 2^31 rows): freqs row of each token, -1 = pass through
    positions: np.ndarray | None  # int32 [N] when the caller gave positions
    n_rot: int  # tokens (from the start) that use row n % Nf, without positions
    inverse: bool
    storage: str  # "buffer" or "texture3d" (a DeviceArray x: its own)
    out: Any  # numpy array, DeviceArray or None
    given: tuple[tuple[str, Any], ...] = ()  # the caller's freqs and positions, as passed

    @property
    def generated(self) -> bool:
        """Frequencies computed in the shader (a `Generated` in `freqs_pairs`)."""
        return is_generated(self.freqs_pairs)

    @property
    def rows(self) -> int:
        """All leading axes times N: the number of token rows in x."""
        return int(self.x.size // self.channels) if self.channels else 0

    @property
    def empty(self) -> bool:
        """Nothing to compute (x has no values)."""
        return self.x.size == 0

    def declare(self) -> list[Tensor]:
        """x and out, moved by the runtime; freqs and positions as the caller
        passed them, tables this op encodes."""
        return [Tensor("x", self.x, self.shape, self.dtype, READ, self.storage), *given_tables(self.given),
                Tensor("out", self.out, self.shape, self.dtype, WRITE, self.storage,
                       on_device=isinstance(self.x, DeviceArray))]


# --- plan ----------------------------------------------------------------------


@dataclass(frozen=True)
class Chunk:
    """One dispatch: tokens [n0, n1) of flat batches [b0, b1) (FLAT_ROWS:
    flat rows [n0, n1), b0 = 0, b1 = 1); the x / out binding starts at pair
    `x_base` and spans `x_pairs`; its table is table segment `table` (the
    freqs rows from pair `f_base` on, and this chunk's positions when
    `positions`)."""

    b0: int
    b1: int
    n0: int
    n1: int
    x_base: int
    x_pairs: int
    f_base: int
    table: int
    positions: bool


@dataclass(frozen=True)
class Plan:
    """Everything about one call but the data: hashable, part of the
    recording's key through the launches it makes."""

    kernel: str
    storage: str
    x_dtype: str
    f_dtype: str
    n_tokens: int
    pairs_per_row: int
    workgroup: tuple[int, int]
    aligned: bool
    flat: bool
    image_extent: tuple[int, int, int] | None
    n_rot: int
    n_freq_rows: int
    inverse: bool
    chunks: tuple[Chunk, ...]
    segments: tuple[tuple, ...]  # the table segment of each chunk (see _segment)
    angle: int = ANGLE_FLOAT32  # generated frequencies: generated.ANGLE_* (the kernel's ANGLE)
    axial_end_x: int = 0  # generated axial frequencies: the grid's width
    magnitude_bits: int = ONE_BITS  # generated frequencies: float32 bits of the cos / sin factor (YaRN)

    def may_alias(self, written: str, read: str) -> bool:
        """out may be x: each invocation reads only the x texel it writes."""
        return (written, read) == ("out", "x")

    def launches(self, where: Any, tables: list[list[Arg]]) -> tuple[Launch, ...]:
        """One launch per chunk over x and out (where: resource and byte
        offset of each) and the packed table segments ((freqs, positions)
        ranges)."""
        x, out = where["x"], where["out"]
        kernel = find(KERNEL, storage=self.storage, x=axis(self.x_dtype),
                      freqs="gen" if self.f_dtype == "gen" else axis(self.f_dtype))
        pair_bytes = 2 * np.dtype(self.x_dtype).itemsize
        wx, wy = self.workgroup
        width, height = self.image_extent[:2] if self.image_extent else (0, 0)
        out_ = []
        for ch in self.chunks:
            if self.storage == "buffer":
                xa = Arg(x[0], x[0].serial, x[1] + ch.x_base * pair_bytes, ch.x_pairs * pair_bytes)
                oa = Arg(out[0], out[0].serial, out[1] + ch.x_base * pair_bytes, ch.x_pairs * pair_bytes)
            else:
                xa, oa = Arg(x[0], x[0].serial), Arg(out[0], out[0].serial)
            fa, pa = tables[ch.table]
            flags = (kernel.flag("FLAG_INVERSE") if self.inverse else 0) | (
                kernel.flag("FLAG_POSITIONS") if ch.positions else 0)
            push = dict(
                n_tokens=self.n_tokens, pairs_per_row=self.pairs_per_row, token_begin=ch.n0, token_end=ch.n1,
                batch_begin=ch.b0, batch_end=ch.b1, x_base=ch.x_base, f_base=ch.f_base, n_rot=self.n_rot,
                # (read only where rows repeat, Nf < n_rot: a table past 2^32 rows, broadcast, never does)
                n_freq_rows=min(self.n_freq_rows, 0xFFFFFFFF), flags=flags, image_height=height, image_width=width,
                pos_base=0 if self.flat else ch.n0, axial_end_x=self.axial_end_x, magnitude=self.magnitude_bits,
            )
            grid = (math.ceil(texels(2 * self.pairs_per_row) / wx), math.ceil((ch.n1 - ch.n0) / wy), ch.b1 - ch.b0)
            # Rows repeat (n % Nf) only without positions and with n_rot > Nf.
            repeat = not ch.positions and self.n_rot > self.n_freq_rows
            spec = dict(local_size_x=wx, local_size_y=wy, ALIGNED=self.aligned, FLAT_ROWS=self.flat, REPEAT=repeat,
                        ANGLE=self.angle, AXIAL=self.axial_end_x > 0)
            out_.append(Launch(kernel.name, tuple((k, int(v)) for k, v in spec.items()), tuple(push.items()),
                               kernel.args(out=oa, x=xa, freqs=fa, positions=pa), grid))
        return tuple(out_)


def f_dtype_of(req: Request) -> str:
    """The table dtype the kernel reads: a 16-bit dtype only when x and
    freqs both have it, else float32; "gen" when a spec has the shader
    compute them."""
    if req.generated:
        return "gen"
    return table_dtype(req.dtype, req.freqs_pairs.dtype)


def plan(req: Request, limits: Any) -> Plan:
    """The dispatches of `req` on a device with `limits` (PhysicalDeviceInfo)."""
    storage = req.storage
    x_dtype = np.dtype(req.dtype)
    f_name = f_dtype_of(req)
    ppr = req.channels // 2
    if req.generated:
        req.freqs_pairs.check_fits(KERNEL, ppr, grid=True)
    width = texels(req.channels)
    n = req.n_tokens
    batches = req.rows // n
    wx, wy = fit.workgroup(width, limits, f"x has C = {req.channels}")
    _, max_gy, max_gz = limits.max_compute_work_group_count
    align = max(limits.min_storage_buffer_offset_alignment, 4 * x_dtype.itemsize)
    budget = fit.binding_budget(limits, x_dtype.itemsize)
    # (generated: a token costs its position entry; the columns are one small table)
    pair_bytes = 2 * x_dtype.itemsize
    f_row_bytes = 4 if req.generated else ppr * 2 * np.dtype(f_name).itemsize
    row_bytes = ppr * pair_bytes
    if max(row_bytes, f_row_bytes) > budget:
        what = f"one row of x (C = {req.channels}: {row_bytes} bytes)" if row_bytes > budget else \
            f"one row of freqs ({f_row_bytes} bytes of {f_name}; freqs in x's dtype, {x_dtype.name}, take less)"
        raise ValueError(f"{what} does not fit the device's maxStorageBufferRange ({fit.budget_words(limits, budget)})")
    table_budget = fit.call_table_budget(limits, f_row_bytes, x_dtype.itemsize)
    resident = not req.generated and not isinstance(req.freqs_pairs, np.ndarray)
    chunk_budget = fit.window_budget(table_budget, f_row_bytes, resident, limits.min_storage_buffer_offset_alignment,
                                    "freqs")
    extent = tensor_extent(req.shape, limits.max_image_dimension_3d, "x") if storage == "texture3d" else None
    x_budget = budget if storage == "buffer" else 1 << 62

    def fitted(flat: bool) -> tuple[list[Chunk], dict[tuple, int]]:
        if flat:
            rows_per = min(max_gy * wy, max(1, x_budget // row_bytes))
            spans = [(0, 1, r0, min(batches * n, r0 + rows_per)) for r0 in range(0, batches * n, rows_per)]
        else:
            tokens = min(max_gy * wy, chunk_budget // f_row_bytes)  # a gathered table of `tokens` rows fits too
            spans = split_rows(batches, n, row_bytes, x_budget, max_tokens=tokens,
                               max_batches=max_gz)
        return _chunks(req, spans, flat, ppr, f_row_bytes, table_budget, max(1, align // pair_bytes),
                       limits.min_storage_buffer_offset_alignment)

    # (flat rows bind every token's table rows at once: only where they fit a binding's share, which a forced
    # tiny maxStorageBufferRange crossed, a bare AssertionError at recording: an adversary's)
    flat = n < wy and batches > 1 and n * f_row_bytes <= chunk_budget
    try:
        chunks, segments = fitted(flat)
    except ValueError:
        if not flat:
            raise
        # Flat rows bind every token's rows at once; a resident table too wide
        # for that splits by tokens instead (each dispatch its own window).
        flat = False
        chunks, segments = fitted(flat)
    return Plan(
        kernel=KERNEL, storage=storage, x_dtype=x_dtype.name, f_dtype=f_name, n_tokens=n, pairs_per_row=ppr,
        workgroup=(wx, wy), aligned=ppr % 2 == 0, flat=flat, image_extent=extent, n_rot=req.n_rot,
        n_freq_rows=req.n_freq_rows, inverse=req.inverse, chunks=tuple(chunks), segments=tuple(segments),
        angle=req.freqs_pairs.angle if req.generated else ANGLE_FLOAT32,
        axial_end_x=req.freqs_pairs.grid_width if req.generated else 0,
        magnitude_bits=req.freqs_pairs.magnitude_bits if req.generated else ONE_BITS,
    )


def _chunks(req: Request, spans: list, flat: bool, ppr: int, f_row_bytes: int, table_budget: int, x_align: int,
            offset_align: int) -> tuple[list[Chunk], dict[tuple, int]]:
    """One `Chunk` per span (token or flat-row ranges) with its table
    segment; a span whose resident freqs window is too wide is halved."""
    n = req.n_tokens

    def tokens_of(span: tuple) -> tuple[int, int]:
        return (0, n) if flat else (span[2], span[3])

    def halve(span: tuple) -> list[tuple]:
        b0, b1, n0, n1 = span
        if flat or n1 - n0 < 2:
            return []
        # A resident freqs window too wide for these tokens (scattered
        # positions): fewer tokens per dispatch, each with its own window.
        mid = (n0 + n1) // 2
        return [s for b in range(b0, b1) for s in ((b, b + 1, n0, mid), (b, b + 1, mid, n1))]

    fitted = fit.fit_spans(spans, lambda span: _segment(req, *tokens_of(span), ppr, f_row_bytes, table_budget,
                                                        offset_align), halve)
    chunks: list[Chunk] = []
    segments: dict[tuple, int] = {}
    for (b0, b1, n0, n1), seg in fitted:
        if flat:
            x0, x1 = n0 * ppr, n1 * ppr
        else:
            x0, x1 = (b0 * n + n0) * ppr, ((b1 - 1) * n + n1) * ppr
        x0 = x0 // x_align * x_align
        x1 += x1 % 2  # whole texels
        table = segments.setdefault(seg, len(segments))
        chunks.append(Chunk(b0, b1, n0, n1, x0, x1 - x0, seg[1] * ppr if seg[0] == "window" else 0, table,
                            seg[0] in ("rows", "tokens") or req.positions is not None))
    return chunks, segments


def plan_key(req: Request, limits: Any) -> tuple | None:
    """What a plan depends on, when that excludes the data: shapes, dtypes,
    storage, the (repeat, exclude_last) mapping, the spec, and whether
    positions are given. None with positions into a table whose segments
    they shape (`fit.rows_matter`: not a resident table bound whole, nor a
    numpy one gathered per token, the decode loop's cases); a spec's
    columns are whole whatever they are."""
    if req.positions is not None and not req.generated and _rows_matter(req, limits):
        return None
    # Resident freqs are bound in place, their windows aligned: another plan.
    resident = not isinstance(req.freqs_pairs, np.ndarray)
    spec = req.freqs_pairs if req.generated else None  # compares by its spec: picks the kernel's angle mode
    return (KERNEL, req.storage, req.shape, req.dtype, f_dtype_of(req), req.n_rot, req.n_freq_rows, req.inverse,
            resident, spec, req.positions is not None)


def _rows_matter(req: Request, limits: Any) -> bool:
    """Whether the plan of a request with positions into a table depends on
    their values (`fit.call_rows_matter`)."""
    resident = not isinstance(req.freqs_pairs, np.ndarray)
    return fit.call_rows_matter(limits, req.n_tokens, req.channels // 2 * 2 * np.dtype(f_dtype_of(req)).itemsize,
                                np.dtype(req.dtype).itemsize, resident_rows=req.n_freq_rows if resident else None)


def _segment(req: Request, t0: int, t1: int, ppr: int, f_row_bytes: int, budget: int, align: int) -> tuple:
    """The table segment tokens [t0, t1) bind (fit.table_segment): ("gen",
    t0, t1) the spec's columns (with those tokens' positions when given);
    ("whole" | "window", r0, r1, t0, t1) freqs rows bound as they are (the
    positions of tokens t0..t1 when the caller gave them, else 0, 0);
    ("rows" | "tokens", t0, t1) rows gathered for these tokens, positions
    renumbered to them."""
    if req.generated:  # the columns are whole in every segment; with positions, this chunk's
        return ("gen", t0, t1) if req.positions is not None else ("gen", 0, 0)
    resident = not isinstance(req.freqs_pairs, np.ndarray)
    seg = fit.table_segment(req.row_of[t0:t1], t1 - t0, f_row_bytes, budget,
                            resident_rows=req.n_freq_rows if resident else None,
                            row_align=2 if ppr % 2 else 1,  # an even first pair: aligned rows read freqs as vec4
                            offset_align=align, rows_from_data=req.positions is not None)
    if seg.kind in ("whole", "window"):
        return (seg.kind, seg.r0, seg.r1) + ((t0, t1) if req.positions is not None else (0, 0))
    return (seg.kind, t0, t1)


def check_values(req: Request) -> Request:
    """`req`, its numpy float64 freqs' rows the call reads checked within float32's range (table_values: a
    ValueError naming freqs), before any of the call runs; the front end's last check."""
    f, rows = req.freqs_pairs, req.row_of
    if isinstance(f, np.ndarray) and f.dtype.itemsize > 4 and rows is not None and rows.size:
        table_values(f[np.unique(rows[rows >= 0])], np.float32, "freqs")
    return req


def tables(req: Request, pl: Plan) -> list[tuple[Any, np.ndarray]]:
    """The (freqs, positions) of each table segment of a plan: numpy arrays
    to pack, or an `Arg` over a device-resident freqs table."""
    freqs = req.freqs_pairs
    out: list[tuple[Any, np.ndarray]] = []
    for seg in pl.segments:
        kind = seg[0]
        if kind == "gen":
            _, t0, t1 = seg
            out.append((freqs.columns, _generated_words(req, t0, t1)))
            continue
        if kind in ("whole", "window"):
            _, r0, r1, t0, t1 = seg
            pos = req.positions[t0:t1] if req.positions is not None else NO_POSITIONS
            if not isinstance(freqs, np.ndarray):  # a resident table: bound where it is
                row = 2 * (req.channels // 2) * freqs.dtype.itemsize
                w = fit.window(freqs.resource, 0, req.n_freq_rows, row) if kind == "whole" else fit.window(
                    freqs.resource, r0, r1, row)
                out.append((w, np.ascontiguousarray(pos, dtype=np.int32)))
                continue
            f = freqs[r0:r1]
        else:
            _, t0, t1 = seg
            keep, pos = fit.gathered(kind, req.row_of[t0:t1])
            f = freqs[keep] if len(freqs) else freqs[:0]  # (no rows at all: every token passes through)
        out.append((table_values(f, pl.f_dtype).reshape(-1), np.ascontiguousarray(pos, dtype=np.int32)))
    return out


def _generated_words(req: Request, t0: int, t1: int) -> np.ndarray:
    """The token words a generated chunk binds: what the kernel reads for
    its tokens' positions (or grid rows; -1 kept)."""
    if req.positions is None:
        return np.zeros(1, np.int32)
    return req.freqs_pairs.words(req.positions[t0:t1])


def row_blocks(req: Request, outs: dict[str, np.ndarray], max_bytes: int) -> list[tuple[Request, dict[str, Any]]]:
    """A call larger than one allocation as calls on row blocks of x:
    whole batch items when one fits, else token ranges of each (their rows
    given as positions). `out` (C-contiguous) may overlap x: x is then read
    from a copy."""
    out = outs["out"]
    n, c = req.n_tokens, req.channels
    x = read_apart(req.x, out)
    # (tables `out` overlaps are read from copies too, as the same view or not)
    req = replace(req, freqs_pairs=read_apart(req.freqs_pairs, out, False),
                  positions=read_apart(req.positions, out, False))
    x3 = x.reshape(-1, n, c)
    o3 = out.reshape(-1, n, c)  # out is C-contiguous here (execute._run_blocks)
    blocks = []
    for b0, b1, n0, n1 in split_rows(x3.shape[0], n, c * x.itemsize, max_bytes):
        sub = replace(req, x=x3[b0:b1, n0:n1], n_tokens=n1 - n0, out=None)
        if (n0, n1) != (0, n):
            rows = req.row_of[n0:n1]
            sub = replace(sub, positions=rows.astype(np.int32), row_of=rows, n_rot=n1 - n0)
        blocks.append((sub, {"out": o3[b0:b1, n0:n1]}))
    return blocks


def reference(req: Request) -> np.ndarray:
    """The operator in float64 numpy for a checked request."""
    shape = req.shape
    half = req.channels // 2
    batches = int(np.prod(shape[:-2], dtype=np.int64))
    xs = np.asarray(req.x, dtype=np.float64).reshape(batches, req.n_tokens, half, 2)
    result = xs.copy()
    rows = req.row_of
    rotated = rows >= 0
    if rotated.any() and half:
        if req.generated:  # the angles of the spec lowered
            gen = req.freqs_pairs
            f = np.stack(gen.cos_sin(gen.words(rows[rotated])), -1)
        else:
            f = np.asarray(req.freqs_pairs, dtype=np.float64).reshape(-1, half, 2)[rows[rotated]]  # [n_rotated, C/2, 2]
        c, s = f[..., 0], f[..., 1]
        if req.inverse:
            s = -s
        re, im = xs[:, rotated][..., 0], xs[:, rotated][..., 1]  # [B, n_rotated, C/2]
        with np.errstate(all="ignore"):  # NaN / Inf inputs follow IEEE rules silently
            result[:, rotated] = np.stack([re * c - im * s, re * s + im * c], axis=-1)
    return result.reshape(shape)
