"""The operator interface: what an operator (a kernel module of
vkrope/kernels) gives the runtime, and what each of its requests declares about its arrays.

A request lists its arrays as `Tensor`s: the caller's name for it, its
value (a numpy array, a DeviceArray, or None for an output the runtime
makes), shape, dtype, access (read, write, or update: read and written in
place, as a KV cache), storage, and whether it is a tensor the runtime
moves or a table the operator encodes itself. From that declaration alone
the runtime places every tensor (staged, imported, or bound where it
lives), checks liveness and devices, stages an output through a temporary
where the kernel may not write over an input, orders the jobs of a batch,
and reads results back. It never names an operator's fields.

A kernel module provides (see vkrope/kernels/interleaved.py and table.py,
and tests/probe_op.py for the smallest one): the `Operator` protocol below,

- `plan(req, limits) -> Plan` and `plan_key(req, limits)` (None when the plan
  depends on the data; else what it depends on, so the runtime memoises
  it);
- `tables(req, plan) -> [[table arrays of one segment]]`: per segment the
  small arrays the kernel reads besides the moved tensors (numpy, packed by
  the runtime), or `Arg`s over resident tables (bound where they are);
- `row_blocks(req, outs, max_bytes) -> [(sub_request, sub_outs)]`: a numpy
  call larger than one allocation as calls on blocks of rows (outs: the
  numpy arrays the request writes, by name; each sub_outs holds views).

A `Plan` provides `launches(where, tables) -> tuple[Launch, ...]` (where:
each moved tensor's `(resource, byte offset)`), `may_alias(written, read)`
(whether its kernel may write tensor `written` in the memory it reads
`read` from) and, for texture3d plans, nothing more: image extents follow
from the tensors' shapes (`layout.tensor_extent`).
"""

from __future__ import annotations

from typing import Any, Mapping, Protocol

import numpy as np

from .steps import READ, UPDATE, WRITE, Arg, Launch  # (a tensor's access: the steps' own words)


class Tensor:
    """One array argument of a request, as the runtime sees it.

    `table`: a table the operator encodes itself (its numpy value sliced or
    gathered per segment by `op.tables`; a DeviceArray bound where it is):
    the runtime only checks it and orders jobs by it. Otherwise a tensor
    the runtime moves: uploads a numpy one (or imports it), allocates an
    output, reads it back, splits the call into row blocks.
    `on_device`: an output the runtime makes (value None) is a DeviceArray,
    else a numpy array. `reads` / `writes`: whether the kernel reads it (read
    or update) and writes it (write or update).

    A plain class with slots, made once per request and never changed after
    (`TensorRequest.tensors`): every call declares its tensors, and a frozen
    dataclass took several times as long to make."""

    __slots__ = ("name", "value", "shape", "dtype", "access", "storage", "table", "on_device", "reads", "writes")

    def __init__(self, name: str, value: Any, shape: tuple[int, ...], dtype: np.dtype, access: str = READ,
                 storage: str = "buffer", table: bool = False, on_device: bool = False) -> None:
        self.name, self.value, self.shape, self.dtype = name, value, shape, dtype
        self.access, self.storage, self.table, self.on_device = access, storage, table, on_device
        self.reads: bool = access in (READ, UPDATE)
        self.writes: bool = access in (WRITE, UPDATE)

    def __repr__(self) -> str:
        return f"Tensor({self.name!r}, {self.shape}, {self.dtype}, {self.access}, {self.storage}, table={self.table})"


class Request(Protocol):
    """A checked call of an operator."""

    def tensors(self) -> list[Tensor]:
        """Every array argument, in a fixed order."""

    @property
    def empty(self) -> bool:
        """Nothing to compute (the call returns its outputs untouched)."""


class Plan(Protocol):
    """Everything about one call but the data (hashable)."""

    def launches(self, where: Mapping[str, tuple[Any, int]], tables: list[list[Arg]]) -> tuple[Launch, ...]:
        """The dispatches over the moved tensors' locations and the packed
        table segments."""

    def may_alias(self, written: str, read: str) -> bool:
        """Whether the kernel may write tensor `written` where it reads `read`."""


class Operator(Protocol):
    """What an operator module gives the runtime (loosely typed: a module
    stands for it; the plan is a `Plan`, the tables [[numpy array | Arg]],
    the row blocks [(request, outs)])."""

    def plan(self, req: Any, limits: Any) -> Plan:
        """The dispatches of `req` on a device with `limits`."""

    def plan_key(self, req: Any, limits: Any) -> tuple | None:
        """What the plan depends on, when that excludes the data (memoised), else None."""

    def tables(self, req: Any, plan: Any) -> Any:
        """Per table segment: numpy arrays to pack, or `Arg`s over resident tables."""

    def row_blocks(self, req: Any, outs: Any, max_bytes: int) -> Any:
        """A numpy call past one allocation as calls on blocks of rows."""


__all__ = ["READ", "WRITE", "UPDATE", "Tensor", "Request", "Plan", "Operator"]
