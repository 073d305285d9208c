"""The context shift of a KV cache (`vkrope.shift_cache`,
glsl/rope_shift.glsl): each named token's cached key rotated again from its
old position to its new one, in place, and where its row moves (a
contiguous cache, whose row is the position) its key and value moved.

Two launches in one submission: the keys are rotated (and the values
copied) into scratch rows the runtime makes on the device, then written to
the rows they go to; so no invocation reads what another writes, however
the old and new rows overlap, and a rotate-half partner is read before any
row is written.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import TensorRequest
from ..runtime import fit
from ..runtime.dtypes import axis
from ..runtime.manifest import find
from ..runtime.layout import padded_bytes, texels
from ..runtime.operator import Tensor
from ..runtime.steps import UPDATE, WRITE, Arg, Launch

KERNEL = "rope_shift"
ROLE_GATHER, ROLE_SCATTER = 0, 1


@dataclass
class Request(TensorRequest):
    """One checked shift. `x` is the key cache (what the runtime calls x)."""

    x: Any  # k_cache: a buffer DeviceArray, rows of D values
    v_cache: Any  # a DeviceArray like k_cache, or None when no row moves
    freqs: Any  # a kernels.generated.Generated (one coordinate per token)
    tokens: np.ndarray  # int32 [T, 4]: (row of head 0 now, row it goes to, old word, new word)
    head_stride: int  # cache rows between head h and h + 1 of one token
    hk: int
    head_dim: int
    rot_half: int
    interleaved: bool

    @property
    def empty(self) -> bool:
        """Nothing to do: no token, or D = 0."""
        return len(self.tokens) == 0 or self.head_dim == 0

    @property
    def scratch_shape(self) -> tuple[int, int]:
        """[T * Hk, D]: the rows the first launch writes and the second reads."""
        return (len(self.tokens) * self.hk, self.head_dim)

    def declare(self) -> list[Tensor]:
        """The caches, updated in place (v only when rows move), and the
        scratch rows, device arrays the runtime makes for the call."""
        cdt = np.dtype(self.x.dtype)
        v_rows = self.scratch_shape if self.v_cache is not None else (1, 4)  # (no values move: a stand-in)
        out = [Tensor("k_cache", self.x, tuple(self.x.shape), cdt, UPDATE),
               Tensor("k_tmp", None, self.scratch_shape, np.dtype(np.float32), WRITE, on_device=True),
               Tensor("v_tmp", None, v_rows, cdt, WRITE, on_device=True)]
        if self.v_cache is not None:
            out.append(Tensor("v_cache", self.v_cache, tuple(self.v_cache.shape), cdt, UPDATE))
        return out


@dataclass(frozen=True)
class Plan:
    """The two launches of one shift; hashable."""

    c_dtype: str
    n_tokens: int
    hk: int
    head_dim: int
    rot_half: int
    head_stride: int
    interleaved: bool
    move_v: bool
    angle: int
    workgroup: tuple[int, int]
    slices: tuple[tuple[int, int], ...]  # cache rows [r0, r1) each pair of launches binds

    def may_alias(self, written: str, read: str) -> bool:
        """Nothing: the scratch rows are the call's own."""
        return False

    def launches(self, where: Any, tables: list[list[Any]]) -> tuple[Launch, ...]:
        """Gather, then scatter, slice by slice of the caches (every gather
        first), over the scratch rows."""
        kernel = find(KERNEL, cache=axis(self.c_dtype))
        item = np.dtype(self.c_dtype).itemsize
        rows = self.n_tokens * self.hk

        def arg(name: str, values: int, size: int, start: int = 0) -> Arg:
            res, off = where[name]
            return Arg(res, res.serial, off + start * size, padded_bytes(values, size))  # (its access: the grid's)

        scratch = rows * self.head_dim
        wx, wy = self.workgroup
        grid = (math.ceil(texels(self.head_dim) / wx), math.ceil(rows / wy), 1)
        spec = (("local_size_x", wx), ("local_size_y", wy), ("INTERLEAVED", int(self.interleaved)),
                ("ANGLE", self.angle))
        freqs, tokens = tables[0]
        # Every tensor binding is an update (the grid's): the first launch reads the caches and writes the
        # scratch rows, the second the other way round, and the barriers between them follow from that.
        # Without moved values the v_cache binding is v_tmp's (never touched then).
        launches = []
        for role in (ROLE_GATHER, ROLE_SCATTER):
            for r0, r1 in self.slices:
                start, values = r0 * self.head_dim, (r1 - r0) * self.head_dim
                cache = dict(k_cache=arg("k_cache", values, item, start),
                             v_cache=arg("v_cache", values, item, start) if self.move_v else arg("v_tmp", 4, item))
                args = kernel.args(**cache, k_tmp=arg("k_tmp", scratch, 4),
                                   v_tmp=arg("v_tmp", scratch if self.move_v else 4, item),
                                   freqs=freqs, tokens=tokens)
                push = dict(role=role, n_tokens=self.n_tokens, hk=self.hk, head_dim=self.head_dim,
                            rot_half=self.rot_half, head_stride=self.head_stride, move_v=int(self.move_v),
                            cache_base=start, cache_end=start + values)
                launches.append(Launch(kernel.name, spec, tuple(push.items()), args, grid))
        return tuple(launches)


def plan(req: Request, limits: Any) -> Plan:
    """The launches of one shift: the caches whole, or past one binding in
    fixed slices; the scratch rows within one binding (else refused)."""
    req.freqs.check_fits(KERNEL, req.rot_half)
    rows = len(req.tokens) * req.hk
    wx, wy = fit.workgroup(texels(req.head_dim), limits, f"k_cache has D = {req.head_dim}")
    _, max_gy, _ = limits.max_compute_work_group_count
    if math.ceil(rows / wy) > max_gy:
        raise ValueError(f"from_positions: {len(req.tokens)} tokens of {req.hk} heads are more rows than one "
                         f"dispatch of this device takes ({max_gy * wy}); shift them in parts")
    item = np.dtype(req.x.dtype).itemsize
    budget = fit.binding_budget(limits, 4)
    if max(padded_bytes(rows * req.head_dim, 4), 16 * len(req.tokens)) > budget:
        raise ValueError(f"from_positions: the rotated keys of the {len(req.tokens)} tokens it moves (every "
                         f"sequence's, {req.hk} heads each), or their table, are larger than one binding of this "
                         "device; shift them in parts (moving down: in order of their old rows, the positions "
                         "where no from_rows are given; up: in reverse order)")
    cache_rows = int(req.x.size) // req.head_dim
    slices = [(0, cache_rows)]
    if padded_bytes(req.x.size, item) > budget:  # fixed slices, each within one binding on an aligned start
        align = max(limits.min_storage_buffer_offset_alignment, 4 * item)
        slices = fit.aligned_slices(cache_rows, req.head_dim * item, align, budget)
    return Plan(c_dtype=np.dtype(req.x.dtype).name, n_tokens=len(req.tokens), hk=req.hk, head_dim=req.head_dim,
                rot_half=req.rot_half, head_stride=req.head_stride, interleaved=req.interleaved,
                move_v=req.v_cache is not None, angle=req.freqs.angle,
                workgroup=(wx, wy), slices=tuple(slices))


def plan_key(req: Request, limits: Any) -> None:
    """Never memoised (a shift is rare; its plan is cheap)."""
    return None


def tables(req: Request, pl: Plan) -> list[list[Any]]:
    """One segment: the columns table and the tokens."""
    return [[req.freqs.columns, np.ascontiguousarray(req.tokens, np.int32).reshape(-1)]]


def row_blocks(req: Request, outs: dict[str, Any], max_bytes: int) -> list[tuple[Request, dict[str, Any]]]:
    """Never needed: every tensor is a DeviceArray (nothing is staged)."""
    raise AssertionError("shift_cache moves no numpy tensor")
