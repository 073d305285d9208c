"""The decode step (`vkrope.rope_and_cache`): its arguments checked into the cache kernel's request
(vkrope/kernels/cache.py); see that module for the caches' layouts."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..arguments import check_alive, check_out, check_plain_array, check_x, describe
from . import check_model, per_axis_hint, resolve
from ..models import ModelRope
from ..spec_checks import MAX_HEAD_DIM, check_positions
from ..freqs import InvFreqs, is_position_spec
from ..words import brief
from ..runtime.dtypes import CACHE_DTYPES, is_fp8, is_real_float_dtype, is_real_scalar, table_values
from ..kernels.cache import Request
from .cache_args import cache, given_rows, ints, pairing, paged_slots, rows_once, value_cache
from .lowering import lower
from .call import ArrayT, Call, one
from .repeat import Structures
from . import full_width
from ..kernels import cache as cache_kernel
from ..runtime.array import DeviceArray


def _tensor(name: str, a: Any, like: Any = None) -> Any:
    """q, k or v: [B, H, S, D], a numpy array or buffer DeviceArray of x's dtypes."""
    a = check_x(a, name, "the decode step moves heads as pairs of values, whichever pairs it rotates")
    if a.ndim != 4:
        raise ValueError(f"{name} must be 4D [B, H, S, D]; got shape {tuple(a.shape)}")
    if not isinstance(a, np.ndarray) and a.storage != "buffer":
        raise ValueError(f"{name} must be a buffer DeviceArray (the decode step reads buffers); got storage "
                         f"{a.storage!r}")
    if like is not None and np.dtype(a.dtype) != np.dtype(like.dtype):
        raise TypeError(f"{name} must have the dtype of q ({like.dtype}); got {a.dtype}")
    return a


# The scales of an fp8 cache, taken as float32: within these no partial
# product of the exact rounding (glsl/fp8.glsl) leaves float32's range.
MIN_SCALE, MAX_SCALE = 2.0**-40, 2.0**40


def _real(value: Any) -> float:
    """A real scalar as a float (inf for an int past float64's range, whose float() overflows)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf


def _scale(name: str, value: Any, cache: Any) -> float:
    """An fp8 cache's per-tensor scale as the float32 the kernel divides by (1.0 when None); other caches take
    none."""
    if value is None:
        return 1.0
    if not is_fp8(cache.dtype):
        raise ValueError(f"{name} scales an fp8 cache; this cache is {cache.dtype} (pass {name}=None)")
    if isinstance(value, np.ndarray) and value.ndim == 0 and (value.dtype.kind in "fiu" or
                                                              value.dtype in CACHE_DTYPES):
        value = value[()]  # (vLLM keeps its scales as 0-d tensors)
    if isinstance(value, (bool, np.bool_)) or not is_real_scalar(value):
        raise TypeError(f"{name} must be a number (one scale for the whole cache); got {describe(value)}")
    f = _real(value)
    with np.errstate(over="ignore"):  # (the bounds hold for the float32 the kernel divides by, rounded first)
        f = float(np.float32(f)) if math.isfinite(f) else f
    if not (math.isfinite(f) and MIN_SCALE <= f <= MAX_SCALE):
        raise ValueError(f"{name} must be a finite float32 in [2^{int(math.log2(MIN_SCALE))}, "
                         f"2^{int(math.log2(MAX_SCALE))}] (what the cache's values are divided by); got "
                         f"{brief(value)}")
    return f


def check(q: Any, k: Any, v: Any, k_cache: Any, v_cache: Any, freqs: Any, position_ids: Any, *,
          interleaved: Any = False, slots: Any = None, cache_position: Any = None, q_norm: Any = None,
          k_norm: Any = None, norm_plus_one: Any = False, eps: Any = 1e-6, k_scale: Any = None, v_scale: Any = None,
          out: Any = None) -> Request:
    """The arguments of `vkrope.rope_and_cache`, checked before any GPU work:
    TypeError / ValueError naming the argument. The call's structure is
    checked once for arguments that repeat (ops/repeat.py), then its
    positions, slots and cache rows (so with several bad arguments, the
    error names one of the structure's first)."""
    if slots is not None and cache_position is not None:
        raise ValueError("slots (a paged cache's) and cache_position (a contiguous cache's rows) go to two layouts "
                         "of cache: pass one of them")
    st = _structures(q, k, v, k_cache, v_cache, freqs, interleaved, slots is None, cache_position is not None,
                     q_norm, k_norm, norm_plus_one, eps, k_scale, v_scale, out)
    per_axis = per_axis_hint(freqs, position_ids, (st.b, st.s), "the decode step")
    if per_axis:  # (an M-RoPE model's ids, as transformers gives them: say what the step takes instead)
        raise ValueError(f"position_ids must have shape [B, S] = {[st.b, st.s]}; got {list(position_ids.shape)}"
                         f"{per_axis}")
    pos = ints("position_ids", position_ids, (st.b, st.s))
    # (the bounds once, as Python ints: each comparison over a decode step's few positions costs a microsecond)
    lo, hi = (int(pos.min()), int(pos.max())) if pos.size else (0, -1)
    if lo < 0:
        raise ValueError(f"position_ids must be >= 0; got {lo}")
    base = _cache_rows(st, pos, hi, slots if st.paged else cache_position)
    cos, sin, rows, rot = _frequency_rows(st, freqs, pos, hi)
    tokens = np.empty((pos.size, 2), np.int32)
    tokens[:, 0], tokens[:, 1] = rows, base
    return Request(x=q, k=k, v=v, k_cache=k_cache, v_cache=v_cache, out=out, cos=cos, sin=sin, tokens=tokens,
                   head_stride=st.head_stride, rot_half=rot // 2, interleaved=st.interleaved, weights=st.weights,
                   eps=st.eps, weight_add=st.weight_add, gathered=st.gathered, given=st.given(freqs),
                   k_scale=st.k_scale, v_scale=st.v_scale)


@dataclass(frozen=True)
class _Structure:
    """What `rope_and_cache`'s arguments but the positions and slots decide (no argument in it: see
    ops/repeat.py)."""

    b: int
    s: int
    hk: int
    d: int
    interleaved: bool
    paged: bool
    rows_per_head: int  # contiguous: S_max; paged: num_blocks * block_size (the slots)
    head_stride: int
    freqs: str  # "resolve" (a ModelRope / InvFreqs: per call), "spec" (lowered), "tables" (cos / sin)
    generated: Any  # "spec": the lowered spec
    max_pos: int  # "tables": rows of cos / sin
    rot: int  # the rotary width ("resolve": 0, decided per call)
    gathered: bool  # "tables": numpy cos / sin, each token's row gathered on the host
    weights: np.ndarray | None
    eps: float
    weight_add: float
    k_scale: float
    v_scale: float

    def given(self, freqs: Any) -> tuple[tuple[str, Any], ...]:
        """The caller's tables, for job ordering."""
        return (("freqs[0] (cos)", freqs[0]), ("freqs[1] (sin)", freqs[1])) if self.freqs == "tables" else ()


def _structure(q: Any, k: Any, v: Any, k_cache: Any, v_cache: Any, freqs: Any, interleaved: Any, contiguous: bool,
               rows_given: bool, q_norm: Any, k_norm: Any, norm_plus_one: Any, eps: Any, k_scale: Any, v_scale: Any,
               out: Any) -> _Structure:
    """Every check of `rope_and_cache` but the positions', slots' and cache rows' own (`rows_given`: a
    contiguous cache's rows given apart from the positions)."""
    q, k, v = _qkv(q, k, v)
    b, hq, s, d = (int(n) for n in q.shape)
    hk = int(k.shape[1])
    k_cache = cache("k_cache", k_cache)
    v_cache = value_cache(k_cache, v_cache)
    interleaved = pairing(interleaved)
    rows_per_head, head_stride = _cache_shape(k_cache, contiguous, b, hk, d)
    kind, generated, max_pos, rot, gathered = _frequency_kind(freqs, interleaved, d)
    if contiguous and not rows_given and isinstance(freqs, ModelRope) and freqs.mrope_section is not None:
        # (a contiguous cache's rows are the positions unless given; an M-RoPE model's, cache_position +
        # rope_deltas, are not its cache rows: an image's tokens share positions, so later keys would overwrite
        # earlier ones)
        raise ValueError("freqs: an M-RoPE model's positions (cache_position + rope_deltas) are not its cache rows, "
                         "which a contiguous k_cache takes them as: pass cache_position (the cache rows), or slots "
                         "with a paged cache")
    weights = _norm_weights(q_norm, k_norm, d)
    if isinstance(eps, (bool, np.bool_)) or not is_real_scalar(eps):
        raise TypeError(f"eps must be a number; got {describe(eps)}")
    if not (0 < _real(eps) < 1) or np.float32(eps) == 0:  # (NaN, inf and ints past float64 fail too)
        raise ValueError(f"eps must be a positive float32 below 1; got {brief(eps)}")
    if not isinstance(norm_plus_one, (bool, np.bool_)):
        raise TypeError(f"norm_plus_one must be a bool; got {describe(norm_plus_one)}")
    if norm_plus_one and weights is None:
        raise ValueError("norm_plus_one=True needs q_norm and k_norm (the weights it adds 1 to)")
    ks, vs = _scale("k_scale", k_scale, k_cache), _scale("v_scale", v_scale, v_cache)
    check_out(out, q, "out", "q")
    for name, c in (("k_cache", k_cache), ("v_cache", v_cache)):
        if out is c:  # (named as the caller passed it: the kernel's own name for out is q_out)
            raise ValueError(f"out and {name} are the same memory, and both are written: pass separate arrays")
    return _Structure(b=b, s=s, hk=hk, d=d, interleaved=bool(interleaved), paged=not contiguous,
                      rows_per_head=rows_per_head, head_stride=head_stride, freqs=kind, generated=generated,
                      max_pos=max_pos, rot=rot, gathered=gathered, weights=weights, eps=float(eps),
                      weight_add=1.0 if norm_plus_one else 0.0, k_scale=ks, v_scale=vs)


_structures = Structures(_structure)


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


def _cache_shape(k_cache: Any, contiguous: bool, b: int, hk: int, d: int) -> tuple[int, int]:
    """(rows per head (contiguous: S_max) or slots (paged), cache rows between heads) of a cache of the call's
    B, Hk and D."""
    if contiguous:
        if k_cache.ndim != 4 or int(k_cache.shape[0]) != b or int(k_cache.shape[1]) != hk or int(k_cache.shape[3]) != d:
            raise ValueError(f"k_cache must be [B, Hk, S_max, D] = [{b}, {hk}, S_max, {d}] (or paged, with slots); "
                             f"got {list(k_cache.shape)}")
        s_max = int(k_cache.shape[2])
        return s_max, s_max
    if k_cache.ndim != 4 or int(k_cache.shape[2]) != hk or int(k_cache.shape[3]) != d:
        raise ValueError(f"a paged k_cache must be [num_blocks, block_size, Hk, D] = [n, m, {hk}, {d}]; got "
                         f"{list(k_cache.shape)}")
    return int(k_cache.shape[0]) * int(k_cache.shape[1]), 1


def _cache_rows(st: _Structure, pos: np.ndarray, hi: int, rows: Any) -> np.ndarray:
    """Each token's cache row of head 0, or -1: where its k and v go (`hi`: the largest position; `rows`: a
    paged cache's slots, or a contiguous cache's cache_position, else None: the positions)."""
    b, s = pos.shape
    if not st.paged and rows is not None:
        s_max = st.rows_per_head
        if isinstance(rows, np.ndarray) and rows.ndim == 1 and rows.shape[0] == s:
            raise ValueError(f"cache_position must have shape [B, S] = {[b, s]}; got [{s}]: transformers' [S] "
                             f"cache_position is np.broadcast_to(cache_position, ({b}, {s})) here")
        at = given_rows("cache_position", rows, (b, s), s_max, " in this step")
        return np.where(at >= 0, np.arange(b)[:, None] * st.hk * s_max + at, -1).reshape(-1)
    if not st.paged:
        s_max = st.rows_per_head
        if hi >= s_max:
            raise ValueError(f"position_ids must be < S_max = {s_max} (the cache's rows per head); got {hi}")
        if s > 1:  # (one token per sequence names no row twice; else no per-item loop in a decode step)
            rows_once("position_ids", pos, " in this step")
        return (np.arange(b)[:, None] * st.hk * s_max + pos).reshape(-1)
    sl = paged_slots(rows, (b, s), st.rows_per_head, " in this step")
    return np.where(sl >= 0, sl * st.hk, -1)


def _frequency_kind(freqs: Any, interleaved: bool, d: int) -> tuple[str, Any, int, int, bool]:
    """(kind, the lowered spec, cos / sin rows, rotary width, gathered on the host) of a call's freqs: "resolve"
    (a ModelRope: the model's frequencies for each call's positions, one axis), "spec" (an InvFreqs or RopeFreqs,
    computed in the shader: each token's word from its position) or "tables" ((cos, sin) rows, gathered on the
    host when both are numpy)."""
    if isinstance(freqs, ModelRope):
        check_model("freqs", freqs, interleaved, d)  # (its frequencies follow the positions: resolved per call)
        return "resolve", None, 0, 0, False
    if isinstance(freqs, InvFreqs):
        freqs = resolve("freqs", freqs, None, None, d)  # (an InvFreqs depends on no position: M-RoPE refused)
    if is_position_spec(freqs):
        gen, rot = _lowered(freqs, d)
        return "spec", gen, 0, rot, False
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
            if not is_real_float_dtype(t.dtype):
                raise TypeError(f"{name} must be a real floating array; got dtype {t.dtype}")
        if t.ndim != 2:
            raise ValueError(f"{name} must be 2D [max_pos, rot/2]; got shape {list(t.shape)}" + (
                " (a [batch, S, rot] table, as ModelRope.cos_sin and transformers' rotary modules give: pass the "
                "ModelRope itself as freqs, or a table of every position, one value per pair: of "
                "cos_sin(np.arange(max_pos)[None]) take [0, :, :rot // 2] (its cat(freqs, freqs) layout, every "
                "model's but those whose cos_layout is 'repeated', Cohere's: [0, :, ::2]))" if t.ndim == 3 else ""))
    if tuple(cos.shape) != tuple(sin.shape):
        raise ValueError(f"freqs: cos and sin must have one shape; got {list(cos.shape)} and {list(sin.shape)}")
    max_pos, half = (int(n) for n in cos.shape)
    rot = 2 * half
    repeated = full_width.form_of(cos, sin)  # (before the width check: the cut it names is the layout's)
    if repeated:
        read = " and ".join(n for n, t in (("cos", cos), ("sin", sin)) if not isinstance(t, DeviceArray))
        raise ValueError(f"freqs: {read} [{max_pos}, {half}] hold{'s' if ' ' not in read else ''} each value twice, "
                         f"as transformers' full-width tables do ({repeated}): read as [max_pos, rot/2] their {half} "
                         f"columns would be {half} pairs, twice the {half // 2} they hold; pass "
                         f"{full_width.cut(repeated, str(half // 2), 'cos', full_width.DECODE_PAIRING)}, sin likewise")
    if rot == 0 or rot > d:
        raise ValueError(f"freqs: the rotary width 2 * cos.shape[1] = {rot} must be > 0 and <= D = {d}" + (
            f" (a full-width table holds each value twice: pass "
            f"{full_width.cut('', str(half // 2), 'cos', full_width.DECODE_PAIRING)})"
            if rot > d >= half else ""))
    return "tables", None, max_pos, rot, not (isinstance(cos, DeviceArray) or isinstance(sin, DeviceArray))


def _lowered(spec: Any, d: int) -> tuple[Any, int]:
    """(the lowered spec, its rotary width) of a one-axis spec (`resolve` gives one) rotating at most D channels."""
    rot = spec.dim
    if rot > d:
        raise ValueError(f"freqs: the frequency spec has dim = {rot} > D = {d}")
    return lower(spec), _even(rot)


def _frequency_rows(st: _Structure, freqs: Any, pos: np.ndarray, hi: int) -> tuple[Any, Any, np.ndarray, int]:
    """(cos, sin, each token's row in them, the rotary width) of this call's positions (`hi`: the largest): one
    (cos, sin) row per token; a spec is lowered (cos the `Generated`, sin None, each token's word in place of its
    row)."""
    b, s = pos.shape
    p = pos.reshape(-1)
    if st.freqs == "resolve":  # the model's frequencies for these positions (one axis)
        gen, rot = _lowered(resolve("freqs", freqs, pos, st.interleaved, st.d), st.d)
    elif st.freqs == "spec":
        gen, rot = st.generated, st.rot
    else:
        if hi >= st.max_pos:
            raise ValueError(f"position_ids must be < max_pos = {st.max_pos} (rows of the cos / sin caches); got "
                             f"{hi}")
        cos, sin = freqs
        if not st.gathered:
            # bound where it lives, read at each position (a numpy partner goes whole)
            cos, sin = (t if isinstance(t, DeviceArray) else table_values(t, np.float32, name)
                        for t, name in ((cos, "freqs[0] (cos)"), (sin, "freqs[1] (sin)")))
            return cos, sin, p, st.rot
        return (table_values(cos[p], np.float32, "freqs[0] (cos)"), table_values(sin[p], np.float32, "freqs[1] (sin)"),
                np.arange(b * s), st.rot)
    check_positions("position_ids", p)
    return gen, None, gen.words(p), rot


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
    if d > MAX_HEAD_DIM:  # (each invocation sums its row's squares in one loop, twice where they overflow:
        # lavapipe stops a shader's loops silently past 65535 iterations in all, and 2^17 channels took 2^16)
        raise ValueError(f"q_norm, k_norm: the fused RMSNorm takes heads of at most {MAX_HEAD_DIM} channels; got "
                         f"D = {d}: normalise q and k before the call")
    ws = []
    for name, w in (("q_norm", q_norm), ("k_norm", k_norm)):
        check_plain_array(name, w)
        if not is_real_float_dtype(w.dtype):
            raise TypeError(f"{name} must be a real floating array; got dtype {w.dtype}")
        if tuple(w.shape) != (d,):
            raise ValueError(f"{name} must have shape [D] = [{d}]; got {list(w.shape)}")
        ws.append(table_values(w, np.float32, name))
    return np.stack(ws)


def rope_and_cache(q: ArrayT, k: Any, v: Any, k_cache: DeviceArray, v_cache: DeviceArray, freqs: Any,
                   position_ids: np.ndarray, *, interleaved: bool = False, slots: np.ndarray | None = None,
                   cache_position: np.ndarray | None = None, q_norm: np.ndarray | None = None,
                   k_norm: np.ndarray | None = None, norm_plus_one: bool = False,
                   eps: float = 1e-6, k_scale: float | None = None, v_scale: float | None = None,
                   out: ArrayT | None = None) -> Call[ArrayT]:
    """The decode step of an LLM layer in one submission: q and k rotated
    (RMS-normalised per head first when `q_norm` / `k_norm` are given), the
    rotated k and the given v written into resident KV caches at each
    token's row, the rotated q returned (numpy for numpy q, a DeviceArray
    for a DeviceArray q, or `out`).

    q `[B, Hq, S, D]`, k and v `[B, Hk, S, D]` (Hq a multiple of Hk, D even), one
    dtype (float32, float16 or bfloat16), numpy or buffer DeviceArrays.
    k_cache / v_cache: buffer DeviceArrays of one shape and dtype (which may
    differ from q's: a float32 step into a bfloat16 cache), written in place;
    contiguous `[B, Hk, S_max, D]` (token (b, s) at row `position_ids[b, s]`,
    or at `cache_position[b, s]` (int `[B, S]`, -1 = not written) where the
    rows are not the positions: a left-padded batch's, an M-RoPE model's;
    transformers' `[S]` cache_position is `np.broadcast_to(c, (B, S))`), or
    with `slots` (int `[B, S]`, -1 = not written) paged `[num_blocks,
    block_size, Hk, D]` as vLLM's, slot `block * block_size + offset`. freqs: a frequency spec (`vkrope.RopeFreqs`,
    `InvFreqs` or a `ModelRope`: cos / sin of each position computed in the
    shader) or `(cos, sin)` caches `[max_pos, rot/2]` (numpy, or float32
    buffer DeviceArrays; one value per pair: of Hugging Face's full-width
    `cat(f, f)` caches pass `cos[:, :rot//2]` (rotate-half), of `repeat_interleave`
    ones `cos[:, ::2]` with `interleaved=True`; numpy tables holding each value twice are refused);
    channels past `rot` pass through. `interleaved`: pairs (2i, 2i+1), else
    rotate-half (Hugging Face's `apply_rotary_pos_emb`). `q_norm`, `k_norm`: RMSNorm weights `[D]`
    (Qwen3: `x / rms * w`; Gemma 3 with `norm_plus_one=True`:
    `x / rms * (1 + w)`), `eps` inside the root, over each head (not OLMo-2's
    norm over all heads' channels at once, before the heads are split). fp8 caches
    (`vkrope.float8_e4m3fn` / `float8_e5m2`, D a multiple of 4) store each
    rotated k (each v) divided by `k_scale` (`v_scale`; float32, per
    tensor, default 1.0 as vLLM's) and rounded once to nearest even,
    saturated to the largest finite value (448 / 57344). Positions or slots outside
    the cache, one cache row named twice, mismatched heads or dtypes: a
    ValueError / TypeError naming the argument before any GPU work, the
    caches unchanged. The caches must be arrays of the device the call runs
    on (`vkrope.rope_and_cache`: the default device)."""
    return one(cache_kernel, check(q, k, v, k_cache, v_cache, freqs, position_ids, interleaved=interleaved,
                                   slots=slots, cache_position=cache_position, q_norm=q_norm, k_norm=k_norm,
                                   norm_plus_one=norm_plus_one, eps=eps, k_scale=k_scale, v_scale=v_scale,
                                   out=out), "q_out")
