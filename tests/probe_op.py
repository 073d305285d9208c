"""A test-only operator with no RoPE in it (glsl/runtime_probe.glsl), written
against vkrope's operator interface from outside the package: the runtime
is tested on it alone (tests/runtime/test_runtime.py), and it shows that an
operator needs nothing of vkrope but the interface.

    out = scale * x            x, out: [..., R, C] float32 / float16, buffer or texture3d
    acc[rows[r]] += x[r]       acc: [A, C] float32, updated in place (a KV cache's shape of work)

`x` and `out` are moved tensors of one shape, `acc` a moved tensor of
another shape and dtype that the kernel reads and writes, `rows` a per-call
table (the host refuses a row given twice: two invocations would add into
one row at once)."""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

import vkrope
from vkrope.kernels import TensorRequest
from vkrope.runtime import fit
from vkrope.runtime.dtypes import axis
from vkrope.runtime.manifest import find
from vkrope.runtime.layout import tensor_extent, texels
from vkrope.runtime.operator import READ, UPDATE, WRITE, Tensor
from vkrope.runtime.steps import Arg, Launch

KERNEL = "runtime_probe"


@dataclass
class Request(TensorRequest):
    """One checked call."""

    x: Any
    acc: Any
    rows: np.ndarray  # int32 [R]
    out: Any
    scale: float
    storage: str

    @property
    def empty(self) -> bool:
        """Nothing to compute."""
        return self.x.size == 0

    @property
    def row_values(self) -> int:
        """C."""
        return int(self.x.shape[-1])

    def declare(self) -> list[Tensor]:
        """x and out (one shape), acc (updated), all moved by the runtime."""
        resident = isinstance(self.x, vkrope.DeviceArray)
        return [Tensor("x", self.x, self.shape, self.dtype, READ, self.storage),
                Tensor("acc", self.acc, tuple(self.acc.shape), np.dtype(np.float32), UPDATE, "buffer"),
                Tensor("out", self.out, self.shape, self.dtype, WRITE, self.storage, on_device=resident)]


def check(x: Any, acc: Any, rows: Any, *, out: Any = None, scale: float = 2.0, storage: str = "auto") -> Request:
    """The probe's arguments: TypeError / ValueError naming them."""
    from vkrope.arguments import check_out, check_storage_of, check_x  # noqa: PLC0415

    x = check_x(x)
    storage = check_storage_of("x", x, storage)
    if not isinstance(acc, (np.ndarray, vkrope.DeviceArray)) or np.dtype(acc.dtype) != np.float32:
        raise TypeError(f"acc must be a float32 array; got {type(acc).__name__}")
    if len(acc.shape) != 2 or acc.shape[1] != x.shape[-1]:
        raise ValueError(f"acc must be [A, C] with C = {x.shape[-1]}; got {tuple(acc.shape)}")
    if isinstance(acc, vkrope.DeviceArray) and acc.storage != "buffer":
        raise ValueError("acc must be a buffer DeviceArray")
    n_rows = math.prod(x.shape[:-1])
    rows = np.array(rows, dtype=np.int64).reshape(-1)
    if rows.shape != (n_rows,):
        raise ValueError(f"rows must hold one entry per row of x ({n_rows}); got {rows.shape}")
    if ((rows < -1) | (rows >= acc.shape[0])).any():
        raise ValueError(f"rows entries must lie in [-1, {acc.shape[0]})")
    used = rows[rows >= 0]
    if np.unique(used).size != used.size:
        raise ValueError("rows names an acc row twice")
    return Request(x=x, acc=acc, rows=rows.astype(np.int32), out=check_out(out, x), scale=float(scale),
                   storage=storage)


@dataclass(frozen=True)
class Plan:
    """Chunks of rows, each one dispatch within the binding range."""

    storage: str
    x_dtype: str
    row_values: int
    workgroup: tuple[int, int]
    image_extent: tuple[int, int, int] | None
    acc_bytes: int
    scale_bits: int
    chunks: tuple[tuple[int, int, int, int], ...]  # (r0, r1, x_base value, x values)

    def may_alias(self, written: str, read: str) -> bool:
        """out may be x: an invocation reads only the texel it writes."""
        return (written, read) == ("out", "x")

    def launches(self, where: Any, tables: list[list[Arg]]) -> tuple[Launch, ...]:
        """One launch per chunk."""
        kernel = find(KERNEL, storage=self.storage, x=axis(self.x_dtype))
        item = np.dtype(self.x_dtype).itemsize
        (x, xo), (o, oo), (acc, ao) = where["x"], where["out"], where["acc"]
        wx, wy = self.workgroup
        width, height = self.image_extent[:2] if self.image_extent else (0, 0)
        out = []
        for i, (r0, r1, x0, nvals) in enumerate(self.chunks):
            if self.storage == "buffer":
                xa = Arg(x, x.serial, xo + x0 * item, nvals * item)
                oa = Arg(o, o.serial, oo + x0 * item, nvals * item, WRITE)
            else:
                xa, oa = Arg(x, x.serial), Arg(o, o.serial, access=WRITE)
            aa = Arg(acc, acc.serial, ao, self.acc_bytes, UPDATE)
            push = dict(row_begin=r0, row_end=r1, row_values=self.row_values, x_base=x0, rows_base=r0,
                        image_width=width, image_height=height, scale=self.scale_bits)
            grid = (math.ceil(texels(self.row_values) / wx), math.ceil((r1 - r0) / wy), 1)
            out.append(Launch(kernel.name, (("local_size_x", wx), ("local_size_y", wy)), tuple(push.items()),
                              (oa, xa, aa, tables[i][0]), grid))
        return tuple(out)


def plan(req: Request, limits: Any) -> Plan:
    """Rows in chunks that fit a binding and the dispatch grid."""
    c = req.row_values
    itemsize = req.dtype.itemsize
    wx, wy = fit.workgroup(texels(c), limits, f"x has C = {c}")
    budget = fit.binding_budget(limits, itemsize)
    acc_bytes = max(16, 4 * math.prod(req.acc.shape))
    if acc_bytes > budget or c * itemsize > budget:
        raise ValueError("acc, or one row of x, does not fit one binding of the device")
    rows = math.prod(req.shape[:-1])
    align = max(1, max(limits.min_storage_buffer_offset_alignment, 4 * itemsize) // itemsize)
    per = min(limits.max_compute_work_group_count[1] * wy,
              budget // (c * itemsize) if req.storage == "buffer" else rows) or 1
    chunks = []
    for r0 in range(0, rows, per):
        r1 = min(rows, r0 + per)
        x0 = r0 * c // align * align
        x1 = r1 * c + (-r1 * c) % 4  # whole texels
        chunks.append((r0, r1, x0, x1 - x0))
    extent = tensor_extent(req.shape, limits.max_image_dimension_3d) if req.storage == "texture3d" else None
    return Plan(req.storage, req.dtype.name, c, (wx, wy), extent, acc_bytes,
                struct.unpack("<I", struct.pack("<f", req.scale))[0], tuple(chunks))


def plan_key(req: Request, limits: Any) -> None:
    """Never memoised (cheap)."""
    return None


def tables(req: Request, pl: Plan) -> list[list[np.ndarray]]:
    """Each chunk's rows."""
    return [[np.ascontiguousarray(req.rows[r0:r1], dtype=np.int32)] for r0, r1, _, _ in pl.chunks]


def row_blocks(req: Request, outs: dict[str, Any], max_bytes: int) -> list[tuple[Request, dict[str, Any]]]:
    """Blocks of rows of x (and out); acc whole in each (updated in turn)."""
    c = req.row_values
    x = req.x.reshape(-1, c)
    o = outs["out"].reshape(-1, c)
    if np.shares_memory(x, o):
        x = x.copy()
    per = max(1, max_bytes // (c * req.dtype.itemsize))
    return [(replace(req, x=x[r0:r0 + per], rows=req.rows[r0:r0 + per], out=None), {"out": o[r0:r0 + per],
                                                                                   "acc": outs["acc"]})
            for r0 in range(0, x.shape[0], per)]


def reference(x: np.ndarray, acc: np.ndarray, rows: np.ndarray, scale: float = 2.0) -> tuple[np.ndarray, np.ndarray]:
    """(out, acc after) in float64 numpy."""
    x64 = np.asarray(x, np.float64)
    acc2 = np.asarray(acc, np.float64).copy()
    flat = x64.reshape(-1, x64.shape[-1])
    for r, a in enumerate(np.asarray(rows).reshape(-1)):
        if a >= 0:
            acc2[a] += flat[r]
    return scale * x64, acc2


def run(dev: vkrope.Device, x: Any, acc: Any, rows: Any, **kw: Any) -> Any:
    """The probe on `dev`, through the same path as every public operator."""
    import sys  # noqa: PLC0415

    return dev._run(sys.modules[__name__], [_job(check(x, acc, rows, **kw))])[0]["out"]


def _job(req: Request) -> Any:
    from vkrope.device import BatchJob  # noqa: PLC0415

    return BatchJob(req)
