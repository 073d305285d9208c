"""How a tensor `[..., N, C]` lies in device memory.

- Buffers hold flat texels: 4 values each, the last texel of the tensor
  padded (`padded_bytes`).
- 3D images are width-packed: texel (c4, n, b) holds values 4*c4 .. 4*c4+3
  of row n of batch item b; `image_extent` folds rows over height and depth
  and continues over-wide rows on the next image row when the natural
  extent (ceil(C/4), N, B) exceeds the device; `packed_view` is the same
  layout in a staging buffer.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


# Invocations per workgroup; x covers the texels of a row, y the rows.
WORKGROUP_INVOCATIONS = 128
# The smallest buffer or binding range made (a zero-sized one is invalid; 16 bytes holds one texel).
MIN_BUFFER = 16
MAX_WORKGROUP_X = 64


def workgroup_shape(texels_per_row: int, max_x: int) -> tuple[int, int]:
    """(x, y) local size of a one-texel-per-invocation kernel: x spans a
    row's texels (a power of two up to 64 and the device's limit), y takes
    the rest of the 128 invocations so short rows waste nothing."""
    wx = 1
    while wx < min(texels_per_row, MAX_WORKGROUP_X, max_x):
        wx *= 2
    return wx, max(1, WORKGROUP_INVOCATIONS // wx)


def same_view(a: Any, b: Any) -> bool:
    """Whether two numpy arrays are the same view of the same memory."""
    # (cheap tests first: this runs on every numpy call)
    return a is b or (a.shape == b.shape and a.strides == b.strides and a.dtype == b.dtype
                      and np.may_share_memory(a, b) and a.ctypes.data == b.ctypes.data)


def read_apart(a: Any, out: np.ndarray, same_view_ok: bool = True) -> Any:
    """`a` as the row blocks of one call read it while `out` is written block by block: a copy where numpy `a`
    shares memory with `out` (blocks written early would change what later blocks read), unless it is the
    very same view and `same_view_ok` (each block then reads and writes its own rows in one go); else `a`
    itself (a DeviceArray, None, or memory apart)."""
    if not isinstance(a, np.ndarray) or not np.shares_memory(a, out):
        return a
    return a if same_view_ok and same_view(a, out) else a.copy()


def texels(values: int) -> int:
    """Texels (4 values) that hold `values` values: the one width function."""
    return -(-values // 4)


def padded_bytes(values: int, itemsize: int) -> int:
    """Bytes of a flat tensor padded to whole texels."""
    return texels(values) * 4 * itemsize


def image_extent(width: int, n_tokens: int, batches: int, max_dim: int, what: str = "a tensor") -> tuple[int, int, int]:
    """The 3D image for `batches` x `n_tokens` rows of `width` texels:
    (width, N, B) when it fits; else rows wider than `max_dim` continue on
    the next image row(s) and the image rows fold over height and depth.
    `what`: the tensor a refusal names (the caller's argument)."""
    if width <= max_dim and n_tokens <= max_dim and batches <= max_dim:
        return (max(1, width), max(1, n_tokens), max(1, batches))
    image_width = min(width, max_dim)
    parts = -(-width // image_width)
    rows = batches * n_tokens * parts
    height = min(rows, max_dim)
    depth = -(-rows // height)
    if depth > max_dim:
        raise ValueError(
            f"{what}: {batches} x {n_tokens} rows of {width} texels needs {rows} image rows of {image_width} "
            f"texels: more than maxImageDimension3D^2 = {max_dim}^2 rows do not fit one 3D image; use "
            "storage='buffer'"
        )
    return (image_width, height, depth)


def tensor_extent(shape: tuple[int, ...], max_dim: int, what: str = "a tensor") -> tuple[int, int, int]:
    """The image extent of a tensor of `shape` [..., N, C] (`what`: its name, for a refusal)."""
    return image_extent(texels(shape[-1]), shape[-2], math.prod(shape[:-2]), max_dim, what)


def image_bytes(extent: tuple[int, int, int], itemsize: int) -> int:
    """Bytes of tightly packed texels of a whole image."""
    w, h, d = extent
    return w * h * d * 4 * itemsize


def packed_view(host: Any, extent: tuple[int, int, int], dtype: np.dtype, shape: tuple[int, ...],
                offset: int = 0) -> np.ndarray:
    """The part of a staging buffer (from byte `offset`) laid out as an
    image's texel rows that holds the tensor: [rows, C] inside [rows, parts
    * width * 4], where each tensor row takes `parts` image rows of `width`
    texels."""
    w, h, d = extent
    c = shape[-1]
    parts = -(-texels(c) // w)
    rows = math.prod(shape[:-1])
    packed = host.view(dtype, w * h * d * 4, offset)[: rows * parts * w * 4].reshape(rows, parts * w * 4)
    return packed[:, :c].reshape(shape)
