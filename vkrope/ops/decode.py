"""The decode step (`vkrope.rope_and_cache`): its arguments checked into the cache kernel's request
(vkrope/kernels/cache.py); see that module for the caches' layouts."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..arguments import check_alive, check_out, check_plain_array, check_x, describe
from . import resolve
from ..models import ModelRope
from ..freqs import InvFreqs, check_positions, is_position_spec
from ..runtime.dtypes import CACHE_DTYPE_NAMES, CACHE_DTYPES, REAL_SCALARS, TENSOR_DTYPES, is_fp8
from ..kernels.cache import Request
from .lowering import lower
from .call import ArrayT, Call, one
from ..kernels import cache as cache_kernel
from ..runtime.array import DeviceArray


def _tensor(name: str, a: Any, like: Any = None) -> Any:
    """q, k or v: [B, H, S, D], a numpy array or buffer DeviceArray of x's dtypes."""
    a = check_x(a, name)
    if a.ndim != 4:
        raise ValueError(f"{name} must be 4D [B, H, S, D]; got shape {tuple(a.shape)}")
    if not isinstance(a, np.ndarray) and a.storage != "buffer":
        raise ValueError(f"{name} must be a buffer DeviceArray (the decode step reads buffers); got storage "
                         f"{a.storage!r}")
    if like is not None and np.dtype(a.dtype) != np.dtype(like.dtype):
        raise TypeError(f"{name} must have the dtype of q ({like.dtype}); got {a.dtype}")
    return a


def _cache(name: str, c: Any) -> Any:
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


# The scales of an fp8 cache, taken as float32: within these no partial
# product of the exact rounding (glsl/fp8.glsl) leaves float32's range.
MIN_SCALE, MAX_SCALE = 2.0**-40, 2.0**40


def _scale(name: str, value: Any, cache: Any) -> float:
    """An fp8 cache's per-tensor scale as the float32 the kernel divides by (1.0 when None); other caches take
    none."""
    if value is None:
        return 1.0
    if not is_fp8(cache.dtype):
        raise ValueError(f"{name} scales an fp8 cache; this cache is {cache.dtype} (pass {name}=None)")
    if isinstance(value, np.ndarray) and value.ndim == 0 and (value.dtype.kind in "fiu" or
                                                              value.dtype in TENSOR_DTYPES):
        value = value[()]  # (vLLM keeps its scales as 0-d tensors)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, REAL_SCALARS):
        raise TypeError(f"{name} must be a number (one scale for the whole cache); got {describe(value)}")
    try:
        f = float(value)
    except OverflowError:  # (an int past float64)
        f = math.inf
    if not (math.isfinite(f) and MIN_SCALE <= f <= MAX_SCALE):
        raise ValueError(f"{name} must be a finite float32 in [2^{int(math.log2(MIN_SCALE))}, "
                         f"2^{int(math.log2(MAX_SCALE))}] (what the cache's values are divided by); got "
                         f"{str(value)[:40]}")
    return float(np.float32(f))


def _pairing(interleaved: Any) -> bool:
    """`interleaved` of the KV-cache ops: a bool, or 0 / 1 (ONNX's attribute)."""
    if not isinstance(interleaved, (bool, np.bool_, int, np.integer)) or int(interleaved) not in (0, 1):
        raise TypeError(f"interleaved must be a bool (or 0 / 1); got {describe(interleaved)}")
    return bool(interleaved)


def _value_cache(k_cache: Any, v_cache: Any) -> Any:
    """v_cache beside a checked k_cache: another buffer DeviceArray of its shape and dtype."""
    v_cache = _cache("v_cache", v_cache)
    if k_cache is v_cache:
        raise ValueError("k_cache and v_cache are the same DeviceArray: pass two caches")
    if tuple(k_cache.shape) != tuple(v_cache.shape) or k_cache.dtype != v_cache.dtype:
        raise ValueError(f"k_cache and v_cache must have one shape and dtype; got {list(k_cache.shape)} "
                         f"{k_cache.dtype} and {list(v_cache.shape)} {v_cache.dtype}")
    return v_cache


def _ints(name: str, a: Any, shape: tuple[int, ...] | None) -> np.ndarray:
    """int64 [B, S] (of `shape`, or any 2-D with None) from an integer numpy array; values past 2^62 refused before
    the cast could wrap them."""
    want = f"[B, S] = {list(shape)}" if shape is not None else "[B, S]"
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{name} must be an integer numpy array of shape {want}; got {describe(a)}")
    check_plain_array(name, a)
    if a.dtype == np.bool_ or not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"{name} must be an integer array; got dtype {a.dtype}")
    if a.dtype.kind == "u" and a.size and int(a.max()) > 2**62:
        raise ValueError(f"{name} holds {int(a.max())}, past any cache")
    if a.ndim != 2 or (shape is not None and tuple(a.shape) != shape):
        raise ValueError(f"{name} must have shape {want}; got {list(a.shape)}")
    return a.astype(np.int64)


def check(q: Any, k: Any, v: Any, k_cache: Any, v_cache: Any, freqs: Any, position_ids: Any, *,
          interleaved: Any = False, slots: Any = None, q_norm: Any = None, k_norm: Any = None,
          norm_plus_one: Any = False, eps: Any = 1e-6, k_scale: Any = None, v_scale: Any = None,
          out: Any = None) -> Request:
    """The arguments of `vkrope.rope_and_cache`, checked before any GPU work:
    TypeError / ValueError naming the argument."""
    q, k, v = _qkv(q, k, v)
    b, hq, s, d = (int(n) for n in q.shape)
    hk = int(k.shape[1])
    k_cache = _cache("k_cache", k_cache)
    v_cache = _value_cache(k_cache, v_cache)
    interleaved = _pairing(interleaved)
    pos = _ints("position_ids", position_ids, (b, s))
    if (pos < 0).any():
        raise ValueError(f"position_ids must be >= 0; got {int(pos.min())}")
    base, head_stride = _cache_rows(k_cache, pos, slots, hk, d)
    cos, sin, rows, gathered, given, rot = _frequency_rows(freqs, pos, bool(interleaved), d)
    weights = _norm_weights(q_norm, k_norm, d)
    if isinstance(eps, (bool, np.bool_)) or not isinstance(eps, REAL_SCALARS):
        raise TypeError(f"eps must be a number; got {describe(eps)}")
    if not (np.isfinite(eps) and 0 < float(eps) < 1) or np.float32(eps) == 0:
        raise ValueError(f"eps must be a positive float32 below 1; got {eps}")
    if not isinstance(norm_plus_one, (bool, np.bool_)):
        raise TypeError(f"norm_plus_one must be a bool; got {describe(norm_plus_one)}")
    if norm_plus_one and weights is None:
        raise ValueError("norm_plus_one=True needs q_norm and k_norm (the weights it adds 1 to)")
    ks, vs = _scale("k_scale", k_scale, k_cache), _scale("v_scale", v_scale, v_cache)

    out = check_out(out, q, "out", "q")
    tokens = np.stack([rows, base], -1).astype(np.int32)
    return Request(x=q, k=k, v=v, k_cache=k_cache, v_cache=v_cache, out=out, cos=cos, sin=sin, tokens=tokens,
                   head_stride=head_stride, rot_half=rot // 2, interleaved=bool(interleaved), weights=weights,
                   eps=float(eps), weight_add=1.0 if norm_plus_one else 0.0, gathered=gathered, given=tuple(given),
                   k_scale=ks, v_scale=vs)


def _qkv(q: Any, k: Any, v: Any) -> tuple[Any, Any, Any]:
    """q [B, Hq, S, D], k and v [B, Hk, S, D] with Hq a multiple of Hk, each addressable with 32 bits."""
    q = _tensor("q", q)
    k = _tensor("k", k, q)
    v = _tensor("v", v, q)
    b, hq, s, d = (int(n) for n in q.shape)
    if tuple(k.shape) != tuple(v.shape):
        raise ValueError(f"k and v must have one shape; got {list(k.shape)} and {list(v.shape)}")
    bk, hk, sk, dk = (int(n) for n in k.shape)
    if (bk, sk, dk) != (b, s, d):
        raise ValueError(f"k must be [B, Hk, S, D] with q's B, S, D = {b}, {s}, {d}; got {list(k.shape)}")
    if hk == 0 or hq % hk:
        raise ValueError(f"q's heads must be a whole multiple of k's (grouped-query attention); got Hq = {hq}, "
                         f"Hk = {hk}")
    for name, a in (("q", q), ("k", k)):
        if a.size >= 2**32:
            raise ValueError(f"{name} holds {a.size} values; the kernel addresses values with 32-bit integers "
                             "(split the call)")
    return q, k, v


def _cache_rows(k_cache: Any, pos: np.ndarray, slots: Any, hk: int, d: int) -> tuple[np.ndarray, int]:
    """(each token's cache row of head 0, or -1; rows between heads): where each token's k and v go."""
    b, s = pos.shape
    if slots is None:
        if k_cache.ndim != 4 or int(k_cache.shape[0]) != b or int(k_cache.shape[1]) != hk or int(k_cache.shape[3]) != d:
            raise ValueError(f"k_cache must be [B, Hk, S_max, D] = [{b}, {hk}, S_max, {d}] (or paged, with slots); "
                             f"got {list(k_cache.shape)}")
        s_max = int(k_cache.shape[2])
        if (pos >= s_max).any():
            raise ValueError(f"position_ids must be < S_max = {s_max} (the cache's rows per head); got "
                             f"{int(pos.max())}")
        twice = (np.diff(np.sort(pos, axis=1), axis=1) == 0).any(axis=1)  # (no per-item loop in a decode step)
        if twice.any():
            raise ValueError(f"position_ids[{int(np.argmax(twice))}] names one cache row twice in this step")
        return (np.arange(b)[:, None] * hk * s_max + pos).reshape(-1), s_max
    if k_cache.ndim != 4 or int(k_cache.shape[2]) != hk or int(k_cache.shape[3]) != d:
        raise ValueError(f"a paged k_cache must be [num_blocks, block_size, Hk, D] = [n, m, {hk}, {d}]; got "
                         f"{list(k_cache.shape)}")
    n_slots = int(k_cache.shape[0]) * int(k_cache.shape[1])
    sl = _ints("slots", slots, (b, s)).reshape(-1)
    if ((sl < -1) | (sl >= n_slots)).any():
        bad = sl[(sl < -1) | (sl >= n_slots)][0]
        raise ValueError(f"slots must lie in [-1, {n_slots}) (num_blocks * block_size); got {int(bad)}")
    used = sl[sl >= 0]
    if np.unique(used).size != used.size:
        raise ValueError("slots names one cache slot twice in this step")
    return np.where(sl >= 0, sl * hk, -1), 1


def _frequency_rows(freqs: Any, pos: np.ndarray, interleaved: bool,
                    d: int) -> tuple[Any, Any, np.ndarray, bool, list[tuple[str, Any]], int]:
    """(cos, sin, each token's row in them, whether they are the tokens' own rows gathered on the host, the
    caller's tables for ordering, the rotary width): one (cos, sin) row per token; a spec is lowered
    (cos the `Generated`, sin None, each token's word in place of its row)."""
    b, s = pos.shape
    if isinstance(freqs, (ModelRope, InvFreqs)):  # the model's frequencies for these positions (one axis)
        freqs = resolve("freqs", freqs, pos, interleaved, d)
    if is_position_spec(freqs):  # computed in the shader, each token's word from its position
        rot = freqs.dim
        if rot > d:
            raise ValueError(f"freqs: the frequency spec has dim = {rot} > D = {d}")
        p = pos.reshape(-1)
        check_positions("position_ids", p)
        gen = lower(freqs)
        return gen, None, gen.words(p), False, [], _even(rot)
    if not (isinstance(freqs, tuple) and len(freqs) == 2):
        raise TypeError(f"freqs must be a vkrope.RopeFreqs / ModelRope / InvFreqs or a (cos, sin) pair of [max_pos, "
                        f"rot/2] caches; got "
                        f"{describe(freqs)}")
    cos, sin = freqs
    for name, t in (("freqs[0] (cos)", cos), ("freqs[1] (sin)", sin)):
        if isinstance(t, DeviceArray):
            check_alive(name, t)
            if t.dtype != np.float32 or t.storage != "buffer":
                raise TypeError(f"{name} must be a float32 buffer DeviceArray (or numpy); got {t.dtype} "
                                f"{t.storage}")
        else:
            check_plain_array(name, t)
            if t.dtype.kind != "f" and t.dtype not in TENSOR_DTYPES:
                raise TypeError(f"{name} must be a real floating array; got dtype {t.dtype}")
        if t.ndim != 2:
            raise ValueError(f"{name} must be 2D [max_pos, rot/2]; got shape {list(t.shape)}")
    if tuple(cos.shape) != tuple(sin.shape):
        raise ValueError(f"freqs: cos and sin must have one shape; got {list(cos.shape)} and {list(sin.shape)}")
    max_pos, half = (int(n) for n in cos.shape)
    rot = 2 * half
    if rot == 0 or rot > d:
        raise ValueError(f"freqs: the rotary width 2 * cos.shape[1] = {rot} must be > 0 and <= D = {d}")
    if (pos >= max_pos).any():
        raise ValueError(f"position_ids must be < max_pos = {max_pos} (rows of the cos / sin caches); got "
                         f"{int(pos.max())}")
    given = [("freqs[0] (cos)", cos), ("freqs[1] (sin)", sin)]
    if isinstance(cos, DeviceArray) or isinstance(sin, DeviceArray):
        # bound where it lives, read at each position (a numpy partner goes whole)
        cos, sin = (t if isinstance(t, DeviceArray) else np.ascontiguousarray(t, dtype=np.float32)
                    for t in (cos, sin))
        return cos, sin, pos.reshape(-1), False, given, rot
    idx = pos.reshape(-1)
    return (np.ascontiguousarray(cos[idx], dtype=np.float32), np.ascontiguousarray(sin[idx], dtype=np.float32),
            np.arange(b * s), True, given, rot)


def _even(rot: int) -> int:
    """A spec's rotary width, which the kernel takes in pairs."""
    if rot % 2:
        raise ValueError(f"freqs: the rotary width must be even; got {rot}")
    return rot


def _norm_weights(q_norm: Any, k_norm: Any, d: int) -> np.ndarray | None:
    """float32 [2, D]: the RMSNorm weights of q and k, or None without the norm."""
    if (q_norm is None) != (k_norm is None):
        raise ValueError("q_norm and k_norm go together: give both weights or neither")
    if q_norm is None:
        return None
    ws = []
    for name, w in (("q_norm", q_norm), ("k_norm", k_norm)):
        check_plain_array(name, w)
        if w.dtype.kind != "f" and w.dtype not in TENSOR_DTYPES:
            raise TypeError(f"{name} must be a real floating array; got dtype {w.dtype}")
        if tuple(w.shape) != (d,):
            raise ValueError(f"{name} must have shape [D] = [{d}]; got {list(w.shape)}")
        ws.append(np.asarray(w, np.float32))
    return np.stack(ws)


def rope_and_cache(q: ArrayT, k: Any, v: Any, k_cache: DeviceArray, v_cache: DeviceArray, freqs: Any,
                   position_ids: np.ndarray, *, interleaved: bool = False, slots: np.ndarray | None = None,
                   q_norm: np.ndarray | None = None, k_norm: np.ndarray | None = None, norm_plus_one: bool = False,
                   eps: float = 1e-6, k_scale: float | None = None, v_scale: float | None = None,
                   out: ArrayT | None = None) -> Call[ArrayT]:
    """The decode step of an LLM layer in one submission: q and k rotated
    (RMS-normalised per head first when `q_norm` / `k_norm` are given), the
    rotated k and the given v written into resident KV caches at each
    token's row, the rotated q returned (numpy for numpy q, a DeviceArray
    for a DeviceArray q, or `out`).

    q `[B, Hq, S, D]`, k and v `[B, Hk, S, D]` (Hq a multiple of Hk), one
    dtype (float32, float16 or bfloat16), numpy or buffer DeviceArrays.
    k_cache / v_cache: buffer DeviceArrays of one shape and dtype (which may
    differ from q's: a float32 step into a bfloat16 cache), written in place;
    contiguous `[B, Hk, S_max, D]` (token (b, s) at position
    `position_ids[b, s]`), or with `slots` (int `[B, S]`, -1 = not written)
    paged `[num_blocks, block_size, Hk, D]` as vLLM's, slot
    `block * block_size + offset`. freqs: a frequency spec (`vkrope.RopeFreqs`,
    `InvFreqs` or a `ModelRope`: cos / sin of each position computed in the
    shader) or `(cos, sin)` caches `[max_pos, rot/2]` (numpy, or float32
    buffer DeviceArrays); channels past `rot` pass through. `interleaved`: pairs (2i, 2i+1), else rotate-half (Hugging
    Face's `apply_rotary_pos_emb`). `q_norm`, `k_norm`: RMSNorm weights `[D]`
    (Qwen3, OLMo-2: `x / rms * w`; Gemma 3 with `norm_plus_one=True`:
    `x / rms * (1 + w)`), `eps` inside the root. fp8 caches
    (`vkrope.float8_e4m3fn` / `float8_e5m2`, D a multiple of 4) store each
    rotated k (each v) divided by `k_scale` (`v_scale`; float32, per
    tensor, default 1.0 as vLLM's) and rounded once to nearest even,
    saturated to the largest finite value (448 / 57344). Positions or slots outside
    the cache, one cache row named twice, mismatched heads or dtypes: a
    ValueError / TypeError naming the argument before any GPU work, the
    caches unchanged. The caches must be arrays of the device the call runs
    on (`vkrope.rope_and_cache`: the default device)."""
    return one(cache_kernel, check(q, k, v, k_cache, v_cache, freqs, position_ids, interleaved=interleaved,
                                   slots=slots, q_norm=q_norm, k_norm=k_norm, norm_plus_one=norm_plus_one, eps=eps,
                                   k_scale=k_scale, v_scale=v_scale, out=out), "q_out")
