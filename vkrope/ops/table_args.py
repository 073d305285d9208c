"""The argument checks the table kernel's front ends share (onnx.py, executorch.py, transformers.py, nd.py):
x, tables, specs, positions and the q / k pair, each a TypeError / ValueError naming the argument."""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ..arguments import (
    MAX_PAIRS, check_alive, check_plain_array, check_resident_table_dtype, check_row_index, check_table_array,
    describe, int_arg,
)
from . import check_model_head
from .lowering import lower
from ..models import ModelRope
from ..spec_checks import MAX_POSITION, check_positions
from ..freqs import FrequencySpec
from ..runtime.dtypes import (FREQS_DTYPES, TENSOR_DTYPE_NAMES, TENSOR_DTYPES, convert_hint, is_int,
                              is_integer_dtype, without_repeats)
from ..runtime.array import DeviceArray


def check_flag(name: str, value: Any) -> bool:
    """ONNX passes attributes as ints: 0 / 1 (and bools) are accepted."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if is_int(value) and int(value) in (0, 1):
        return bool(value)
    raise (ValueError if is_int(value) else TypeError)(
        f"{name} must be 0 or 1 (or a bool); got {describe(value)}")


def check_tensor(name: str, x: Any) -> Any:
    """x, q or k of a table operator: a numpy array or live DeviceArray of a tensor dtype."""
    if isinstance(x, DeviceArray):
        check_alive(name, x)
    else:
        check_plain_array(name, x)
    if np.dtype(x.dtype) not in TENSOR_DTYPES:
        raise TypeError(f"{name} must have dtype {TENSOR_DTYPE_NAMES}; got {x.dtype} "
                        f"({convert_hint(name, x.dtype, TENSOR_DTYPES, device=isinstance(x, DeviceArray))})")
    if math.prod(x.shape) > 2 * MAX_PAIRS:  # (spec_checks.MAX_PAIRS: every rotating kernel's bound on a call)
        raise ValueError(f"{name} has {math.prod(x.shape)} values; vkrope handles at most {2 * MAX_PAIRS} per call")
    return x


def refuse_missing_partner(name: str, t: Any, partner: str, given: Any) -> None:
    """A TypeError where the sine table `partner` is None beside a cosine table `name` (None goes only with a
    frequency spec in its place); a bad `name` is named by its own check, first (Llama's complex freqs_cis
    passed alone is told what a complex table needs, not that its partner is missing)."""
    if given is None and isinstance(t, (np.ndarray, DeviceArray)):
        check_table_array(name, t, FREQS_DTYPES)
        raise TypeError(f"{partner} must be a numpy array (or a vkrope.DeviceArray) as {name} is a table; it is "
                        f"None only where {name} is a frequency spec (a ModelRope, InvFreqs or RopeFreqs)")


def check_table(name: str, t: Any, shape: tuple[int, ...], what: str, x: Any, swapped: tuple[int, ...] = (),
                x_name: str = "x", hint: Callable[[], str] | None = None) -> Any:
    """A table of `shape` beside x (named `x_name` in errors); `swapped`: the shape it would have were x's axes
    1 and 2 exchanged (the message then asks about x's layout); `hint()` ends a wrong shape's message."""
    check_table_array(name, t, FREQS_DTYPES)
    if isinstance(t, DeviceArray):
        check_resident_table_dtype(name, t, x, x_name)
    if tuple(t.shape) != shape:
        raise ValueError(f"{name} must have shape {what} = {shape}; got {tuple(t.shape)}"
                         f"{swap_hint(x_name, tuple(t.shape), swapped)}{hint() if hint else ''}")
    return t


def swap_hint(name: str, given: tuple[int, ...], swapped: tuple[int, ...]) -> str:
    """The layout hint of a shape mismatch that x given as [B, S, H, D]
    where [B, H, S, D] is read explains: `given` (the shape given) is
    `swapped`, the shape the call would expect with x's axes 1 and 2
    exchanged (empty: no such x, as a 3-D one); else ""."""
    if not swapped or tuple(given) != tuple(swapped):
        return ""
    return layout_question(name, "[B, H, S, D]", "[B, S, H, D]")


def layout_question(name: str, read_as: str, other: str) -> str:
    """The hint that `name` (one tensor, or "q and k") read as layout `read_as` may be in layout `other`."""
    is_it = "are read as {}: are they" if " and " in name else "is read as {}: is it"
    return f" ({name} {is_it.format(read_as)} {other}? transpose(0, 2, 1, 3))"


def check_spec(name: str, spec: FrequencySpec, other: Any, other_name: str, rot: int,
               hint: str = "") -> FrequencySpec:
    """A frequency spec (RopeFreqs, InvFreqs) given in place of both tables (`hint` ends the
    message of a dim mismatch)."""
    if other is not None:
        raise ValueError(f"{other_name} must be None when {name} is a frequency spec; got {describe(other)}")
    if spec.dim != rot:
        raise ValueError(f"{name}: the frequency spec has dim = {spec.dim}; this call rotates {rot} channels{hint}")
    return spec


def refuse_grid_spec(name: str, value: Any) -> None:
    """A table argument given a grid's frequency spec (AxialFreqs, NdFreqs: positions per axis, which this op's
    one position per token cannot give) refused, naming what it takes and the ops that take that spec."""
    if isinstance(value, FrequencySpec):
        raise TypeError(f"{name} must be a cos table (numpy or DeviceArray) or a vkrope.RopeFreqs, InvFreqs or "
                        f"ModelRope; got {describe(value)}: a grid's frequencies, which vkrope.apply takes "
                        f"(an NdFreqs: vkrope.apply_nd too)")


def spec_rows(spec: FrequencySpec, positions: np.ndarray, name: str) -> np.ndarray:
    """row_of for a spec: the words the kernel reads per token (lowering.lower)."""
    return lower(spec).words(check_positions(name, positions))


def spec_start(start_pos: Any, s: int) -> int:
    """start_pos of a call whose frequencies a spec computes at start_pos + s: an int with every position in
    [0, 2^24), or a TypeError / ValueError naming it (before any range of positions is built from it: one past
    int64 overflowed numpy)."""
    start = int_arg("start_pos", start_pos, 0)
    if start + s > MAX_POSITION:
        raise ValueError(f"start_pos + s must lie in [0, 2^24) with a frequency spec (float32 holds them exactly); "
                         f"got start_pos {start} with S = {s}")
    return start


def token_positions(b: int, s: int, values: int, start: int = 0, dtype: Any = np.int64) -> np.ndarray:
    """start + s for each (b, s), b-major: the rows of calls whose tokens read their own position; none where
    the tensors hold no values (`values`: their count), as such a call runs no kernel and its B * S may be
    any size (a D of 0)."""
    return np.tile(np.arange(start, start + s, dtype=dtype), b) if values else np.zeros(0, dtype)


def check_same_dtype(a: Any, b: Any, names: str) -> None:
    """cos and sin of one dtype where either is resident (numpy tables are converted on upload)."""
    if (not isinstance(a, np.ndarray) or not isinstance(b, np.ndarray)) and a.dtype != b.dtype:
        raise TypeError(f"{names} must have one dtype when either is a DeviceArray; got {a.dtype} and {b.dtype}")


def position_rows(name: str, p: Any, shape: tuple[int, ...], rows: int, values: int,
                  swapped: tuple[int, ...] = ()) -> np.ndarray:
    """Integer positions of `shape`, each in [0, rows), as int32 (a copy); none where the tensors hold no
    `values` (no kernel runs, and B * S may be any size: a broadcast array is checked, not copied); `swapped`
    as check_table's."""
    check_plain_array(name, p)
    if not is_integer_dtype(p.dtype):
        raise TypeError(f"{name} must be an integer array of shape {shape}; got dtype {p.dtype}")
    if p.shape != shape:
        raise ValueError(f"{name} must have shape {shape}; got {p.shape}{swap_hint('x', p.shape, swapped)}")
    p = p if values else without_repeats(p)  # (a broadcast array's repeats are not read)
    lo, hi = (int(p.min()), int(p.max())) if p.size else (0, -1)  # (the entry named looked for only on failure)
    if lo < 0 or hi >= rows:
        bad = p[(p < 0) | (p >= rows)]
        if not rows and lo >= 0:  # (no row to read: the caches, not the positions, are what is wrong)
            raise ValueError(f"{name}: the cos / sin caches have no rows (0 positions), so no position can be read "
                             f"(position {int(bad.flat[0])} asked for)")
        raise ValueError(f"{name} entries must lie in [0, {rows}) (rows of the cos / sin caches); got {int(bad.flat[0])}")
    check_row_index(name, hi)
    return np.array(p, dtype=np.int32).reshape(-1) if values else np.zeros(0, np.int32)  # (a copy: out may alias it)


def rows2d(t: Any, rows: int, width: int) -> Any:
    """A [B, S, w] table as [B*S, w] (a view for numpy; DeviceArrays are flat already)."""
    if isinstance(t, DeviceArray):
        return t
    return t.reshape(rows, width)


def q_and_k(xq: Any, xk: Any, names: tuple[str, str] = ("xq", "xk"), token_axis: int = 1,
            spec: Any = None) -> tuple[Any, Any, int, int, int]:
    """q and k of one dtype, 4D with their tokens on `token_axis` ([B, S, H,
    D]: 1, ExecuTorch's; [B, H, S, D]: 2, transformers'), sharing B, S and
    D: (q, k, B, S, D). A ModelRope `spec`'s head dim is checked against q's
    D and then k's before they are compared (its message says more of a wrong
    D than that q and k differ: DeepSeek's full q beside its rotary k_pe)."""
    qn, kn = names
    layout = "[B, S, H, D]" if token_axis == 1 else "[B, H, S, D]"
    q, k = check_tensor(qn, xq), check_tensor(kn, xk)
    for name, x in ((qn, q), (kn, k)):
        if x.ndim != 4:
            raise ValueError(f"{name} must be 4D {layout}; got shape {tuple(x.shape)}")
    if isinstance(spec, ModelRope):
        check_model_head(spec, int(q.shape[3]), qn)
        check_model_head(spec, int(k.shape[3]), kn)
    b, s, d = (int(q.shape[a]) for a in (0, token_axis, 3))
    if tuple(int(k.shape[a]) for a in (0, token_axis, 3)) != (b, s, d):
        heads = 3 - token_axis  # (grouped-query q and k of the other layout differ on the axis read as S)
        other = "[B, H, S, D]" if token_axis == 1 else "[B, S, H, D]"
        hq, hk = int(q.shape[token_axis]), int(k.shape[token_axis])  # (the heads, read the other way)
        hint = (layout_question(f"{qn} and {kn}", layout, other)
                if int(k.shape[heads]) == int(q.shape[heads]) and (int(k.shape[0]), int(k.shape[3])) == (b, d)
                and 0 < hk < hq and hq % hk == 0 else "")
        raise ValueError(f"{kn} {tuple(k.shape)} must share B, S and D with {qn} {tuple(q.shape)} ({layout}){hint}")
    if q.dtype != k.dtype:
        raise TypeError(f"{qn} and {kn} must have one dtype; got {q.dtype} and {k.dtype}")
    return q, k, b, s, d
