"""Fitting an operator's work into a device's limits: the helpers every
operator's plan calls with what it needs (bytes per row, rows a chunk
reads, alignment), so that no operator carries its own copy of them.

- `allocation_limit`, `binding_budget`, `table_budget`: the byte budgets
  (one place for the fallback of a device that reports no allocation size);
- `workgroup`: the workgroup shape of a one-texel-per-invocation kernel,
  checked against the dispatch grid;
- `table_segment`: which table rows a chunk of tokens binds (the whole
  resident table, a window of rows, just the rows its tokens use gathered,
  or one row per token), with the rule that keeps a decode loop's recorded
  command buffer the same from call to call;
- `fit_spans`: chunks whose table does not fit one binding are halved
  until it does;
- `window`: the `Arg` over a window of a resident table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence, TypeVar

import numpy as np

from .layout import MIN_BUFFER, workgroup_shape
from .steps import Arg, arg

# A chunk of at most this many tokens binds one gathered table row per token
# (see `table_segment`).
PER_TOKEN_ROWS = 256
# Gather a chunk's rows rather than bind the window between them when the
# window is this much larger than the rows used (a few scattered positions).
GATHER_SLACK = 4
GATHER_MIN_WINDOW = 64


def allocation_limit(limits: Any) -> int:
    """maxMemoryAllocationSize; 2 GiB where a device does not report it."""
    return int(limits.max_memory_allocation_size or (1 << 31))


def binding_budget(limits: Any, itemsize: int) -> int:
    """Bytes one storage-buffer binding of a tensor may span: the device's
    range less the largest alignment a binding start is rounded down by."""
    return int(limits.max_storage_buffer_range - max(limits.min_storage_buffer_offset_alignment, 4 * itemsize))


def budget_words(limits: Any, budget: int) -> str:
    """The words for a binding_budget in an error: the device's range and what a binding may span of it."""
    return f"{limits.max_storage_buffer_range} bytes: {budget} for one binding, whose start is rounded down"


def table_budget(limits: Any, row_bytes: int, binding: int) -> int:
    """Bytes one table segment may take: one binding, and at most a quarter
    of an allocation (the argument arena holds the other tensors too)."""
    return max(row_bytes, min(binding, allocation_limit(limits) // 4))


def window_budget(table_budget: int, row_bytes: int, resident: bool, offset_align: int, what: str) -> int:
    """Bytes of table rows one chunk may read: a resident table's window
    starts rounded down to a binding offset (a multiple of both the
    alignment and a row), so it needs that much room, and a row more;
    ValueError naming `what` (the resident table) when not one row is left."""
    if not resident:
        return table_budget
    left = table_budget - math.lcm(offset_align, row_bytes) - row_bytes
    if left < row_bytes:
        raise ValueError(f"one row of {what} ({row_bytes} bytes) does not fit the device's binding limits when the "
                         f"table is a DeviceArray (its window starts at a binding offset, a multiple of "
                         f"{offset_align} bytes and a row); pass it as a numpy array")
    return left


def workgroup(texels_per_row: int, limits: Any, what: str) -> tuple[int, int]:
    """The (x, y) workgroup of a kernel over rows of `texels_per_row`;
    ValueError naming `what` when a row needs more workgroups than the
    dispatch grid has."""
    wx, wy = workgroup_shape(texels_per_row, limits.max_compute_work_group_size_x)
    if math.ceil(texels_per_row / wx) > limits.max_compute_work_group_count[0]:
        raise ValueError(f"{what}: too many texels per row for the device's dispatch grid")
    return wx, wy


@dataclass(frozen=True)
class Segment:
    """The table rows one chunk binds.

    kind: "whole" (a resident table whose every row fits one binding: rows
    are read by their own index), "window" (rows [r0, r1) bound as they
    are, r0 aligned for the binding), "rows" (the distinct rows the chunk
    uses, gathered and renumbered: a few scattered ones), or "tokens" (one
    gathered row per token of the chunk, in token order: a decode-sized
    chunk, whose layout then depends on its token count alone)."""

    kind: str
    r0: int = 0
    r1: int = 0


def rows_matter(tokens: int, row_bytes: int, budget: int, *, resident_rows: int | None,
                rows_from_data: bool = True) -> bool:
    """Whether `table_segment` of a chunk of `tokens` tokens (or fewer)
    depends on which table rows they read. Not for a resident table bound
    whole, nor for a decode-sized chunk whose rows come from the caller's
    data and are gathered per token: a plan over such segments holds for
    any positions (one memoised plan serves every step of a decode loop)."""
    if resident_rows is not None:
        return resident_rows * row_bytes > budget
    return not (rows_from_data and tokens <= PER_TOKEN_ROWS and tokens * row_bytes <= budget)


def call_table_budget(limits: Any, row_bytes: int, itemsize: int) -> int:
    """The table budget of a call whose tensor has `itemsize` (table_budget
    beside one binding of it): what a kernel's plan gives its segments, and
    what its memo key compares with (call_rows_matter)."""
    return table_budget(limits, row_bytes, binding_budget(limits, itemsize))


def call_rows_matter(limits: Any, tokens: int, row_bytes: int, itemsize: int, *, resident_rows: int | None) -> bool:
    """`rows_matter` for a chunk of a call's `tokens` tokens (every chunk has
    at most those) of a tensor of `itemsize`, with the plan's table budget
    (call_table_budget): whether a plan may be memoised without the rows the
    tokens read (a kernel's plan_key)."""
    return rows_matter(tokens, row_bytes, call_table_budget(limits, row_bytes, itemsize), resident_rows=resident_rows)


def table_segment(used: np.ndarray, tokens: int, row_bytes: int, budget: int, *, resident_rows: int | None,
                  row_align: int = 1, offset_align: int = 1, rows_from_data: bool = True) -> Segment:
    """The segment of a chunk of `tokens` tokens that read table rows `used`
    (those >= 0), rows of `row_bytes`, within `budget` bytes.

    A resident table (`resident_rows`: its row count) is bound whole when
    it fits, so the rows a call reads never enter the recorded command
    buffer; else a window whose start is a multiple of `offset_align` bytes
    (ValueError when even that is too wide: split the chunk). A numpy table
    is gathered per token when the rows come from the caller's data
    (`rows_from_data`) and the chunk is decode-sized (same reason), else
    bound as a window starting at a multiple of `row_align` rows, or its
    distinct rows gathered when they are few and far apart or the window is
    too wide."""
    used = used[used >= 0]
    matter = rows_matter(tokens, row_bytes, budget, resident_rows=resident_rows, rows_from_data=rows_from_data)
    if resident_rows is not None:
        if not matter:
            return Segment("whole")
        if not used.size:
            return Segment("window", 0, 0)
        step = offset_align // math.gcd(offset_align, row_bytes)
        r0, r1 = int(used.min()) // step * step, int(used.max()) + 1
        if (r1 - r0) * row_bytes > budget:
            raise ValueError(
                f"these tokens read table rows {r0}..{r1 - 1}: more than one binding of the device ({budget} bytes) "
                "can span, and a device-resident table cannot be gathered; pass it as a numpy array, or call with "
                "fewer tokens at a time")
        return Segment("window", r0, r1)
    if not matter:
        return Segment("tokens")
    if not used.size:
        return Segment("window", 0, 0)
    r0, r1 = int(used.min()), int(used.max()) + 1
    r0 -= r0 % row_align
    if r1 - r0 > GATHER_SLACK * used.size + GATHER_MIN_WINDOW or (r1 - r0) * row_bytes > budget:
        return Segment("rows")
    return Segment("window", r0, r1)


def gathered(kind: str, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What a "tokens" or "rows" segment packs of the table rows `rows` its tokens read (-1: none, the token
    passes through): the table rows to take, in order, and each token's row in what is packed (int32, -1
    kept): "tokens" a row per token, in token order; "rows" the distinct rows, renumbered."""
    used = rows >= 0
    at = np.full(len(rows), -1, np.int32)
    if kind == "tokens":
        keep = np.maximum(rows, 0)
        at[used] = np.flatnonzero(used)
    else:
        keep, inverse = np.unique(rows[used], return_inverse=True)
        at[used] = inverse
    return keep, at


Span = TypeVar("Span")


def fit_spans(spans: Sequence[Span], segment_of: Callable[[Span], Any],
              halve: Callable[[Span], list[Span]]) -> list[tuple[Span, Any]]:
    """Each span with its segment, in order; a span whose segment does not
    fit (`segment_of` raises ValueError) is replaced by `halve(span)` (an
    empty list: it cannot be split, the error stands)."""
    out: list[tuple[Span, Any]] = []
    todo = list(spans)[::-1]
    while todo:
        span = todo.pop()
        try:
            seg = segment_of(span)
        except ValueError:
            parts = halve(span)
            if not parts:
                raise
            todo += parts[::-1]
            continue
        out.append((span, seg))
    return out


def aligned_slices(rows: int, row_bytes: int, align: int, budget: int) -> list[tuple[int, int]]:
    """Fixed slices [r0, r1) of `rows` rows of `row_bytes`, each within `budget` bytes (one binding) and starting
    on an `align`-byte offset (a resident cache bound a slice at a time)."""
    step = math.lcm(align, row_bytes) // row_bytes  # rows per aligned start
    rows_per = max(step, budget // row_bytes // step * step)
    return [(r, min(rows, r + rows_per)) for r in range(0, rows, rows_per)]


def window(resource: Any, r0: int, r1: int, row_bytes: int) -> Arg:
    """The binding of rows [r0, r1) of a resident table (at least 16 bytes,
    never past the buffer's end)."""
    offset = r0 * row_bytes
    return arg(resource, offset, min(resource.size - offset, max(MIN_BUFFER, (r1 - r0) * row_bytes)))


__all__ = ["PER_TOKEN_ROWS", "Segment", "allocation_limit", "binding_budget", "call_rows_matter", "call_table_budget",
           "rows_matter", "table_budget", "window_budget",
           "workgroup",
           "table_segment", "fit_spans", "aligned_slices", "window"]
