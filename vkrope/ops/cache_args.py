"""The KV-cache ops' shared argument checks (`rope_and_cache`,
`shift_cache`): a cache, the value cache beside it, the pairing flag,
integer arrays of positions or slots, and rows and slots named at most
once in a call (two writes to one row would race on the device)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..arguments import check_alive, check_plain_array, describe
from ..runtime.array import DeviceArray
from ..runtime.dtypes import CACHE_DTYPE_NAMES, CACHE_DTYPES, is_fp8, is_int, is_integer_dtype


def cache(name: str, c: Any) -> Any:
    """A KV cache: a live buffer DeviceArray of a cache dtype that 32-bit indices address."""
    if not isinstance(c, DeviceArray):
        raise TypeError(f"{name} must be a DeviceArray (the cache stays on the device and is written in place; "
                        f"upload it with Device.asarray); got {describe(c)}")
    check_alive(name, c)
    if c.storage != "buffer":
        raise ValueError(f"{name} must be a buffer DeviceArray; got storage {c.storage!r}")
    if c.dtype not in CACHE_DTYPES:
        raise TypeError(f"{name} must have dtype {CACHE_DTYPE_NAMES}; got {c.dtype}")
    if c.size == 0:
        raise ValueError(f"{name} is empty (shape {list(c.shape)}): no row to write")
    if c.size >= 2**32:
        raise ValueError(f"{name} holds {c.size} values; the kernel addresses values with 32-bit integers "
                         "(split the cache, e.g. one per layer group)")
    if is_fp8(c.dtype) and int(c.shape[-1]) % 4:
        raise ValueError(f"{name}: an fp8 cache needs D (its last axis) a multiple of 4 (four values to a 32-bit "
                         f"word, a word to a thread); got D = {int(c.shape[-1])}")
    return c


def value_cache(k_cache: Any, v_cache: Any) -> Any:
    """v_cache beside a checked k_cache: another buffer DeviceArray of its shape and dtype."""
    v_cache = cache("v_cache", v_cache)
    if k_cache is v_cache:
        raise ValueError("k_cache and v_cache are the same DeviceArray: pass two caches")
    if k_cache.dtype != v_cache.dtype:  # (a wrong dtype is a TypeError, as everywhere)
        raise TypeError(f"k_cache and v_cache must have one dtype; got {k_cache.dtype} and {v_cache.dtype}")
    if tuple(k_cache.shape) != tuple(v_cache.shape):
        raise ValueError(f"k_cache and v_cache must have one shape; got {list(k_cache.shape)} and "
                         f"{list(v_cache.shape)}")
    return v_cache


def pairing(interleaved: Any) -> bool:
    """`interleaved` of the KV-cache ops: a bool, or 0 / 1 (ONNX's attribute)."""
    if not (isinstance(interleaved, (bool, np.bool_)) or is_int(interleaved)) or int(interleaved) not in (0, 1):
        raise TypeError(f"interleaved must be a bool (or 0 / 1); got {describe(interleaved)}")
    return bool(interleaved)


def ints(name: str, a: Any, shape: tuple[int, ...] | None) -> np.ndarray:
    """int64 [B, S] (of `shape`, or any 2-D with None) from an integer numpy array; values past 2^62 refused before
    the cast could wrap them."""
    want = f"[B, S] = {list(shape)}" if shape is not None else "[B, S]"
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{name} must be an integer numpy array of shape {want}; got {describe(a)}")
    check_plain_array(name, a)
    if not is_integer_dtype(a.dtype):
        raise TypeError(f"{name} must be an integer array; got dtype {a.dtype}")
    if a.dtype.kind == "u" and a.size and int(a.max()) > 2**62:
        raise ValueError(f"{name} holds {int(a.max())}, past any cache")
    if a.ndim != 2 or (shape is not None and tuple(a.shape) != shape):
        raise ValueError(f"{name} must have shape {want}; got {list(a.shape)}")
    return a.astype(np.int64)


def rows_once(name: str, pos: np.ndarray, when: str = "") -> None:
    """Each batch item's positions [B, S] name each cache row at most once, else a ValueError naming the row."""
    srt = np.sort(pos, axis=1)
    twice = np.diff(srt, axis=1) == 0
    if twice.any():
        bi, si = (int(i[0]) for i in np.nonzero(twice))
        raise ValueError(f"{name}[{bi}] names cache row {int(srt[bi, si])} twice{when}")


def given_rows(name: str, a: Any, shape: tuple[int, ...], s_max: int, when: str = "") -> np.ndarray:
    """A contiguous cache's rows given apart from the positions (rope_and_cache's cache_position, shift_cache's
    from_rows), int64 [B, S]: each in [-1, S_max) (-1: the token's row is none), none but -1 named twice by one
    batch item."""
    rows = ints(name, a, shape)
    bad = rows[(rows < -1) | (rows >= s_max)]
    if bad.size:
        raise ValueError(f"{name} must lie in [-1, {s_max}) (S_max, the cache's rows per head; -1: none); got "
                         f"{int(bad[0])}")
    rows_once(name, np.where(rows >= 0, rows, -1 - np.arange(rows.shape[1])), when)  # (each -1 its own)
    return rows


def paged_slots(slots: Any, shape: tuple[int, ...], n_slots: int, when: str = "") -> np.ndarray:
    """slots, int64 and flat: each in [-1, n_slots) (-1: the token is skipped), none but -1 named twice."""
    sl = ints("slots", slots, shape).reshape(-1)
    bad = sl[(sl < -1) | (sl >= n_slots)]
    if bad.size:
        raise ValueError(f"slots must lie in [-1, {n_slots}) (num_blocks * block_size); got {int(bad[0])}")
    used, counts = np.unique(sl[sl >= 0], return_counts=True)
    if (counts > 1).any():
        raise ValueError(f"slots names cache slot {int(used[np.argmax(counts > 1)])} twice{when}")
    return sl
