"""The context shift of a KV cache (`vkrope.shift_cache`): llama.cpp's
K-shift and StreamingLLM's attention sinks, its arguments checked into the
shift kernel's request (vkrope/kernels/shift.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..arguments import describe
from ..spec_checks import MAX_POSITION
from ..freqs import InvFreqs, RopeFreqs, is_position_spec
from ..kernels import shift as shift_kernel
from ..kernels.shift import Request
from ..models import ModelRope, model_table
from ..runtime.array import DeviceArray
from . import resolve
from .call import Call
from .cache_args import cache, given_rows, ints, pairing, paged_slots, rows_once, value_cache
from .lowering import lower


def _in_range(name: str, p: np.ndarray) -> None:
    if p.size and (int(p.min()) < 0 or int(p.max()) >= MAX_POSITION):
        raise ValueError(f"{name} must lie in [0, 2^24); got {int(p.min()) if int(p.min()) < 0 else int(p.max())}")


def _frequencies(freqs: Any, old: np.ndarray, new: np.ndarray, interleaved: bool, d: int) -> Any:
    """The call's one-axis spec. A ModelRope whose frequencies each call
    decides from its own positions (dynamic NTK, longrope) is refused: which
    frequencies rotated each cached key depends on the call that wrote it
    (a prefill past the switch rotates its early keys otherwise than a
    decode step that wrote them one by one), which the cache does not say."""
    if (isinstance(freqs, ModelRope) and freqs.mrope_section is not None) or (
            isinstance(freqs, InvFreqs) and freqs.mrope):
        raise ValueError("freqs: an M-RoPE spec rotates each key by several positions; shift_cache takes one "
                         "position per token (a text-only cache: pass the spec of its one axis)")
    # (a longrope whose short and long factors are one set, from_gguf's, does not: any call rotated by it)
    if isinstance(freqs, ModelRope) and freqs.uses_seq_len():
        raise ValueError(f"freqs: this ModelRope's frequencies depend on the positions ({freqs.rope_type}: each call "
                         "decides them by its longest position), so which ones rotated each cached key depends on the "
                         "call that wrote it; pass the spec the keys were rotated by (rope.freqs(position_ids) of "
                         "those calls: engines fix one for the whole context, llama.cpp's longrope by the allocated "
                         "context, vLLM's dynamic NTK by the longest)")
    if isinstance(freqs, ModelRope):  # (each end named where the model has no rotation for it: GPT-J's)
        for name, positions in (("from_positions", old), ("to_positions", new)):
            model_table.within_limit(freqs, positions, name)
    if isinstance(freqs, (ModelRope, InvFreqs)):  # (both ends: a key moved to a position the model has no
        freqs = resolve("freqs", freqs, np.concatenate([old, new]), interleaved, d)  # rotation for, GPT-J's, refused)
    if not is_position_spec(freqs):
        raise TypeError(f"freqs must be a vkrope.RopeFreqs, InvFreqs or ModelRope (the spec the keys were rotated "
                        f"by); got {describe(freqs)}")
    if freqs.dim > d or freqs.dim % 2:
        raise ValueError(f"freqs: the spec's rotary width {freqs.dim} must be even and <= D = {d}")
    return freqs


def _contiguous_rows(k_cache: Any, old: np.ndarray, new: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each token's row of head 0 now and the row it goes to, in [B, Hk, S_max, D] (the row is the position)."""
    b, hk, s_max, _ = (int(n) for n in k_cache.shape)
    if old.shape[0] != b:
        raise ValueError(f"from_positions must be [B, S] with k_cache's B = {b}; got {list(old.shape)}")
    for name, p in (("from_positions", old), ("to_positions", new)):
        if p.size and int(p.max()) >= s_max:
            raise ValueError(f"{name} must be < S_max = {s_max} (the cache's rows per head); got {int(p.max())}")
        rows_once(name, p)
    base = np.arange(b)[:, None] * hk * s_max
    return (base + old).reshape(-1), (base + new).reshape(-1)


def _slot_rows(k_cache: Any, slots: Any, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(which tokens a paged shift turns, their rows of head 0): slot -1 skips a token."""
    sl = paged_slots(slots, shape, int(k_cache.shape[0]) * int(k_cache.shape[1]))
    keep = sl >= 0
    return keep, sl[keep] * int(k_cache.shape[2])


def _v_cache(v_cache: Any, k_cache: Any, moves: bool, paged: bool, mover: str = "to_positions") -> Any:
    """The value cache whose rows move with the keys', or None when no row moves (`mover`: what moves them)."""
    if v_cache is None:
        if moves:
            raise ValueError(f"{mover} moves rows of a contiguous cache: pass v_cache, whose rows move with them")
        return None
    v_cache = value_cache(k_cache, v_cache)
    if paged:
        raise ValueError("v_cache: a paged cache's rows stay where they are (only keys turn): pass v_cache=None")
    return v_cache if moves else None


def _given_rows(k_cache: Any, old: np.ndarray, from_rows: Any, to_rows: Any) -> tuple | None:
    """(which tokens turn, their rows of head 0 now, the rows they go to) of a contiguous cache whose rows are
    given apart from the positions (from_rows, to_rows: a from_rows of -1 skips its token, as cache_position's
    -1 wrote nothing); None where neither is given (the rows are the positions)."""
    if from_rows is None and to_rows is None:
        return None
    if from_rows is None or to_rows is None:
        raise ValueError(f"from_rows and to_rows go together; got {'to_rows' if from_rows is None else 'from_rows'} "
                         "alone")
    b, hk, s_max, _ = (int(n) for n in k_cache.shape)
    if old.shape[0] != b:  # (the positions' fault, named before the rows are held to their shape)
        raise ValueError(f"from_positions must be [B, S] with k_cache's B = {b}; got {list(old.shape)}")
    fr = given_rows("from_rows", from_rows, tuple(old.shape), s_max)
    keep = fr >= 0
    tr = ints("to_rows", to_rows, tuple(old.shape))
    bad = tr[keep & ((tr < 0) | (tr >= s_max))]  # (a skipped token's is not read)
    if bad.size:
        raise ValueError(f"to_rows must lie in [0, {s_max}) (S_max, the cache's rows per head) where from_rows is "
                         f"not -1; got {int(bad[0])}")
    given_rows("to_rows", np.where(keep, tr, -1), tuple(old.shape), s_max)  # (each row once)
    base = np.arange(b)[:, None] * hk * s_max
    return keep.reshape(-1), (base + fr)[keep], (base + tr)[keep]


def check(k_cache: Any, freqs: Any, from_positions: Any, to_positions: Any, *, v_cache: Any = None,
          slots: Any = None, interleaved: Any = False, from_rows: Any = None, to_rows: Any = None) -> Request:
    """`shift_cache`'s arguments, checked before any GPU work: TypeError /
    ValueError naming the argument."""
    k_cache = cache("k_cache", k_cache)
    if k_cache.ndim != 4:
        raise ValueError(f"k_cache must be [B, Hk, S_max, D] (or paged [num_blocks, block_size, Hk, D] with slots); "
                         f"got {list(k_cache.shape)}")
    interleaved = pairing(interleaved)
    if slots is not None and (from_rows is not None or to_rows is not None):
        raise ValueError("from_rows / to_rows are a contiguous cache's rows; a paged cache's are its slots: pass "
                         "one of the two")
    old = ints("from_positions", from_positions, None)
    new = ints("to_positions", to_positions, tuple(old.shape))
    given = _given_rows(k_cache, old, from_rows, to_rows)
    if given is not None:
        keep, src, dst = given
    elif slots is None:
        keep = np.ones(old.size, bool)
    else:
        keep, rows = _slot_rows(k_cache, slots, tuple(old.shape))
    old_kept, new_kept = old.reshape(-1)[keep], new.reshape(-1)[keep]  # (a skipped token's positions are not read)
    _in_range("from_positions", old_kept)
    _in_range("to_positions", new_kept)
    d = int(k_cache.shape[3])
    spec = _frequencies(freqs, old_kept, new_kept, bool(interleaved), d)
    if slots is not None:
        src, dst = rows, rows  # (a paged key turns where it is)
    elif given is None:
        src, dst = _contiguous_rows(k_cache, old, new)
    v_cache = _v_cache(v_cache, k_cache, not np.array_equal(src, dst), slots is not None,
                       "to_rows" if given is not None else "to_positions")
    gen = lower(spec)
    tokens = np.stack([src, dst, gen.words(old_kept), gen.words(new_kept)], -1)
    tokens = tokens[(src != dst) | (old_kept != new_kept)]  # (a shift by 0 in place is no shift: its bits stay)
    paged = slots is not None  # heads: [.., Hk, D] rows next to each other; contiguous: S_max rows apart
    return Request(x=k_cache, v_cache=v_cache, freqs=gen, tokens=tokens.astype(np.int32),
                   head_stride=1 if paged else int(k_cache.shape[2]), hk=int(k_cache.shape[2 if paged else 1]),
                   head_dim=d, rot_half=spec.dim // 2, interleaved=bool(interleaved))


def shift_cache(k_cache: DeviceArray, freqs: RopeFreqs | InvFreqs | ModelRope, from_positions: np.ndarray,
                to_positions: np.ndarray, *, v_cache: DeviceArray | None = None, slots: np.ndarray | None = None,
                interleaved: bool = False, from_rows: np.ndarray | None = None,
                to_rows: np.ndarray | None = None) -> Call[None]:
    """The context shift of a KV cache, in place: each token's cached key,
    rotated at `from_positions[b, s]` (as `rope_and_cache` wrote it), rotated
    again to `to_positions[b, s]` (llama.cpp's K-shift; StreamingLLM keeps
    its attention sinks and moves the later tokens down), rounded once to
    the cache's dtype; channels past the spec's rotary width move as they
    are.

    k_cache: a buffer DeviceArray, contiguous `[B, Hk, S_max, D]` (token
    (b, s) at row `from_positions[b, s]`; it goes to row `to_positions[b,
    s]`, and `v_cache`'s row with it: pass `v_cache` whenever a row moves;
    rows not named keep their bits, and rows named with from == to, the
    rows a move leaves keep theirs; `from_rows` / `to_rows`, int `[B, S]`
    both, give the rows apart from the positions where they differ, as
    `rope_and_cache`'s `cache_position` wrote them: a left-padded batch's;
    a `from_rows` of -1 skips its token),
    or paged `[num_blocks, block_size, Hk, D]` with `slots` (int `[B, S]`,
    -1 = skip; a slot stays, only its key turns: `v_cache` None). freqs:
    the spec the keys were rotated by (`RopeFreqs`, `InvFreqs`, or a
    `ModelRope` whose frequencies do not depend on the positions). The
    rotation is by the new angle less the old one: with `angle="exact"`
    (new - old) times the float64 frequency, reduced exactly; with float32
    angles the exact difference of the two float32 angles the frameworks
    form, reduced exactly. YaRN's factor is not applied again (the key
    carries it; llama.cpp's K-shift applies it again). `interleaved`: pairs (2i, 2i+1), else rotate-half.
    Positions in [0, 2^24), rows outside the cache, a row named twice: a
    ValueError naming the argument before any GPU work, the caches
    unchanged. Returns None."""
    return Call(shift_kernel, (check(k_cache, freqs, from_positions, to_positions, v_cache=v_cache, slots=slots,
                                     interleaved=interleaved, from_rows=from_rows, to_rows=to_rows),),
                lambda outs: None)
