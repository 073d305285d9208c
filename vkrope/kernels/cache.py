"""The decode step in one submission (`vkrope.rope_and_cache`): q and k
RMS-normalised per head (optional), rotated, the rotated k and the given v
written into resident KV caches at each token's row, the rotated q
returned; glsl/rope_cache.glsl.

Caches are `DeviceArray`s updated in place: contiguous `[B, Hk, S_max, D]`
(token (b, s) of head h at row `(b*Hk + h)*S_max + position_ids[b, s]`, or
`cache_position[b, s]` where given), or
paged `[num_blocks, block_size, Hk, D]` as vLLM's (`slots[b, s]` a flat
slot `block * block_size + offset`, -1 writes nothing; head h at row
`slot*Hk + h`). The frequencies are computed in the shader (a `Generated`,
glsl/freqs.glsl: each token's word from its position) or read from `(cos, sin)`
caches `[max_pos, rot/2]` (numpy, or float32 DeviceArrays bound where they
are); per call the kernel reads one (cos, sin) row (or word) and one cache
row per token, so a decode loop replays its recording (positions and slots are
data), unless a cache or resident table is past one binding: then each
dispatch binds a window that follows the positions.
"""

from __future__ import annotations

import functools
import math
import struct
from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np

from . import TensorRequest, given_tables
from .generated import ANGLE_FLOAT32, ONE_BITS, STAND_IN, is_generated
from ..runtime import fit
from ..runtime.dtypes import axis
from ..runtime.manifest import find
from ..runtime.layout import padded_bytes, read_apart, texels
from ..runtime.array import DeviceArray
from ..runtime.operator import Tensor
from ..runtime.steps import READ, UPDATE, WRITE, Arg, Launch

KERNEL = "rope_cache"
ROLE_Q, ROLE_K, ROLE_V, ROLE_ALL = 0, 1, 2, 3  # ROLE_ALL: one launch, rows of q then k then v
# The tensors each role's launch reads or writes (it binds the kernel's
# others, in glsl/rope_cache.json's order and access, as stand-ins);
# ROLE_ALL's launch uses every one.
USES = {ROLE_Q: ("q_out", "q"), ROLE_K: ("k", "k_cache"), ROLE_V: ("v", "v_cache")}


@dataclass
class Request(TensorRequest):
    """One checked decode step."""

    x: Any  # q [B, Hq, S, D], numpy or DeviceArray
    k: Any  # [B, Hk, S, D]
    v: Any  # [B, Hk, S, D]
    k_cache: Any  # DeviceArray (buffer), rows of D values
    v_cache: Any
    out: Any  # q's output: numpy, DeviceArray or None
    cos: Any  # float32 [table rows, rot/2]: numpy (gathered per token) or a DeviceArray; or a `Generated`
    sin: Any  # (None with a `Generated`)
    tokens: np.ndarray  # int32 [B*S, 2]: (cos / sin row or generated: coordinate word, cache row of head 0 or -1)
    head_stride: int  # cache rows between head h and h + 1 of one token
    rot_half: int
    interleaved: bool
    weights: np.ndarray | None  # float32 [2, D] (q's, k's) when RMSNorm is fused
    eps: float
    weight_add: float
    gathered: bool  # cos / sin hold the tokens' own rows (row t for token t), gathered on the host
    given: tuple[tuple[str, Any], ...] = ()  # the caller's tables, as passed (job ordering)
    k_scale: float = 1.0  # fp8 caches: what k values are divided by before their rounding (float32)
    v_scale: float = 1.0

    @property
    def generated(self) -> bool:
        """Frequencies computed in the shader (a `Generated` in `cos`)."""
        return is_generated(self.cos)

    @property
    def empty(self) -> bool:
        """Nothing to compute: no tokens, or D = 0."""
        return self.x.size == 0 and self.k.size == 0

    def declare(self) -> list[Tensor]:
        """q, k, v read; the caches updated in place; the rotated q written
        (a DeviceArray when q is one); the caller's tables for ordering."""
        kshape = tuple(self.k.shape)
        cdt = np.dtype(self.k_cache.dtype)
        return [Tensor("q", self.x, self.shape, self.dtype, READ),
                Tensor("k", self.k, kshape, self.dtype, READ),
                Tensor("v", self.v, kshape, self.dtype, READ),
                Tensor("k_cache", self.k_cache, tuple(self.k_cache.shape), cdt, UPDATE),
                Tensor("v_cache", self.v_cache, tuple(self.v_cache.shape), cdt, UPDATE),
                Tensor("q_out", self.out, self.shape, self.dtype, WRITE, on_device=isinstance(self.x, DeviceArray)),
                *given_tables(self.given)]


# --- plan ---------------------------------------------------------------------------
def _bits(f: float) -> int:
    return struct.unpack("<I", struct.pack("<f", f))[0]


@dataclass(frozen=True)
class Chunk:
    """One dispatch of one role over rows [r0, r1) of that role: the tensor
    bindings start at value `x_base` (q, k, v, q_out); the caches' binding
    is values [cache_base, cache_base + cache_values), the rows it writes
    (whole caches, or one fixed slice of them); the tokens start at
    `tok_base` and the (cos, sin) rows at `t_base`; its tables are segment
    `segment`."""

    role: int
    r0: int
    r1: int
    x_base: int
    x_values: int
    cache_base: int
    cache_values: int
    tok_base: int
    t_base: int
    segment: int


@dataclass(frozen=True)
class Plan:
    """The dispatches of one step; hashable."""

    x_dtype: str
    c_dtype: str
    hq: int
    hk: int
    q_rows: int  # B * Hq * S
    k_rows: int  # B * Hk * S
    n_tokens: int
    head_dim: int
    rot_half: int
    head_stride: int
    interleaved: bool
    norm: bool
    eps_bits: int
    add_bits: int
    workgroup: tuple[int, int]
    chunks: tuple[Chunk, ...]
    segments: tuple[tuple, ...]  # per segment: ((tok0, tok1), (t0, t1)) of the tables it binds
    generated: bool = False  # frequencies computed in the shader
    angle: int = ANGLE_FLOAT32  # generated: generated.ANGLE_* (the kernel's ANGLE)
    magnitude_bits: int = ONE_BITS  # generated: float32 bits of the cos / sin factor
    k_scale_bits: int = ONE_BITS  # fp8 caches: float32 bits of the scales
    v_scale_bits: int = ONE_BITS

    def may_alias(self, written: str, read: str) -> bool:
        """Nothing: an invocation reads a whole head of q (the norm, the
        rotate-half partner), so q_out is never written where q is read."""
        return False

    def launches(self, where: Any, tables: list[list[Arg]]) -> tuple[Launch, ...]:
        """One launch per chunk over the bound tensors (where: resource and
        byte offset of each) and its segment's (cos, sin, tokens, weights)."""
        kernel = find(KERNEL, x=axis(self.x_dtype), cache=axis(self.c_dtype), freqs="gen" if self.generated else "32")
        item, citem = np.dtype(self.x_dtype).itemsize, np.dtype(self.c_dtype).itemsize
        wx, wy = self.workgroup
        whole = self.head_dim % 4 == 0 and self.rot_half % (2 if self.interleaved else 4) == 0
        spec = (("local_size_x", wx), ("local_size_y", wy), ("INTERLEAVED", int(self.interleaved)),
                ("NORM", int(self.norm)), ("WHOLE_TEXELS", int(whole)), ("ANGLE", self.angle))
        out = []
        q_rows, k_rows = self.q_rows, self.k_rows
        for ch in self.chunks:
            args = {}
            for name, _ in kernel.tensors():
                res, off = where[name]
                cache = name.endswith("_cache")
                size = citem if cache else item
                if ch.role != ROLE_ALL and name not in USES[ch.role]:
                    # a 16-byte stand-in, with its access: the recorder's
                    # barriers then cover what the shader may touch, as
                    # validation sees it
                    start, values = 0, 4
                elif cache:
                    start, values = ch.cache_base, ch.cache_values
                elif ch.role == ROLE_ALL:  # every tensor whole
                    start, values = 0, (q_rows if name in ("q", "q_out") else k_rows) * self.head_dim
                else:
                    start, values = ch.x_base, ch.x_values
                args[name] = Arg(res, res.serial, off + start * size, padded_bytes(values, size))
            push = dict(role=ch.role, q_rows=q_rows, k_rows=k_rows, row_begin=ch.r0, row_end=ch.r1, hq=self.hq,
                        hk=self.hk, n_tokens=self.n_tokens, head_dim=self.head_dim, rot_half=self.rot_half,
                        head_stride=self.head_stride, x_base=ch.x_base, cache_base=ch.cache_base,
                        cache_end=ch.cache_base + ch.cache_values, tok_base=ch.tok_base, t_base=ch.t_base,
                        eps=self.eps_bits, weight_add=self.add_bits, magnitude=self.magnitude_bits,
                        k_scale=self.k_scale_bits, v_scale=self.v_scale_bits)
            grid = (math.ceil(texels(self.head_dim) / wx), math.ceil((ch.r1 - ch.r0) / wy), 1)
            cos, sin, tokens, weights = tables[ch.segment]
            out.append(Launch(kernel.name, spec, tuple(push.items()),
                              kernel.args(**args, cos=cos, sin=sin, tokens=tokens, weights=weights), grid))
        return tuple(out)


def _windowed(req: Request, limits: Any) -> tuple[bool, bool]:
    """(caches, tables): whether each is too large for one binding: the
    caches are then written in fixed slices, a resident table bound as a
    window over the rows each dispatch's tokens read (which follows the
    positions)."""
    budget = fit.binding_budget(limits, 4)
    cache = padded_bytes(req.k_cache.size, np.dtype(req.k_cache.dtype).itemsize) > budget
    if req.gathered or req.generated:
        return cache, False
    return cache, 4 * req.rot_half * int(req.cos.shape[0]) > fit.table_budget(limits, 4 * req.rot_half, budget)


def _runs(total: int, per: int, span: Callable[[int, int], tuple | None]) -> list[tuple[int, int, tuple]]:
    """(r0, r1, span(r0, r1)) over rows [0, total) in runs of at most `per`, a run halved while its span
    (its tables' window) does not fit (fit.fit_spans); ValueError when one row's does not."""
    def segment_of(run: tuple[int, int]) -> tuple:
        got = span(*run)
        if got is None:
            raise ValueError("one head row's table window does not fit one binding of this device")
        return got

    def halve(run: tuple[int, int]) -> list[tuple[int, int]]:
        r0, r1 = run
        return [] if r1 - r0 == 1 else [(r0, (r0 + r1) // 2), ((r0 + r1) // 2, r1)]

    runs = [(r0, min(total, r0 + per)) for r0 in range(0, total, per)]
    return [(r0, r1, got) for (r0, r1), got in fit.fit_spans(runs, segment_of, halve)]


def plan(req: Request, limits: Any) -> Plan:
    """Dispatches per role over runs of rows, each within the device's
    binding range and grid: q, k, v and q_out bound from the run's first
    row; the caches whole or, when too large for one binding, in fixed
    slices (k and v launched once per slice, each invocation writing only
    rows of its slice: the launches do not follow the positions, so a decode
    loop still replays one recording); the tables of the run's tokens (a
    resident table past one binding: a window over the rows they read)."""
    b, hq, s, d = req.shape
    hk = int(req.k.shape[1])
    if req.generated:
        req.cos.check_fits(KERNEL, req.rot_half)
    item, citem = req.dtype.itemsize, np.dtype(req.k_cache.dtype).itemsize
    wx, wy = fit.workgroup(texels(d), limits, f"q has D = {d}")
    x_align = max(limits.min_storage_buffer_offset_alignment, 4 * item)  # bindings start on whole texels
    c_align = max(limits.min_storage_buffer_offset_alignment, 4 * citem)
    budget = fit.binding_budget(limits, max(item, citem))
    row_t = 4 * req.rot_half
    t_budget = fit.table_budget(limits, row_t, budget)
    if max(d * max(item, citem), row_t) > budget:
        raise ValueError(f"one head of D = {d} values does not fit one binding of this device")
    _, max_gy, _ = limits.max_compute_work_group_count
    per = max(1, min(max_gy * wy, (budget - x_align) // (d * item)))
    win_cache, win_table = _windowed(req, limits)
    cache_rows = int(req.k_cache.size) // d if d else 0
    slices = fit.aligned_slices(cache_rows, d * citem, c_align, budget) if win_cache else [(0, cache_rows)]
    tok = req.tokens
    segments: dict[tuple, int] = {}
    chunks: list[Chunk] = []

    def span_of(role: int, r0: int, r1: int) -> tuple | None:
        """(x0, x values, tok0, tok1, t0, t1) of rows [r0, r1) of `role`, or
        None when its tables' window does not fit."""
        heads = hq if role == ROLE_Q else hk
        rows = np.arange(r0, r1)
        t = (rows // (heads * s)) * s + rows % s
        tok0, tok1 = int(t.min()), int(t.max()) + 1
        if (tok1 - tok0) * 8 > t_budget:
            return None
        used = tok[tok0:tok1, 0]
        if req.generated:  # the columns are whole in every segment
            t0, t1 = 0, 0
        else:
            t0, t1 = (tok0, tok1) if req.gathered else ((int(used.min()), int(used.max()) + 1) if win_table
                                                            else (0, int(req.cos.shape[0])))
        if win_table:
            step_t = math.lcm(limits.min_storage_buffer_offset_alignment, row_t) // row_t  # aligned starts
            t0 = t0 // step_t * step_t
        if (t1 - t0) * row_t > t_budget:
            return None
        x0 = r0 * d * item // x_align * x_align // item
        return (x0, r1 * d - x0, tok0, tok1, t0, t1)

    q_rows, k_rows = b * hq * s, b * hk * s
    whole = span_of(ROLE_Q, 0, q_rows) if q_rows and k_rows and max(q_rows, k_rows) <= per else None
    if (whole is not None and len(slices) == 1 and span_of(ROLE_K, 0, k_rows) is not None
            and math.ceil((q_rows + 2 * k_rows) / wy) <= max_gy):
        # Everything in one binding each: one launch, the row picks the role
        # (no barriers between roles, one dispatch's overhead).
        _, _, tok0, tok1, t0, t1 = whole
        chunks.append(Chunk(ROLE_ALL, 0, q_rows + 2 * k_rows, 0, q_rows * d, 0, cache_rows * d, tok0, t0, 0))
        segments[((tok0, tok1), (t0, t1))] = 0
    for role, heads in (() if chunks else ((ROLE_Q, hq), (ROLE_K, hk), (ROLE_V, hk))):
        for r0, r1, (x0, xn, tok0, tok1, t0, t1) in _runs(b * heads * s, per, lambda a, z: span_of(role, a, z)):
            seg = segments.setdefault(((tok0, tok1), (t0, t1)), len(segments))
            for c0, c1 in (slices if role != ROLE_Q else [(0, cache_rows)]):
                chunks.append(Chunk(role, r0, r1, x0, xn, c0 * d, (c1 - c0) * d, tok0, t0, seg))
    return Plan(
        x_dtype=req.dtype.name, c_dtype=np.dtype(req.k_cache.dtype).name, hq=hq, hk=hk, q_rows=q_rows,
        k_rows=k_rows, n_tokens=s, head_dim=d,
        rot_half=req.rot_half, head_stride=req.head_stride, interleaved=req.interleaved,
        norm=req.weights is not None, eps_bits=_bits(req.eps), add_bits=_bits(req.weight_add), workgroup=(wx, wy),
        chunks=tuple(chunks), segments=tuple(segments), generated=req.generated,
        angle=req.cos.angle if req.generated else ANGLE_FLOAT32,
        magnitude_bits=req.cos.magnitude_bits if req.generated else ONE_BITS,
        k_scale_bits=_bits(req.k_scale), v_scale_bits=_bits(req.v_scale),
    )


def plan_key(req: Request, limits: Any) -> tuple | None:
    """What a plan depends on: every field `plan` reads but the tokens
    (positions and slots pick rows, which the kernel reads as data; caches
    past one binding are written in fixed slices). None where a resident
    table is past one binding: its window follows the positions."""
    if _windowed(req, limits)[1]:
        return None
    return (KERNEL, req.shape, tuple(req.k.shape), req.dtype, req.k_cache.dtype,
            int(req.k_cache.size), len(req.tokens), req.rot_half, req.head_stride, req.interleaved,
            req.weights is not None, req.eps, req.weight_add, req.gathered,
            req.cos if req.generated else int(req.cos.shape[0]), req.k_scale, req.v_scale)


@functools.lru_cache(maxsize=16)
def _no_weights(head_dim: int) -> np.ndarray:
    """The weights binding without a norm (not read): zeros [2 * D], made once per D, read-only."""
    w = np.zeros(2 * max(1, head_dim), np.float32)
    w.setflags(write=False)
    return w


def tables(req: Request, pl: Plan) -> list[list[Any]]:
    """Per segment: the (cos, sin) rows it binds (numpy, or windows of the
    resident caches; generated: the columns table), its tokens and the norm
    weights."""
    row_t = 4 * req.rot_half
    weights = np.ascontiguousarray(req.weights).reshape(-1) if req.weights is not None else _no_weights(pl.head_dim)
    out = []
    for (tok0, tok1), (t0, t1) in pl.segments:
        seg: list[Any] = []
        if req.generated:  # the columns table (glsl/freqs.glsl); sin's binding is not read
            seg += [req.cos.columns, STAND_IN]
        for t in (() if req.generated else (req.cos, req.sin)):
            if isinstance(t, DeviceArray):
                seg.append(fit.window(t.resource, t0, t1, row_t))
            else:
                seg.append(np.ascontiguousarray(t[t0:t1], dtype=np.float32).reshape(-1))
        seg += [np.ascontiguousarray(req.tokens[tok0:tok1]).reshape(-1), weights]
        out.append(seg)
    return out


def row_blocks(req: Request, outs: dict[str, Any], max_bytes: int) -> list[tuple[Request, dict[str, Any]]]:
    """A numpy call past one allocation as calls on runs of tokens of one
    batch item (every head of q, k and v; the caches whole in each, written
    in turn); one token past it is refused."""
    b, hq, s, d = req.shape
    hk = int(req.k.shape[1])
    per_token = (2 * hq + 2 * hk) * d * req.dtype.itemsize  # q and its result, k and v
    per = max_bytes // max(1, per_token)
    if per == 0:
        raise ValueError(f"one token's heads of q, k and v ({per_token} bytes with the result) are more than one "
                         f"allocation of this device ({max_bytes} bytes)")
    o = outs["q_out"]
    req = replace(req, x=read_apart(req.x, o), k=read_apart(req.k, o), v=read_apart(req.v, o),
                  cos=read_apart(req.cos, o), sin=read_apart(req.sin, o))
    blocks = []
    for bi in range(b):
        for s0 in range(0, s, per):
            s1 = min(s, s0 + per)
            t0, t1 = bi * s + s0, bi * s + s1
            tokens = req.tokens[t0:t1].copy()
            cos, sin = req.cos, req.sin
            if req.gathered:  # per-token (cos, sin) rows: the block's own, counted from its first token
                tokens[:, 0] -= t0
                cos, sin = req.cos[t0:t1], req.sin[t0:t1]
            sub = replace(req, x=req.x[bi:bi + 1, :, s0:s1], k=req.k[bi:bi + 1, :, s0:s1],
                          v=req.v[bi:bi + 1, :, s0:s1], out=None, tokens=tokens, cos=cos, sin=sin)
            blocks.append((sub, {"q_out": outs["q_out"][bi:bi + 1, :, s0:s1], "k_cache": outs["k_cache"],
                                 "v_cache": outs["v_cache"]}))
    return blocks
