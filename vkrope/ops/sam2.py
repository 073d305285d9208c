"""SAM2 / EdgeTAM's interleaved ("complex-number") RoPE, ExecuTorch's
`et_vk.apply_rotary_emb_interleaved`: `vkrope.apply`'s arguments checked into the interleaved kernel's
request (vkrope/kernels/interleaved.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..arguments import (
    REPEATS_READ, check_out, check_plain_array, check_resident_table_dtype, check_storage_of, check_table_array,
    check_x, check_row_index, describe, int_arg,
)
from ..models import ModelRope
from ..freqs import AxialFreqs, FrequencySpec, InvFreqs, RopeFreqs
from ..nd_freqs import NdFreqs
from ..runtime.dtypes import (FREQS_DTYPES, TENSOR_DTYPES, Dtypes, asarray_hint, convert_hint, frozen,
                              is_integer_dtype, names, without_repeats)
from ..kernels.interleaved import Request
from .lowering import lower
from .call import ArrayT, Call, one
from .repeat import Structures
from . import full_width
from ..kernels import interleaved as interleaved_kernel, table as table_kernel
from .nd import check_apply_nd
from ..runtime.array import DeviceArray

COMPLEX_FREQS_DTYPES = Dtypes("complex64", "complex128")
FREQS_DTYPE_NAMES = names(FREQS_DTYPES + COMPLEX_FREQS_DTYPES)


def check(x: Any, freqs: Any, *, out: Any = None, inverse: Any = False, repeat: Any = 1, exclude_last: Any = 0,
          positions: Any = None, storage: Any = "auto") -> Request:
    """Validate every argument of `apply` and return the normalised `Request`: the call's structure (checked
    once for arguments that repeat, ops/repeat.py), then its positions (so with several bad arguments, the
    error names one of the structure's first)."""
    st = _structures(x, freqs, out, inverse, repeat, exclude_last, positions is None, storage)
    pos32: np.ndarray | None = None
    row_of: Any = st.row_of  # (None only with positions)
    if positions is not None:
        pos32 = _check_positions(positions, st.n_tokens, st.n_freq_rows, st.channels, st.form, x.size)
        row_of = pos32
    return interleaved_kernel.check_values(Request(
        x=x, freqs_pairs=freqs if st.pairs is None else st.pairs, n_tokens=st.n_tokens, channels=st.channels,
        n_freq_rows=st.n_freq_rows, row_of=row_of, positions=pos32, n_rot=st.n_rot, inverse=st.inverse,
        storage=st.storage, out=out, given=(("freqs", freqs), ("positions", positions))))


@dataclass(frozen=True)
class _Structure:
    """What `apply`'s arguments but the positions decide (no argument in it: see ops/repeat.py)."""

    n_tokens: int
    channels: int
    n_freq_rows: int
    n_rot: int
    inverse: bool
    storage: str
    pairs: Any  # the frequencies as the kernel reads them; None: freqs itself (a DeviceArray)
    form: Callable[[], str]  # freqs described, for an error message
    row_of: np.ndarray | None  # without positions: each token's row (read-only)


def _pair_hint(cos: Any, sin: Any) -> str:
    """What apply says to a (cos, sin) pair: for full-width tables of each value twice in interleaved pairs
    (diffusers', GPT-J's repeat_interleave), the stack apply takes of [N, D] ones, and ONNX's op for a model's
    per-item or partial ones; for rotate-half ones (transformers' cat(freqs, freqs)), ONNX's op; all of it where
    the form is not known."""
    form = full_width.form_of(cos, sin)
    stack = ("apply turns interleaved pairs (2i, 2i + 1), each row's cos and sin side by side: "
             f"np.stack([cos[..., ::2], sin[..., ::2]], -1) of {full_width.INTERLEAVED} tables [N, D] (diffusers')")
    route = f"a model's tables [B or 1, S, rot] go to {full_width.rotary_embedding_route(form)}"
    return " (a (cos, sin) pair: " + (route if form == full_width.CAT else f"{stack}; {route}") + ")"


def _rows(n: int, n_rot: int, n_freq_rows: int) -> np.ndarray:
    """Each of `n` tokens' freqs row without positions: `t % n_freq_rows` for the first `n_rot`, -1 (passes through)
    after. int32 where the rows allow (4 bytes a token, kept as long as a resident x's structure: a 2^25-token x
    kept 256 MiB of int64), filled a block at a time (no temporaries the size of x's tokens but frozen's one
    copy; an adversary's broadcast x of 2^28 tokens took 6 GiB and 9 s here before its result was refused as
    too large)."""
    row_of = np.full(n, -1, np.int32 if n_freq_rows < 2**31 else np.int64)
    block = 1 << 20
    for t0 in range(0, n_rot, block):
        t1 = min(t0 + block, n_rot)
        row_of[t0:t1] = np.arange(t0, t1, dtype=np.int64) % n_freq_rows
    return row_of


def _structure(x: Any, freqs: Any, out: Any, inverse: Any, repeat: Any, exclude_last: Any, no_positions: bool,
               storage: Any) -> _Structure:
    """Every check of `apply` but the positions' own."""
    x = check_x(x)
    n_tokens, channels = int(x.shape[-2]), int(x.shape[-1])
    storage = check_storage_of("x", x, storage)
    if not isinstance(inverse, (bool, np.bool_)):
        raise TypeError(f"inverse must be a bool; got {describe(inverse)}")
    repeat = int_arg("repeat", repeat, 1)
    exclude_last = int_arg("exclude_last", exclude_last, 0)
    if exclude_last > n_tokens:
        raise ValueError(f"exclude_last must be <= N = {n_tokens} (x shape {x.shape}); got {exclude_last}")
    pairs, n_freq_rows, form = _check_freqs(freqs, x)
    if isinstance(pairs, FrequencySpec) and pairs.needs_positions and no_positions:
        raise ValueError(f"freqs is {_a(pairs)} spec: pass positions (each token's position, -1 = pass "
                         "through)")
    if inverse and isinstance(pairs, FrequencySpec) and pairs.magnitude != 1:
        # m R(theta) has inverse R(-theta) / m but gradient m R(-theta): with
        # m != 1 no single meaning of `inverse` is both, so neither is guessed.
        fix = ("pass yarn an attn_factor of 1 / (0.1 ln(scale) + 1) for a factor of 1" if getattr(pairs, "yarn", None)
               else "pass a spec of attention_factor 1")
        raise ValueError(f"inverse=True with {_a(pairs)} spec whose cos / sin factor is "
                         f"{float(pairs.magnitude)} (not 1): its inverse (divides by it) and its gradient (multiplies) "
                         f"differ; {fix} and scale x yourself")
    n_rot = n_tokens - exclude_last
    row_of: np.ndarray | None = None
    if not no_positions:
        if repeat != 1 or exclude_last != 0:
            raise ValueError(
                f"positions cannot be combined with repeat or exclude_last (got repeat={repeat}, "
                f"exclude_last={exclude_last}); express them in positions (-1 = pass through)"
            )
    else:
        # (C = 0, or every token excluded as SAM2's keys "due to dropout": nothing rotates, any freqs do)
        if n_rot != repeat * n_freq_rows and channels and n_rot:
            raise ValueError(
                f"freqs has {n_freq_rows} rows ({form()}); expected (N - exclude_last) / repeat = "
                f"({n_tokens} - {exclude_last}) / {repeat} rows so that every rotated token has one (x shape {x.shape})"
            )
        # (an x of no values runs no kernel, and its N may be any size: no row per token then)
        row_of = frozen(_rows(n_tokens, n_rot if n_freq_rows else 0, n_freq_rows) if x.size else _rows(0, 0, 0))
    if isinstance(pairs, FrequencySpec):
        pairs = lower(pairs)
    check_out(out, x)
    return _Structure(n_tokens=n_tokens, channels=channels, n_freq_rows=n_freq_rows, n_rot=n_rot,
                      inverse=bool(inverse), storage=storage, pairs=None if pairs is freqs else pairs, form=form,
                      row_of=row_of)


_structures = Structures(_structure)


def _check_freqs(freqs: Any, x: Any) -> tuple[Any, int, Callable[[], str]]:
    """(pairs [Nf, C/2, 2] or a resident DeviceArray, Nf, what makes their description)."""
    channels = int(x.shape[-1])
    half = channels // 2
    if isinstance(freqs, NdFreqs):  # (vkrope.apply sends these to the table kernel before this check)
        raise TypeError("freqs: a vkrope.NdFreqs spec runs through vkrope.apply(x, spec, positions=ids) or "
                        "vkrope.apply_nd, one call at a time (not apply_many)")
    if isinstance(freqs, ModelRope):
        raise TypeError("freqs: a vkrope.ModelRope decides its frequencies per call: pass rope.freqs(positions) "
                        "(an InvFreqs) with positions, or use vkrope.apply_rotary_pos_emb")
    if isinstance(freqs, InvFreqs) and freqs.mrope:
        raise ValueError("freqs: an M-RoPE InvFreqs spec turns each pair by one of three position axes; apply "
                         "takes one position per token: use vkrope.apply_rotary_pos_emb")
    if isinstance(freqs, FrequencySpec):
        if freqs.dim != channels:
            raise ValueError(f"freqs: the {type(freqs).__name__} spec has dim = {freqs.dim}; x has C = {channels}")
        return freqs, freqs.rows, lambda: f"{type(freqs).__name__} spec of {freqs.rows} rows"
    # (each description is made only for an error message: formatting costs more than the check)
    if isinstance(freqs, DeviceArray):
        check_table_array("freqs", freqs, TENSOR_DTYPES)
        check_resident_table_dtype("freqs", freqs, x)
        dtype = freqs.dtype  # (the descriptions hold no DeviceArray: a structure keeps them, ops/repeat.py)
        per_row, what = channels, lambda: f"real {dtype} DeviceArray [Nf, C] (or [Nf, C/2, 2])"
    else:
        if not isinstance(freqs, np.ndarray):
            # (diffusers' and transformers' (cos, sin): np.asarray of one stacks it into rows it is not)
            pair = isinstance(freqs, (tuple, list)) and len(freqs) == 2 and all(
                isinstance(f, (np.ndarray, DeviceArray)) for f in freqs)
            raise TypeError(f"freqs must be a numpy array ({FREQS_DTYPE_NAMES}), a DeviceArray or a frequency "
                            "spec (AxialFreqs, RopeFreqs, InvFreqs, NdFreqs); "
                            f"got {describe(freqs)}" + (_pair_hint(*freqs) if pair else asarray_hint('freqs', freqs)))
        check_plain_array("freqs", freqs)
        if freqs.dtype in COMPLEX_FREQS_DTYPES:
            per_row, what = half, lambda: f"complex [Nf, C/2] = [Nf, {half}]"
        elif freqs.dtype in FREQS_DTYPES:
            per_row, what = channels, lambda: f"real [Nf, C] = [Nf, {channels}] (or [1, Nf, C/2, 2])"
        else:
            raise TypeError(
                f"freqs must have dtype {FREQS_DTYPE_NAMES}; got "
                f"{freqs.dtype} ({convert_hint('freqs', freqs.dtype, FREQS_DTYPES + COMPLEX_FREQS_DTYPES)})")
    if per_row == 0:
        if freqs.size:
            raise ValueError(f"freqs must be empty when C = 0; got {freqs.size} values")
        rows = 0
    elif freqs.size % per_row:
        raise ValueError(f"freqs must hold whole rows of {per_row} values ({what()}); got {freqs.size} values "
                         f"in shape {tuple(freqs.shape)} for x of shape {tuple(x.shape)}")
    else:
        rows = freqs.size // per_row
    size, shape = freqs.size, tuple(freqs.shape)
    dims = tuple(n for n in shape if n != 1)  # (axes of 1 anywhere: EdgeTAM's leading one, a trailing one)
    if size and not _row_layout(dims, per_row, half):
        why = "a planar np.stack([cos, sin]) [2, Nf, C/2]: stack them on the last axis, np.stack([cos, sin], -1)" \
            if per_row != half and len(dims) >= 3 and dims[0] == 2 else \
            f"its last axis is {dims[-1]} wide, not {'C' if per_row != half else 'C/2'} = {per_row}"
        raise ValueError(f"freqs has shape {shape}, which lays out no rows of x's C = {channels} ({why}): expected "
                         f"{what()}, any axes of 1 besides, or flat; read as rows, another shape of as many values "
                         "would give wrong angles")

    def form() -> str:
        return f"{size} values in shape {shape}, {what()}"

    if per_row == channels and not isinstance(freqs, DeviceArray):
        _refuse_one_repeated(freqs.reshape(rows, half, 2))

    if isinstance(freqs, DeviceArray):
        # (an empty one has no memory to bind: its rows, none, as an empty numpy table)
        return (freqs if freqs.size else np.zeros((0, half if per_row else 0, 2), freqs.dtype)), rows, form
    if freqs.dtype in COMPLEX_FREQS_DTYPES:
        c = freqs.reshape(rows, half) if per_row else freqs.reshape(0, 0)
        pairs_dtype = np.float64 if freqs.dtype == np.complex128 else np.float32
        try:  # (its (real, imag) pairs as a view: a broadcast table of 2^40 rows is not copied whole)
            return c.view(pairs_dtype).reshape(rows, c.shape[1], 2), rows, form
        except ValueError:  # (a last axis numpy cannot view so: strided, Fortran order)
            return np.stack([c.real, c.imag], axis=-1).astype(pairs_dtype), rows, form
    return (freqs.reshape(rows, half, 2) if per_row else freqs.reshape(0, 0, 2)), rows, form


def _refuse_one_repeated(pairs: np.ndarray, rows: int = REPEATS_READ) -> None:
    """A ValueError where a real table's first `rows` rows of pairs [Nf, C/2, 2] hold cos == sin in every pair,
    the values not all one (a table of ones or zeros, a test's stand-in, is taken as given): one of Hugging
    Face's cos / sin tables, each value twice, passed alone. No rotation table is: its angles are not all pi/4
    (mod pi). Only the first rows are read (a table may be a broadcast view of 2^40 rows)."""
    head = pairs[:rows]
    if head.size and np.ptp(head) > 0 and np.array_equal(head[..., 0], head[..., 1]):
        raise ValueError("freqs: every (cos, sin) pair of its first rows holds two equal values, as one of "
                         "transformers' SAM2 cos / sin tables does alone ([1, N, C], each value twice): apply "
                         "takes rows of interleaved (cos, sin) pairs, np.stack([cos[..., ::2], sin[..., ::2]], -1)")


def _row_layout(dims: tuple, per_row: int, half: int) -> bool:
    """Whether a table's axes, those of 1 left out (`dims`), lay out rows of `per_row` values: flat; [...,
    per_row] (real [Nf, C], complex [Nf, C/2]); real [..., C/2, 2] or [Nf * C/2, 2] (ExecuTorch's any rank of
    N * C values, where the trailing axes are a row's: a planar [2, Nf, C/2] holds as many values and is no such
    layout)."""
    if len(dims) <= 1 or dims[-1] == per_row:
        return True
    return per_row == 2 * half and dims[-1] == 2 and (len(dims) == 2 or dims[-2] == half)


def _a(spec: Any) -> str:
    """'a RopeFreqs', 'an InvFreqs', 'an AxialFreqs', 'an NdFreqs': the spec's class with its article."""
    name = type(spec).__name__
    return f"{'an' if name[0] in 'AEINO' else 'a'} {name}"


def _check_positions(positions: Any, n_tokens: int, n_freq_rows: int, channels: int,
                     form: Callable[[], str], values: int) -> np.ndarray:
    """positions as int32, each in [-1, Nf); none where x holds no `values` (no kernel runs, and N may be any
    size: a broadcast array of 2^40 entries is checked, not copied)."""
    if not isinstance(positions, np.ndarray):
        raise TypeError(f"positions must be an integer numpy array of shape [N] = [{n_tokens}]; got {describe(positions)}"
                        f"{asarray_hint('positions', positions)}")
    check_plain_array("positions", positions)
    if not is_integer_dtype(positions.dtype):
        raise TypeError(f"positions must be an integer array of shape [N] = [{n_tokens}]; got dtype {positions.dtype}")
    if positions.shape != (n_tokens,):
        raise ValueError(f"positions must have shape [N] = ({n_tokens},); got {positions.shape}")
    # (the bounds once, as Python ints: the entry named is looked for only when they fail; a broadcast array's
    # repeats are not read.) With C = 0 the freqs are empty whatever Nf is: only -1 is out of reach then. The
    # values checked are a copy, which the kernel then reads: the caller's array may be written by another
    # thread between the check and the run (an adversary's: an unchecked row reached the shader).
    positions = np.array(positions) if values else without_repeats(positions)
    lo, hi = (int(positions.min()), int(positions.max())) if positions.size else (0, -1)
    if lo < -1 or (channels and hi >= n_freq_rows):
        bad = positions[(positions < -1) | ((positions >= n_freq_rows) if channels else False)]
        raise ValueError(
            f"positions entries must lie in [-1, Nf) = [-1, {n_freq_rows}) (Nf: the rows of freqs, {form()}); "
            f"got {int(bad[0])}")
    check_row_index("positions", hi)
    return np.ascontiguousarray(positions, dtype=np.int32) if values else np.zeros(0, np.int32)


def apply(
    x: ArrayT,
    freqs: np.ndarray | DeviceArray | AxialFreqs | RopeFreqs | InvFreqs | NdFreqs,
    *,
    out: ArrayT | None = None,
    inverse: bool = False,
    repeat: int = 1,
    exclude_last: int = 0,
    positions: np.ndarray | None = None,
    storage: str = "auto",
) -> Call[ArrayT]:
    """Interleaved rotary position embedding of `x` by `freqs`.

    x: float32, float16 or bfloat16 array `[..., N, C]` (C even; with an
    NdFreqs, channels past its pairs pass through), (real, imag) pairs
    interleaved on the last axis. freqs: `(cos, sin)` pairs for `Nf` rows,
    real with `Nf * C` values (`[Nf, C]`, `[1, Nf, C/2, 2]`, ...: trailing
    axes `[C]` or `[C/2, 2]`, or flat) or complex `[..., Nf, C/2]`, or a
    `vkrope.AxialFreqs` / `vkrope.RopeFreqs` /
    `vkrope.InvFreqs` spec (cos / sin computed in the shader; RopeFreqs and
    InvFreqs, a ModelRope's `rope.freqs(positions)`, need `positions`), or a
    `vkrope.NdFreqs` spec with `positions` the ids `[N, n_axes]` (as
    `apply_nd` with its default token_axis=-2: the spec's own pairs, rotate-half
    where it says so, and any C);
    broadcast over every leading axis of x. Token `n`
    uses row `n % Nf` for its first `N - exclude_last` tokens, which must
    number `repeat * Nf` (or none: SAM2's keys all excluded); the last
    `exclude_last` tokens pass through.
    `positions` (int array `[N]`, -1 = pass through) picks each token's row
    instead. `inverse=True` rotates by -theta. `out` receives the result
    (may be x itself). `storage`: "auto", "buffer" or "texture3d".

    Returns a new array of x's shape and dtype (or `out`): numpy for a numpy
    `x`; for a `DeviceArray` x (of the device the call runs on) a new
    `DeviceArray`, with no host round trip (`storage` is then the array's own).
    """
    kw: dict[str, Any] = dict(out=out, inverse=inverse, repeat=repeat, exclude_last=exclude_last,
                              positions=positions, storage=storage)
    if isinstance(freqs, NdFreqs):  # the table kernel's frequencies per axis
        return one(table_kernel, check_apply_nd(x, freqs, **kw))
    return one(interleaved_kernel, check(x, freqs, **kw))
