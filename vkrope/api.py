"""The module-level API: the operators on a default device."""

from __future__ import annotations

import atexit
import os
import threading
from typing import Any, Callable, cast

import numpy as np

from .device import Device, check_apply
from .errors import DeviceClosedError
from .freqs import AxialFreqs, InvFreqs, NdFreqs, RopeFreqs
from .models import ModelRope
from .ops import decode, executorch, nd, onnx, transformers
from .runtime.array import DeviceArray

_default: Device | None = None
_default_lock = threading.Lock()


def _fresh_lock_in_child() -> None:
    global _default_lock
    _default_lock = threading.Lock()  # a thread of the parent may have held it at the fork


os.register_at_fork(after_in_child=_fresh_lock_in_child)


def default_device() -> Device:
    """The device `vkrope.apply` uses, created on first use (and re-created
    after it was closed, for example by a device loss)."""
    global _default
    with _default_lock:
        if _default is None or _default.closed:
            _default = Device()
        return _default


def close_default_device() -> None:
    """Close the default device (it is re-created on the next `apply`)."""
    global _default
    with _default_lock:
        dev, _default = _default, None
    if dev is not None:
        dev.close()


atexit.register(close_default_device)


def apply(
    x: np.ndarray,
    freqs: np.ndarray | AxialFreqs | RopeFreqs | NdFreqs,
    *,
    out: np.ndarray | None = None,
    inverse: bool = False,
    repeat: int = 1,
    exclude_last: int = 0,
    positions: np.ndarray | None = None,
    storage: str = "auto",
) -> np.ndarray:
    """Interleaved rotary position embedding of `x` by `freqs`, on the GPU.

    x: float32, float16 or bfloat16 array `[..., N, C]` (C even), (real, imag) pairs
    interleaved on the last axis. freqs: `(cos, sin)` pairs for `Nf` rows,
    real with `Nf * C` values (`[Nf, C]`, `[1, Nf, C/2, 2]`, ...) or complex
    with `Nf * C/2` values, or a `vkrope.AxialFreqs` / `vkrope.RopeFreqs` spec
    (cos / sin computed in the shader; RopeFreqs needs `positions`), or a
    `vkrope.NdFreqs` spec with `positions` the ids `[N, n_axes]` (as
    `apply_nd`);
    broadcast over every leading axis of x. Token `n`
    uses row `n % Nf` for its first `N - exclude_last` tokens, which must
    number `repeat * Nf`; the last `exclude_last` tokens pass through.
    `positions` (int array `[N]`, -1 = pass through) picks each token's row
    instead. `inverse=True` rotates by -theta. `out` receives the result
    (may be x itself). `storage`: "auto", "buffer" or "texture3d".

    Returns a new array of x's shape and dtype (or `out`).
    """
    kw: dict[str, Any] = dict(out=out, inverse=inverse, repeat=repeat, exclude_last=exclude_last,
                              positions=positions, storage=storage)
    return cast(np.ndarray, _on_default(lambda: check_apply(x, freqs, **kw), lambda d: d.apply(x, freqs, **kw)))


def apply_nd(
    x: np.ndarray,
    spec: NdFreqs,
    ids: np.ndarray,
    *,
    token_axis: int = -2,
    inverse: bool = False,
    out: np.ndarray | None = None,
    storage: str = "auto",
) -> np.ndarray:
    """N-D axial rotary position embedding (Flux, Wan, HunyuanVideo,
    CogVideoX, Qwen-Image; SAM2's grid is the 2-axis case), cos / sin
    computed in the shader from each token's ids.

    x: float32, float16 or bfloat16 `[..., N, C]` (token_axis=-2: Flux's
    `[B, H, S, D]`) or `[..., N, H, C]` (token_axis=-3: Wan's `[B, S, H,
    D]`); the first `spec.dim` channels rotate (per axis, see
    `vkrope.NdFreqs`), the rest pass through. ids: `[N, n_axes]` positions
    per axis (integers or floats; fractional and negative allowed, |id| <
    2^30) shared by every leading item, or `[B, N, n_axes]`, one set per
    item of x's first axis (`vkrope.grid_ids` builds grids). The bytes moved
    are x, the result and the ids. `inverse=True` rotates by -angle. `out`
    receives the result (may be x itself for interleaved specs). `storage`:
    "auto", "buffer" or "texture3d".

    Returns a new array of x's shape and dtype (or `out`).
    """
    kw: dict[str, Any] = dict(token_axis=token_axis, inverse=inverse, out=out, storage=storage)
    return cast(np.ndarray, _on_default(lambda: nd.check_nd(x, spec, ids, **kw),
                                        lambda d: d.apply_nd(x, spec, ids, **kw)))


def _on_default(check: Callable[[], Any], call: Callable[[Device], Any]) -> Any:
    """`call(device)` on the default device. When none exists yet, `check()`
    the arguments first, so a bad argument is a TypeError / ValueError even
    on a machine without Vulkan (once it exists, the Device checks them).
    When the default device is closed while the call waits for it (another
    thread's close_default_device, or its timeout), the call runs once more
    on a new default device."""
    for attempt in range(2):
        dev = _default
        if dev is None or dev.closed:
            check()
            dev = default_device()
        try:
            return call(dev)
        except DeviceClosedError:
            if attempt or not dev.closed:  # (an argument's device was closed, not this one)
                raise
    raise AssertionError("unreachable")


def rotary_embedding(
    x: np.ndarray,
    cos_cache: np.ndarray | RopeFreqs | InvFreqs | ModelRope,
    sin_cache: np.ndarray | None,
    position_ids: np.ndarray | None = None,
    *,
    interleaved: int | bool = 0,
    rotary_embedding_dim: int = 0,
    num_heads: int = 0,
    out: np.ndarray | None = None,
    storage: str = "auto",
) -> np.ndarray:
    """ONNX `RotaryEmbedding` (opset 23) on the GPU.

    x: float32 / float16 / bfloat16 `[B, H, S, D]`, or `[B, S, H*D]` with `num_heads`.
    With `position_ids` (int `[B, S]`, each in `[0, max_pos)`), the caches
    are `[max_pos, rot/2]` and token (b, s) reads row `position_ids[b, s]`;
    without, they are `[B, S, rot/2]`. `rotary_embedding_dim` (`rot`, 0 =
    D) rotates the first `rot` channels of each head, the rest pass
    through; `interleaved` (0/1) pairs channels (2i, 2i+1), else rotate-half
    (i, i + rot/2). `out` receives the result (may be x itself).
    `storage`: "auto", "buffer" or "texture3d". `cos_cache` may instead
    be a frequency spec (`RopeFreqs`, `InvFreqs`, or a `ModelRope`, which
    decides its frequencies from the positions) with `sin_cache` None: cos
    and sin are then computed in the shader at `position_ids` (token s at
    position s without them).
    """
    kw: dict[str, Any] = dict(interleaved=interleaved, rotary_embedding_dim=rotary_embedding_dim,
                              num_heads=num_heads, out=out, storage=storage)
    return cast(np.ndarray, _on_default(lambda: onnx.check_onnx(x, cos_cache, sin_cache, position_ids, **kw),
                                        lambda d: d.rotary_embedding(x, cos_cache, sin_cache, position_ids, **kw)))


def apply_rotary_emb(
    xq: np.ndarray, xk: np.ndarray, freqs_cos: np.ndarray, freqs_sin: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """ExecuTorch's LLM RoPE (`et_vk.apply_rotary_emb`, llama `rope.py`):
    xq `[B, S, Hq, D]`, xk `[B, S, Hk, D]` (Hk may differ: grouped-query
    attention), freqs_cos / freqs_sin `[S, D/2]`, interleaved pairs (2i,
    2i+1); q and k in one submission. Returns `(xq_out, xk_out)`."""
    return cast(tuple, _on_default(lambda: executorch.check_llm(xq, xk, freqs_cos, freqs_sin),
                                   lambda d: d.apply_rotary_emb(xq, xk, freqs_cos, freqs_sin)))


def apply_rotary_emb_hf(
    xq: np.ndarray, xk: np.ndarray, freqs_cos: np.ndarray, freqs_sin: np.ndarray, start_pos: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """ExecuTorch's Hugging Face RoPE (`et_vk.apply_rotary_emb_hf`): xq
    `[B, S, Hq, D]`, xk `[B, S, Hk, D]`, freqs_cos / freqs_sin `[max_seq,
    rot]` full width (HF's `cat(freqs, freqs)`; `rot <= D`, channels past it
    pass through), token s reads row `start_pos + s`, rotate-half pairs (i,
    i + rot/2). Returns `(xq_out, xk_out)`."""
    return cast(tuple, _on_default(lambda: executorch.check_hf(xq, xk, freqs_cos, freqs_sin, start_pos),
                                   lambda d: d.apply_rotary_emb_hf(xq, xk, freqs_cos, freqs_sin, start_pos)))


def apply_rotary_pos_emb(
    q: Any, k: Any, spec: Any, position_ids: np.ndarray, *, out_q: Any = None, out_k: Any = None,
) -> tuple[Any, Any]:
    """transformers' `apply_rotary_pos_emb(q, k, cos, sin)` with the model's
    own RoPE: `(cos, sin)` of `position_ids` as its rotary module computes
    them (`spec.cos_sin`), computed in the shader; q and k in one submission.

    q `[B, Hq, S, D]`, k `[B, Hk, S, D]` (grouped-query heads), one dtype
    (float32, float16, bfloat16), numpy or DeviceArrays. spec: a
    `vkrope.ModelRope` (`vkrope.from_hf`, `vkrope.from_gguf`: its rope
    type, attention factor and pairs), or an `InvFreqs` / `RopeFreqs`
    (rotate-half). position_ids: int `[B, S]` (`[1, S]` serves every item);
    M-RoPE `[3, B, S]` (temporal, height, width; `[B, S]` is text, all three
    equal; llama.cpp's 1-D `[4 * S]` t | h | w | e for one item). Dynamic NTK and
    longrope decide by this call's `max(position_ids) + 1`. The first
    `rotary_dim` channels of each head rotate, the rest pass through; D
    must be the spec's head dim (DeepSeek: `qk_rope_head_dim`, the rotary
    part of its heads). DeepSeek's interleaved pairs come back interleaved
    (transformers' `apply_rotary_pos_emb_interleave` permutes them to
    `cat(even, odd)`). `out_q`, `out_k` receive the results (`out_q=q`,
    `out_k=k` in place; `out_q` on k's or out_k's memory: ValueError).
    Returns `(q_out, k_out)`."""
    kw: dict[str, Any] = dict(out_q=out_q, out_k=out_k)
    return cast(tuple, _on_default(lambda: transformers.check_pos_emb(q, k, spec, position_ids, **kw),
                                   lambda d: d.apply_rotary_pos_emb(q, k, spec, position_ids, **kw)))


def rope_and_cache(
    q: Any, k: Any, v: Any, k_cache: DeviceArray, v_cache: DeviceArray, freqs: Any, position_ids: np.ndarray, *,
    interleaved: bool = False, slots: np.ndarray | None = None, q_norm: np.ndarray | None = None,
    k_norm: np.ndarray | None = None, norm_plus_one: bool = False, eps: float = 1e-6, out: Any = None,
) -> Any:
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
    `block * block_size + offset`. freqs: a `vkrope.RopeFreqs` (cos / sin of
    each position, as `spec.table`) or `(cos, sin)` caches `[max_pos, rot/2]`
    (numpy, or float32 buffer DeviceArrays); channels past `rot` pass
    through. `interleaved`: pairs (2i, 2i+1), else rotate-half (Hugging
    Face's `apply_rotary_pos_emb`). `q_norm`, `k_norm`: RMSNorm weights `[D]`
    (Qwen3, OLMo-2: `x / rms * w`; Gemma 3 with `norm_plus_one=True`:
    `x / rms * (1 + w)`), `eps` inside the root. Positions or slots outside
    the cache, one cache row named twice, mismatched heads or dtypes: a
    ValueError / TypeError naming the argument before any GPU work, the
    caches unchanged. Runs on the default device, whose arrays the caches
    must be (`Device.rope_and_cache` on another)."""
    kw: dict[str, Any] = dict(interleaved=interleaved, slots=slots, q_norm=q_norm, k_norm=k_norm,
                              norm_plus_one=norm_plus_one, eps=eps, out=out)
    return _on_default(lambda: decode.check(q, k, v, k_cache, v_cache, freqs, position_ids, **kw),
                       lambda d: d.rope_and_cache(q, k, v, k_cache, v_cache, freqs, position_ids, **kw))
