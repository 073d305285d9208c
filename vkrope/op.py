"""The rope operator: from a checked `Request` to a plan (shader variant,
workgroup shape, buffers, chunks, dispatch grid) and its execution on a
`Context`.

This is the one place where the dispatch grid and the splitting of large
tensors are computed. It never builds a Vulkan struct: it drives the thin
Vulkan layer in `vkrope.vk`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .arguments import Request
from .shaders import load_variant
from .vk import binding as b
from .vk.commands import CommandStream
from .vk.context import Context, unified_memory
from .vk.instance import PhysicalDeviceInfo
from .vk.pipeline import ComputePipeline
from .vk.resources import Buffer, Image3D

# Flag bits of the push-constant block (glsl/rope.glsl: FLAG_*).
FLAG_INVERSE = 1
FLAG_POSITIONS = 2

# Invocations per workgroup; x covers the texels of a row, y the tokens.
WORKGROUP_INVOCATIONS = 128
MAX_WORKGROUP_X = 64
# Buffers grow in steps of this many bytes so that nearby sizes reuse them.
GROWTH = 1 << 16
MIN_BUFFER = 16


@dataclass(frozen=True)
class Chunk:
    """One dispatch: tokens [n0, n1) of flat batches [b0, b1); the x / out
    binding starts at global pair `x_base` and spans `x_pairs`; the freqs
    binding starts at pair `f_base` and spans `f_pairs`."""

    b0: int
    b1: int
    n0: int
    n1: int
    x_base: int
    x_pairs: int
    f_base: int
    f_pairs: int


@dataclass(frozen=True)
class Plan:
    """Everything data-independent about one call."""

    storage: str
    x_dtype: np.dtype
    f_dtype: np.dtype
    batches: int
    n_tokens: int
    pairs_per_row: int
    texels_per_row: int
    workgroup: tuple[int, int]
    aligned: bool
    image_extent: tuple[int, int, int] | None
    chunks: tuple[Chunk, ...]


def workgroup_shape(texels_per_row: int) -> tuple[int, int]:
    """(x, y) local size: x spans a row's texels (a power of two up to 64),
    y takes the rest of the 128 invocations so short rows waste nothing."""
    wx = 1
    while wx < min(texels_per_row, MAX_WORKGROUP_X):
        wx *= 2
    return wx, max(1, WORKGROUP_INVOCATIONS // wx)


def plan(req: Request, storage: str, info: PhysicalDeviceInfo) -> Plan:
    """Choose the variant, workgroup shape, image extent and the chunks."""
    x_dtype = np.dtype(req.dtype)
    f_dtype = np.dtype(np.float16) if (x_dtype == np.float16 and req.freqs_pairs.dtype == np.float16) else np.dtype(np.float32)
    ppr = req.channels // 2
    width = (ppr + 1) // 2
    n_tokens = req.n_tokens
    batches = req.rows // n_tokens
    wx, wy = workgroup_shape(width)
    max_gx, max_gy, max_gz = info.max_compute_work_group_count
    if math.ceil(width / wx) > max_gx:
        raise ValueError(f"x has C = {req.channels}: too many texels per row for the device's dispatch grid")
    max_range = info.max_storage_buffer_range
    pair_bytes = 2 * x_dtype.itemsize
    f_pair_bytes = 2 * f_dtype.itemsize
    align = max(info.min_storage_buffer_offset_alignment, 2 * pair_bytes)

    extent = None
    if storage == "texture3d":
        extent = image_extent(width, n_tokens, batches, info.max_image_dimension_3d)

    # Tokens per dispatch: the grid's y limit, and (buffers) the binding range.
    row_bytes = ppr * pair_bytes
    tokens = min(n_tokens, max_gy * wy)
    if storage == "buffer":
        tokens = min(tokens, max(1, (max_range - align) // row_bytes))
    while True:
        chunks = _split(req, batches, n_tokens, tokens, min(max_gz, 65535), ppr, storage == "buffer",
                        max_range - align, row_bytes, f_pair_bytes, pair_bytes, align)
        if chunks is not None:
            break
        if tokens == 1:
            raise ValueError(
                f"one token's freqs row ({ppr * f_pair_bytes} bytes) cannot be bound within the device's "
                f"maxStorageBufferRange = {max_range}"
            )
        tokens = max(1, tokens // 2)
    return Plan(
        storage=storage, x_dtype=x_dtype, f_dtype=f_dtype, batches=batches, n_tokens=n_tokens,
        pairs_per_row=ppr, texels_per_row=width, workgroup=(wx, wy), aligned=ppr % 2 == 0,
        image_extent=extent, chunks=tuple(chunks),
    )


def image_extent(width: int, n_tokens: int, batches: int, max_dim: int) -> tuple[int, int, int]:
    """The 3D image for `batches` x `n_tokens` rows of `width` texels:
    (width, N, B) when it fits; else rows wider than `max_dim` continue on
    the next image row(s) and the image rows fold over height and depth."""
    if width <= max_dim and n_tokens <= max_dim and batches <= max_dim:
        return (width, n_tokens, batches)
    image_width = min(width, max_dim)
    parts = -(-width // image_width)
    rows = batches * n_tokens * parts
    height = min(rows, max_dim)
    depth = -(-rows // height)
    if depth > max_dim:
        raise ValueError(
            f"x needs {rows} image rows of {image_width} texels: more than maxImageDimension3D^2 = "
            f"{max_dim}^2 rows do not fit one 3D image; use storage='buffer'"
        )
    return (image_width, height, depth)


def _split(req, batches, n_tokens, tokens, max_batches, ppr, bind_x, x_limit, row_bytes, f_pair_bytes,
           pair_bytes, align) -> list[Chunk] | None:
    """Chunks of at most `tokens` tokens (and batches that fit); None when a
    chunk's freqs rows would not fit one binding."""
    f_align = max(1, align // f_pair_bytes)
    x_align = max(1, align // pair_bytes)
    if tokens == n_tokens:
        per = max_batches
        if bind_x:
            per = min(per, max(1, x_limit // max(1, n_tokens * row_bytes)))
        spans = [(b0, min(batches, b0 + per), 0, n_tokens) for b0 in range(0, batches, per)]
    else:
        spans = [(b0, b0 + 1, n0, min(n_tokens, n0 + tokens)) for b0 in range(batches) for n0 in range(0, n_tokens, tokens)]
    out = []
    for b0, b1, n0, n1 in spans:
        used = req.token_rows[n0:n1]
        used = used[used >= 0]
        if used.size:
            f0 = int(used.min()) * ppr // f_align * f_align
            f1 = (int(used.max()) + 1) * ppr
        else:
            f0, f1 = 0, 1
        if (f1 - f0) * f_pair_bytes > x_limit:
            return None
        x0 = (b0 * n_tokens + n0) * ppr // x_align * x_align
        x1 = ((b1 - 1) * n_tokens + n1) * ppr
        x1 += x1 % 2  # whole texels
        out.append(Chunk(b0, b1, n0, n1, x0, x1 - x0, f0, f1 - f0))
    return out


class RopeOp:
    """Runs the operator on one context; owns its pipelines, buffers, image
    and command stream (all registered with the context for release)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.unified = unified_memory(ctx)
        self.stream = CommandStream(ctx)
        self.pipelines: dict[tuple, ComputePipeline] = {}
        self.buffers: dict[str, Buffer] = {}
        self.image: Image3D | None = None

    # --- cached resources -------------------------------------------------
    def pipeline(self, pl: Plan) -> ComputePipeline:
        """The compute pipeline for a plan's variant and shape, built once."""
        variant = load_variant(pl.storage, pl.x_dtype.name, pl.f_dtype.name)
        key = (variant.name, pl.workgroup, pl.aligned)
        pipe = self.pipelines.get(key)
        if pipe is None:
            if "storageBuffer16BitAccess" in variant.required_features:
                self.ctx.require_16bit_storage()
            spec = (pl.workgroup[0], pl.workgroup[1], int(pl.aligned))
            pipe = ComputePipeline(self.ctx, variant.spirv, variant.binding_kinds, variant.push_constant_bytes, spec)
            self.pipelines[key] = pipe
        return pipe

    def buffer(self, role: str, size: int, host_visible: bool) -> Buffer:
        """A buffer of at least `size` bytes for `role`, reused across calls."""
        size = max(MIN_BUFFER, size)
        buf = self.buffers.get(role)
        if buf is not None and buf.size >= size:
            return buf
        if buf is not None:
            del self.buffers[role]
            self.ctx.release(buf)
        size = -(-size // GROWTH) * GROWTH
        buf = Buffer(self.ctx, size, host_visible=host_visible)
        self.buffers[role] = buf
        return buf

    def image3d(self, extent: tuple[int, int, int], vk_format: int) -> Image3D:
        """The 3D image for texture storage, re-created when the extent changes."""
        if self.image is not None and self.image.extent == extent and self.image.format == vk_format:
            return self.image
        if self.image is not None:
            old, self.image = self.image, None
            self.ctx.release(old)
        self.image = Image3D(self.ctx, extent, vk_format)
        return self.image

    def trim(self) -> None:
        """Free cached buffers and the cached image (they are re-made on demand)."""
        for buf in self.buffers.values():
            self.ctx.release(buf)
        self.buffers.clear()
        if self.image is not None:
            old, self.image = self.image, None
            self.ctx.release(old)

    def _staged(self, role: str, nbytes: int) -> tuple[Buffer, Buffer]:
        """(host-visible buffer to fill or read, buffer to bind). They are the
        same buffer on unified-memory devices: no staging copy there."""
        host = self.buffer(role if self.unified else "host_" + role, nbytes, host_visible=True)
        if self.unified:
            return host, host
        return host, self.buffer(role, nbytes, host_visible=False)

    # --- the operator -----------------------------------------------------
    def run(self, req: Request, storage: str, out: np.ndarray, timing: bool = False) -> float | None:
        """Rotate `req.x` into `out` (same shape and dtype) using `storage`.
        Returns the kernel time in seconds when `timing` and timestamps exist."""
        vk = b.vk()
        ctx = self.ctx
        ctx.check_open()
        pl = plan(req, storage, ctx.info)
        pipe = self.pipeline(pl)
        x_dtype = pl.x_dtype
        freqs = np.ascontiguousarray(req.freqs_pairs, dtype=pl.f_dtype)
        positions = req.positions if req.positions is not None else np.zeros(1, np.int32)
        flags = (FLAG_INVERSE if req.inverse else 0) | (FLAG_POSITIONS if req.positions is not None else 0)
        if positions.nbytes > ctx.info.max_storage_buffer_range:
            raise ValueError(
                f"positions take {positions.nbytes} bytes, past maxStorageBufferRange = "
                f"{ctx.info.max_storage_buffer_range}"
            )

        f_host, f_buf = self._staged("freqs", freqs.nbytes)
        p_host, p_buf = self._staged("positions", positions.nbytes)
        if freqs.size:
            f_host.view(freqs.dtype, freqs.size)[:] = freqs.reshape(-1)
        p_host.view(np.int32, positions.size)[:] = positions

        rows, c = req.rows, req.channels
        pair_bytes = 2 * x_dtype.itemsize
        total_pairs = req.x.size // 2
        if storage == "buffer":
            x_bytes = (total_pairs + total_pairs % 2) * pair_bytes
            x_host, x_buf = self._staged("x", x_bytes)
            staged_view = x_host.view(x_dtype, req.x.size).reshape(req.shape)
            image = None
        else:
            w, h, d = pl.image_extent
            parts = -(-pl.texels_per_row // w)  # image rows per tensor row
            x_bytes = w * h * d * 4 * x_dtype.itemsize
            x_host = self.buffer("host_x", x_bytes, host_visible=True)
            packed = x_host.view(x_dtype, w * h * d * 4)[: rows * parts * w * 4].reshape(rows, parts * w * 4)
            staged_view = packed[:, :c].reshape(req.shape)
            half = x_dtype == np.float16
            fmt = vk.VK_FORMAT_R16G16B16A16_SFLOAT if half else vk.VK_FORMAT_R32G32B32A32_SFLOAT
            ctx.require_storage_image_format(fmt, "rgba16f" if half else "rgba32f")
            image = self.image3d(pl.image_extent, fmt)
        np.copyto(staged_view, req.x, casting="no")

        pipe.ensure_sets(len(pl.chunks))
        p_binding = (p_buf, 0, max(MIN_BUFFER, positions.nbytes))
        for i, ch in enumerate(pl.chunks):
            f_binding = (f_buf, ch.f_base * (2 * pl.f_dtype.itemsize), ch.f_pairs * (2 * pl.f_dtype.itemsize))
            if image is None:
                x_binding = (x_buf, ch.x_base * pair_bytes, ch.x_pairs * pair_bytes)
                pipe.write_set(i, [x_binding, x_binding, f_binding, p_binding])
            else:
                pipe.write_set(i, [image, image, f_binding, p_binding])

        s = self.stream
        s.begin()
        compute = vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
        transfer = vk.VK_PIPELINE_STAGE_TRANSFER_BIT
        host_stage = vk.VK_PIPELINE_STAGE_HOST_BIT
        shader_rw = vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT
        if not self.unified:
            s.copy_buffer(f_host, f_buf, max(MIN_BUFFER, freqs.nbytes))
            s.copy_buffer(p_host, p_buf, max(MIN_BUFFER, positions.nbytes))
            if image is None:
                s.copy_buffer(x_host, x_buf, x_bytes)
            s.barrier(transfer, vk.VK_ACCESS_TRANSFER_WRITE_BIT, compute, shader_rw)
        if image is not None:
            image.layout = vk.VK_IMAGE_LAYOUT_UNDEFINED  # old contents are not needed
            s.image_layout(image, vk.VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                           vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, 0, transfer, vk.VK_ACCESS_TRANSFER_WRITE_BIT)
            s.copy_buffer_image(x_host, image, to_image=True)
            s.image_layout(image, vk.VK_IMAGE_LAYOUT_GENERAL, transfer, vk.VK_ACCESS_TRANSFER_WRITE_BIT,
                           compute, shader_rw)
        if timing:
            s.timestamp_begin()
        wx, wy = pl.workgroup
        image_width, image_height = pl.image_extent[:2] if pl.image_extent else (0, 0)
        for i, ch in enumerate(pl.chunks):
            s.bind(pipe, i)
            s.push_constants(pipe, pipe.pack_push_constants([
                pl.n_tokens, pl.pairs_per_row, ch.n0, ch.n1, ch.b0, ch.b1, ch.x_base, ch.f_base,
                req.n_rot, req.n_freq_rows, flags, image_height, image_width,
            ]))
            s.dispatch(math.ceil(pl.texels_per_row / wx), math.ceil((ch.n1 - ch.n0) / wy), ch.b1 - ch.b0)
        if timing:
            s.timestamp_end()
        if image is not None:
            s.image_layout(image, vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, compute, vk.VK_ACCESS_SHADER_WRITE_BIT,
                           transfer, vk.VK_ACCESS_TRANSFER_READ_BIT)
            s.copy_buffer_image(x_host, image, to_image=False)
            s.barrier(transfer, vk.VK_ACCESS_TRANSFER_WRITE_BIT, host_stage, vk.VK_ACCESS_HOST_READ_BIT)
        elif self.unified:
            s.barrier(compute, vk.VK_ACCESS_SHADER_WRITE_BIT, host_stage, vk.VK_ACCESS_HOST_READ_BIT)
        else:
            s.barrier(compute, vk.VK_ACCESS_SHADER_WRITE_BIT, transfer, vk.VK_ACCESS_TRANSFER_READ_BIT)
            s.copy_buffer(x_buf, x_host, x_bytes)
            s.barrier(transfer, vk.VK_ACCESS_TRANSFER_WRITE_BIT, host_stage, vk.VK_ACCESS_HOST_READ_BIT)
        seconds = s.submit_and_wait()
        np.copyto(out, staged_view)
        return seconds
