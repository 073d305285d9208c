"""The float64 numpy oracle of the operator and SAM2's axial frequencies.

Independent of the GPU path: it shares only the argument checks (the
test suite has its own oracle, which shares nothing).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .spec_checks import MAX_POSITION, check_head_dim, grid_side
from .nd_freqs import NdFreqs
from .exact_math import pow64
from .words import brief, typed
from .kernels import interleaved, table
from .ops import nd, sam2
from .runtime.dtypes import FREQS_DTYPES, as_dtype, is_int, is_real_scalar, names


def apply_reference(
    x: np.ndarray,
    freqs: Any,
    *,
    out: np.ndarray | None = None,
    inverse: bool = False,
    repeat: int = 1,
    exclude_last: int = 0,
    positions: np.ndarray | None = None,
    storage: str = "auto",
) -> np.ndarray:
    """The operator in float64 numpy, with `vkrope.apply`'s signature.

    Returns the result in float64 arithmetic: each product and the pair's
    sum rounded to float64 (exact unless the two products differ by more
    than 2^53), of the float64 freqs given (a device rounds a float64 table
    to float32 first, as `vkrope.apply` says). For float16 and bfloat16 x
    and float32 freqs, `.astype(x.dtype)` of it is what `vkrope.apply`
    returns (the kernels round the exact value once), except where a pair's
    products differ by more than 2^53 and their float64 sum lands on a
    midpoint of x's dtype: rounded twice there, one ulp of x's dtype off
    (as with `out=`). For float32 x the
    kernels round each product in float32, so where a pair's two products
    cancel the result can be many of its own ulps away (420,362 at
    EdgeTAM's shapes, 3% of the values more than one): compare within a
    bound of each element's scale, `|x_re c| + |x_im s|` for a pair's
    first, `|x_re s| + |x_im c|` for its second (1e-5 of it, plus 2^-148
    where the products are float32 subnormals; docs/accuracy.md), not in
    ulps of the result. With `out=`, the result is
    rounded into `out` (x's dtype) and `out` is returned. `storage` is
    accepted for signature compatibility and ignored.
    """
    kw: dict[str, Any] = dict(out=out, inverse=inverse, repeat=repeat, exclude_last=exclude_last,
                              positions=positions, storage=storage)
    if isinstance(freqs, NdFreqs):  # N-D ids in positions, as vkrope.apply takes them
        result = table.reference(nd.check_apply_nd(x, freqs, **kw))
    else:
        result = interleaved.reference(sam2.check(x, freqs, **kw))
    if out is not None:
        out[...] = result
        return out
    return result


def axial_freqs(
    dim: int, end_x: int | float, end_y: int | float, theta: float = 10000.0, dtype: Any = np.float32
) -> np.ndarray:
    """SAM2's 2-D axial rotary frequencies (`compute_axial_cis`), real-interleaved.

    For `dim % 4 == 0`, at most 65536 (a head's channels, as every spec;
    `vkrope.apply` takes wider rows with a table of the caller's):
    `f = 1 / theta ** (arange(0, dim, 4)[: dim // 4] / dim)`;
    token `t` has `x = t % end_x`, `y = t // end_x`; its first `dim/4` complex
    entries are `exp(i x f)`, the next `dim/4` are `exp(i y f)` (`end_x`,
    `end_y`: ints >= 1, or floats of whole value, as SAM2's `RoPEAttention`
    passes `math.sqrt(N)`). Returns
    `[end_x * end_y, dim]` of `dtype` (float32, float16, bfloat16 or float64), computed in
    float64 and rounded once.

    That is the exact table, not SAM2's bits: SAM2 computes the angles,
    cos and sin in float32 (for dim 256, up to 3.4e-6 away from this table at
    64x64 and 5.7e-5 at 1024x1024, where float32 angles lose digits). For SAM2's own numbers
    pass `vkrope.AxialFreqs(dim, end_x, end_y, theta)` to `vkrope.apply`
    instead (SAM2's float32 angles, cos / sin each within 2 float32 ulp of
    them); use this table for the exact rotation.
    """
    end_x, end_y = grid_side("end_x", end_x), grid_side("end_y", end_y)  # (as AxialFreqs': >= 1, whole floats)
    if not is_int(dim):
        raise TypeError(f"dim must be an int; got {typed(dim)}")
    if dim < 1:
        raise ValueError(f"dim must be >= 1; got {brief(dim)}")
    check_head_dim("dim", dim)
    if dim % 4:
        raise ValueError(f"dim must be divisible by 4 (two axes of complex pairs); got {dim}")
    if end_x * end_y > MAX_POSITION:  # (as AxialFreqs: a table past it is no grid vkrope rotates)
        raise ValueError(f"end_x * end_y must be <= 2^24 (AxialFreqs' float32 coordinates); got {end_x * end_y}")
    if not is_real_scalar(theta) or isinstance(theta, bool):
        raise TypeError(f"theta must be a number; got {typed(theta)}")
    try:
        finite = bool(np.isfinite(float(theta)))
    except OverflowError:  # (an int past float64's range)
        finite = False
    if not finite or theta <= 0:
        raise ValueError(f"theta must be a positive finite float64; got {brief(theta)}")
    try:
        dt = as_dtype(dtype)
    except TypeError:  # (no dtype numpy knows: "int4" before ml_dtypes is imported, "foo")
        dt = None
    if dt is None or dt not in FREQS_DTYPES:
        raise TypeError(f"dtype must be {names(FREQS_DTYPES)}; got {repr(dtype) if dt is None else dt}")
    q = dim // 4
    freqs = 1.0 / pow64(theta, np.arange(0, dim, 4, dtype=np.float64)[:q] / dim)
    t = np.arange(end_x * end_y, dtype=np.float64)
    tx = t % end_x if end_x else t
    ty = np.floor_divide(t, end_x) if end_x else t
    angles = np.concatenate([np.outer(tx, freqs), np.outer(ty, freqs)], axis=1)  # [T, dim/2]
    cis = np.stack([np.cos(angles), np.sin(angles)], axis=-1)  # [T, dim/2, 2]
    return cis.reshape(end_x * end_y, dim).astype(dtype)
