"""float64 numpy oracles for vkrope's next operators (the family table at the
end of shared/design/contract.md).

Each oracle is written from the anchor's source text, not from vkrope (nothing
here imports it), checks its own arguments, computes in float64 and returns
float64 arrays. docs/FAMILY.md holds the contract tables, the mappings between
the three operators and the files that were read.

* :func:`onnx_rotary_embedding` -- ONNX opset-23 ``RotaryEmbedding``.
* :func:`et_apply_rotary_emb` -- ExecuTorch ``et_vk.apply_rotary_emb`` (llama
  ``rope.py`` ``apply_rotary_emb``): interleaved pairs, q and k together.
* :func:`hf_apply_rotary_emb` -- the Hugging Face rotate-half function that
  ExecuTorch's ``rope.py`` ``hf_apply_rotary_emb`` copies (broadcasting
  ``unsqueeze_dim`` form, partial rotary by ``cos.shape[-1]``).
* :func:`et_apply_rotary_emb_hf` -- ExecuTorch ``et_vk.apply_rotary_emb_hf``
  (q and k ``[B, S, H, D]``, a ``[max_seq, rot]`` table, ``start_pos``).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "onnx_rotary_embedding",
    "et_apply_rotary_emb",
    "hf_apply_rotary_emb",
    "et_apply_rotary_emb_hf",
    "rotate_half",
]


def _f64(name: str, a) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype.kind not in "fiu" and a.dtype.name != "bfloat16":
        raise TypeError(f"{name}: expected a real floating array, got dtype {a.dtype}")
    return a.astype(np.float64)


def _int_index(name: str, a) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{name}: expected an integer array, got dtype {a.dtype}")
    return a.astype(np.int64)


# --------------------------------------------------------------------------
# ONNX RotaryEmbedding (opset 23)
# --------------------------------------------------------------------------


def _onnx_heads(x: np.ndarray, num_heads) -> np.ndarray:
    """X as [B, S, H, D]: 4-D transposed, 3-D split by num_heads."""
    if x.ndim == 4:
        return x.transpose(0, 2, 1, 3)
    if x.ndim == 3:
        b, s, hidden = x.shape
        if not isinstance(num_heads, (int, np.integer)) or num_heads <= 0:
            raise ValueError("3D X needs num_heads > 0")
        if hidden % num_heads:
            raise ValueError(f"hidden size {hidden} is not a multiple of num_heads {num_heads}")
        return x.reshape(b, s, num_heads, hidden // num_heads)
    raise ValueError(f"X must be 3D or 4D, got shape {x.shape}")


def _onnx_rows(cos, sin, position_ids, b: int, s: int, half: int, wrap: bool) -> tuple[np.ndarray, np.ndarray]:
    """Each token's cache rows, [B, S, half]: by position id, or the caches as they are."""
    if cos.shape != sin.shape:
        raise ValueError(f"cos_cache {cos.shape} and sin_cache {sin.shape} differ")
    if position_ids is None:
        if cos.shape != (b, s, half):
            raise ValueError(f"without position_ids the caches must be [B, S, rot/2] = {(b, s, half)}, got {cos.shape}")
        return cos, sin
    pos = _int_index("position_ids", position_ids)
    if pos.shape != (b, s):
        raise ValueError(f"position_ids must be [B, S] = {(b, s)}, got {pos.shape}")
    if cos.ndim != 2 or cos.shape[1] != half:
        raise ValueError(f"with position_ids the caches must be [max_pos, {half}], got {cos.shape}")
    max_pos = cos.shape[0]
    lo = -max_pos if wrap else 0
    if pos.size and (pos.min() < lo or pos.max() >= max_pos):
        raise IndexError(f"position_ids outside [{lo}, {max_pos}): min {pos.min()}, max {pos.max()}")
    pos = np.where(pos < 0, pos + max_pos, pos)
    return cos[pos], sin[pos]


def onnx_rotary_embedding(
    X,
    cos_cache,
    sin_cache,
    position_ids=None,
    *,
    interleaved: int = 0,
    rotary_embedding_dim: int = 0,
    num_heads: int = 0,
    wrap_negative_positions: bool = False,
) -> np.ndarray:
    """ONNX ``RotaryEmbedding``-23 (ai.onnx domain) in float64.

    Reproduces the operator as the schema text and
    ``onnx/reference/ops/op_rotary_embedding.py`` (onnx 1.23.x; the schema
    doc embeds the same function) define it:

    * ``X`` 4D is ``[B, H, S, D]``: it is transposed to ``[B, S, H, D]`` for
      the computation and the result transposed back (the ``num_heads``
      attribute is ignored for 4D input, as in the reference).
    * ``X`` 3D is ``[B, S, hidden]``: ``num_heads`` must be given (> 0) and
      ``hidden`` divisible by it; ``head_size = hidden / num_heads`` and the
      last axis is read as ``[H, head_size]`` (reshape, no transpose).
    * ``rotary_embedding_dim`` (``rot``) 0 means the whole head. Only the
      first ``rot`` channels of every head are rotated; channels
      ``[rot, head_size)`` pass through unchanged. ``rot`` must be even and
      ``<= head_size`` (a head of odd size works when ``rot`` is even and
      smaller, as in the reference; the schema text asks for an even
      head_size for 4D input).
    * With ``position_ids`` (int, ``[B, S]``): ``cos_cache`` / ``sin_cache``
      are ``[max_pos, rot/2]`` and token ``(b, s)`` uses row
      ``position_ids[b, s]``. Without: the caches are ``[B, S, rot/2]`` and
      token ``(b, s)`` uses ``cache[b, s]``. Every head of a token uses the
      same row.
    * ``interleaved=1``: pairs are channels ``(2i, 2i+1)``, ``i < rot/2``;
      ``interleaved=0`` (default): rotate-half pairs ``(i, i + rot/2)``.
      For pair ``(a, b)`` with ``(c, s)`` = cache value ``i``::

          out[a] = x[a] * c - x[b] * s
          out[b] = x[a] * s + x[b] * c

    Stricter than the reference, looser never:

    * the caches must have exactly the shapes above (the reference checks
      only their last axis and then relies on numpy broadcasting);
    * a position outside ``[0, max_pos)`` raises ``IndexError``. onnxruntime
      (CPU, 1.32) rejects both sides of the range the same way; the
      reference raises for ``>= max_pos`` but lets numpy wrap a negative
      index to ``max_pos + p``. ``wrap_negative_positions=True`` reproduces
      that wrap (positions in ``[-max_pos, 0)``).
    """
    x = _f64("X", X)
    cos, sin = _f64("cos_cache", cos_cache), _f64("sin_cache", sin_cache)
    if interleaved not in (0, 1, False, True):
        raise ValueError(f"interleaved must be 0 or 1, got {interleaved!r}")

    xs = _onnx_heads(x, num_heads)  # [B, S, H, D]
    b, s, _h, head = xs.shape

    rot = int(rotary_embedding_dim) if rotary_embedding_dim else head
    if rot < 0 or rot > head:
        raise ValueError(f"rotary_embedding_dim {rot} outside [0, head_size={head}]")
    if rot % 2:
        raise ValueError(f"rotary_embedding_dim {rot} must be even")
    half = rot // 2

    c_tok, s_tok = _onnx_rows(cos, sin, position_ids, b, s, half, wrap_negative_positions)  # [B, S, half]

    i = np.arange(half)
    first, second = (2 * i, 2 * i + 1) if interleaved else (i, i + half)
    c = c_tok[:, :, None, :]  # same row for every head
    sn = s_tok[:, :, None, :]
    xa, xb = xs[..., first], xs[..., second]
    out = xs.copy()
    out[..., first] = xa * c - xb * sn
    out[..., second] = xa * sn + xb * c

    if x.ndim == 4:
        return np.ascontiguousarray(out.transpose(0, 2, 1, 3))
    return out.reshape(x.shape)


# --------------------------------------------------------------------------
# ExecuTorch llama RoPE: et_vk.apply_rotary_emb
# --------------------------------------------------------------------------


def _llm_args(xq, xk, freqs_cos, freqs_sin) -> tuple[np.ndarray, ...]:
    """The ExecuTorch ops' q, k and tables as float64, q and k checked to be
    4D [B, S, H, D] sharing B, S and D (H may differ)."""
    q = _f64("xq", xq)
    k = _f64("xk", xk)
    fc = _f64("freqs_cos", freqs_cos)
    fs = _f64("freqs_sin", freqs_sin)
    if q.ndim != 4 or k.ndim != 4:
        raise ValueError(f"xq and xk must be 4D [B, S, H, D], got {q.shape} and {k.shape}")
    b, s, _h, d = q.shape
    if k.shape[0] != b or k.shape[1] != s or k.shape[3] != d:
        raise ValueError(f"xk {k.shape} must share B, S and D with xq {q.shape}")
    return q, k, fc, fs


def et_apply_rotary_emb(xq, xk, freqs_cos, freqs_sin) -> tuple[np.ndarray, np.ndarray]:
    """ExecuTorch ``apply_rotary_emb(xq, xk, freqs_cos, freqs_sin)`` in float64.

    Source: ``extension/llm/modeling/text_decoder/rope.py`` (formerly
    ``examples/models/llama/rope.py``), the same math as
    ``backends/vulkan/patterns/rope.py`` ``RotaryEmbeddingPattern`` which the
    Vulkan op ``et_vk.apply_rotary_emb`` replaces.

    * ``xq`` ``[B, S, Hq, D]``, ``xk`` ``[B, S, Hk, D]``; same ``B``, ``S``
      and even ``D`` (``Hk`` may differ: grouped-query attention).
    * ``freqs_cos`` / ``freqs_sin`` ``[S, D/2]`` (``reshape_for_broadcast``
      asserts exactly ``(S, D/2)`` and views it ``[1, S, 1, D/2]``); the 3D
      form ``[S, Hq, D/2]`` (per-head frequencies, viewed
      ``[1, S, Hq, D/2]``) is accepted when ``Hk == Hq`` (it is checked
      against ``xq`` only, so any other ``Hk`` fails to broadcast in torch).
    * Pairs ``(2i, 2i+1)``; with ``(c, s) = freqs[s_idx, i]``::

          out[2i]   = x[2i] * c - x[2i+1] * s
          out[2i+1] = x[2i] * s + x[2i+1] * c

    Row ``s_idx`` is the token's index along ``S``: there is no position
    argument; a decode step passes the already-sliced rows.
    Returns ``(xq_out, xk_out)``.
    """
    q, k, fc, fs = _llm_args(xq, xk, freqs_cos, freqs_sin)
    _b, s, hq, d = q.shape
    if d % 2:
        raise ValueError(f"head_dim {d} must be even")
    if fc.shape != fs.shape:
        raise ValueError(f"freqs_cos {fc.shape} and freqs_sin {fs.shape} differ")
    if fc.shape == (s, d // 2):
        view = (1, s, 1, d // 2)
    elif fc.shape == (s, hq, d // 2) and k.shape[2] == hq:
        view = (1, s, hq, d // 2)
    else:
        raise ValueError(f"freqs must be [S, D/2] = {(s, d // 2)} (or [S, Hq, D/2] with Hk == Hq), got {fc.shape}")
    c, sn = fc.reshape(view), fs.reshape(view)

    def rotate(x: np.ndarray) -> np.ndarray:
        re, im = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = re * c - im * sn
        out[..., 1::2] = re * sn + im * c
        return out

    return rotate(q), rotate(k)


# --------------------------------------------------------------------------
# Hugging Face rotate-half RoPE
# --------------------------------------------------------------------------


def rotate_half(x) -> np.ndarray:
    """HF ``rotate_half``: ``cat(-x[..., D/2:], x[..., :D/2])`` on the last axis."""
    x = np.asarray(x)
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def hf_apply_rotary_emb(q, k, cos, sin, position_ids=None, unsqueeze_dim: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """ExecuTorch ``rope.py`` ``hf_apply_rotary_emb`` in float64.

    The Hugging Face ``apply_rotary_pos_emb`` contract with partial rotary
    (``extension/llm/modeling/text_decoder/rope.py``):

    * ``cos`` / ``sin`` are unsqueezed at ``unsqueeze_dim`` and broadcast
      against ``q`` and ``k`` (numpy broadcasting, as torch's). HF passes
      ``cos`` ``[B, S, rot]`` with q ``[B, H, S, D]`` (``unsqueeze_dim=1``);
      ExecuTorch's llama ``Rope`` passes ``[S, rot]`` with q ``[B, S, H, D]``
      (again ``unsqueeze_dim=1``: ``[S, 1, rot]``).
    * ``rot = cos.shape[-1]``: the **full** rotary width. HF tables hold each
      frequency twice (``emb = cat(freqs, freqs)``), but this function uses
      ``cos[..., j]`` for every ``j < rot`` as given; nothing is assumed.
    * ``x[..., :rot]`` becomes ``x_rot * cos + rotate_half(x_rot) * sin``,
      i.e. for ``i < rot/2`` (``h = rot/2``)::

          out[i]     = x[i]     * cos[i]     - x[i + h] * sin[i]
          out[i + h] = x[i + h] * cos[i + h] + x[i]     * sin[i + h]

      and ``x[..., rot:]`` passes through.
    * ``position_ids`` is accepted and ignored ("deprecated and unused").

    ``rot`` must be even (``rotate_half`` of an odd width is not a rotation)
    and ``<= D``.
    """
    del position_ids
    qf = _f64("q", q)
    kf = _f64("k", k)
    c = np.expand_dims(_f64("cos", cos), unsqueeze_dim)
    sn = np.expand_dims(_f64("sin", sin), unsqueeze_dim)
    if c.shape != sn.shape:
        raise ValueError(f"cos {c.shape} and sin {sn.shape} differ")
    rot = c.shape[-1]
    if rot % 2:
        raise ValueError(f"rotary width cos.shape[-1] = {rot} must be even")

    def embed(x: np.ndarray, name: str) -> np.ndarray:
        if rot > x.shape[-1]:
            raise ValueError(f"rotary width {rot} exceeds {name} head size {x.shape[-1]}")
        xr = x[..., :rot]
        try:
            rotated = xr * c + rotate_half(xr) * sn
        except ValueError as exc:
            raise ValueError(f"cos {c.shape} does not broadcast against {name}[..., :rot] {xr.shape}") from exc
        if rotated.shape != xr.shape:
            raise ValueError(f"cos {c.shape} would broadcast {name} {x.shape} to a larger shape {rotated.shape}")
        return np.concatenate([rotated, x[..., rot:]], axis=-1)

    return embed(qf, "q"), embed(kf, "k")


def et_apply_rotary_emb_hf(
    xq, xk, freqs_cos, freqs_sin, start_pos: int = 0, *, shader_table: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """ExecuTorch ``et_vk.apply_rotary_emb_hf(xq, xk, freqs_cos, freqs_sin, start_pos)``.

    Python definition (``backends/vulkan/custom_ops_lib.py``
    ``apply_rotary_emb_hf_impl``): slice ``freqs[start_pos : start_pos + S]``
    and run ``HfRotaryEmbeddingPattern`` (``backends/vulkan/patterns/rope_hf.py``),
    which is :func:`hf_apply_rotary_emb` with ``cos [S, rot]`` unsqueezed at 1.

    * ``xq`` ``[B, S, Hq, D]``, ``xk`` ``[B, S, Hk, D]`` (same B, S, D).
    * ``freqs_cos`` / ``freqs_sin`` ``[max_seq, rot]`` with the full rotary
      width ``rot <= D``; token ``s`` reads row ``start_pos + s``; channels
      ``[rot, D)`` pass through.
    * Rows past the table (``start_pos + S > max_seq``) are an error here. In
      torch the slice would come back short and fail to broadcast (or, with
      one row left, silently broadcast it); the Vulkan node checks only
      ``max_seq >= S``, so the shader would read past the table.

    ``shader_table=True`` reproduces the Vulkan shader
    (``rotary_embedding_hf.glsl``), which reads only columns ``[0, rot/2)``
    of each row and uses ``cos[i]`` / ``sin[i]`` for both ``i`` and
    ``i + rot/2``. The two agree exactly when the table's halves are equal,
    as HF tables (``cat(freqs, freqs)``) are.
    """
    q, k, fc, fs = _llm_args(xq, xk, freqs_cos, freqs_sin)
    _b, s, _hq, d = q.shape
    if fc.ndim != 2 or fc.shape != fs.shape:
        raise ValueError(f"freqs must be 2D [max_seq, rot] and equal in shape, got {fc.shape} and {fs.shape}")
    max_seq, rot = fc.shape
    if rot > d or rot % 2:
        raise ValueError(f"rotary width {rot} must be even and <= head_dim {d}")
    start = int(start_pos)
    if start < 0 or start + s > max_seq:
        raise IndexError(f"rows [{start}, {start + s}) outside the table of {max_seq} rows")
    c, sn = fc[start : start + s], fs[start : start + s]
    if shader_table:
        h = rot // 2
        c = np.concatenate([c[:, :h], c[:, :h]], axis=1)
        sn = np.concatenate([sn[:, :h], sn[:, :h]], axis=1)
    return hf_apply_rotary_emb(q, k, c, sn, unsqueeze_dim=1)
