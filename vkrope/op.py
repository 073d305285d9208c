"""The rope operator: from a checked `Request` to a plan (storage, shader
variant, buffers, chunks, dispatch grid) and its execution on a `Context`.

This is the one place where the dispatch grid and the chunking of large
tensors are computed. It never builds a Vulkan struct: it drives the thin
Vulkan layer in `vkrope.vk`.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .arguments import Request
from .shaders import load_variant
from .vk import binding as b
from .vk.commands import CommandStream
from .vk.context import Context, unified_memory
from .vk.pipeline import ComputePipeline
from .vk.resources import Buffer, Image3D

# Flag bits of the push-constant block (glsl/rope.glsl: FLAG_*).
FLAG_INVERSE = 1
FLAG_POSITIONS = 2

DEFAULT_WORKGROUP = 128
# Buffers grow in steps of this many bytes so that nearby sizes reuse them.
GROWTH = 1 << 16
MIN_BUFFER = 16


@dataclass(frozen=True)
class Chunk:
    """One dispatch: global texels [begin, end), where the x/out bindings
    start (texel) and where the freqs binding starts and ends (pair)."""

    begin: int
    end: int
    x_base: int
    x_texels: int
    f_base: int
    f_pairs: int


def plan_chunks(
    total_texels: int,
    rows_of: Callable[[int, int], tuple[int, int]],
    token_rows: np.ndarray,
    pairs_per_row: int,
    x_texel_bytes: int | None,
    f_pair_bytes: int,
    max_range: int,
    alignment: int,
) -> list[Chunk]:
    """Split the texels into dispatches whose buffer bindings each fit in
    `max_range` bytes and start on `alignment`-byte offsets.

    `rows_of(t0, t1)` gives the first and last flat row that texels [t0, t1)
    touch; `x_texel_bytes` is None when x lives in an image (no x binding to
    limit). Freqs are bound per chunk from the lowest to the highest freqs
    row its tokens use, so repeat / positions tables need not fit whole.
    """
    n_tokens = len(token_rows)
    f_align = max(1, alignment // f_pair_bytes)
    x_align = max(1, alignment // x_texel_bytes) if x_texel_bytes else 1
    if x_texel_bytes:
        step = max(x_align, (max_range // x_texel_bytes) // x_align * x_align)
    else:
        step = total_texels
    chunks: list[Chunk] = []
    t0 = 0
    while t0 < total_texels:
        t1 = min(total_texels, t0 + step)
        r0, r1 = rows_of(t0, t1)
        if r1 - r0 + 1 >= n_tokens:
            used = token_rows
        else:
            n0, n1 = r0 % n_tokens, r1 % n_tokens
            used = token_rows[n0 : n1 + 1] if n0 <= n1 else np.concatenate([token_rows[n0:], token_rows[: n1 + 1]])
        used = used[used >= 0]
        if used.size:
            f0 = int(used.min()) * pairs_per_row // f_align * f_align
            f1 = (int(used.max()) + 1) * pairs_per_row
        else:
            f0, f1 = 0, 1
        if (f1 - f0) * f_pair_bytes > max_range:
            if step <= x_align:
                raise ValueError(
                    f"freqs rows needed by one dispatch span {(f1 - f0) * f_pair_bytes} bytes, past the device's "
                    f"maxStorageBufferRange of {max_range} bytes"
                )
            step = max(x_align, (step // 2) // x_align * x_align)
            continue
        chunks.append(Chunk(t0, t1, t0, t1 - t0, f0, f1 - f0))
        t0 = t1
    return chunks


def grid(invocations: int, local_size: int, max_x: int, max_y: int) -> tuple[int, int]:
    """Workgroup counts (x, y) covering `invocations` threads; the shader
    linearises the 2D grid because x alone is capped (65535 on many devices)."""
    groups = max(1, math.ceil(invocations / local_size))
    gx = min(groups, max_x)
    gy = math.ceil(groups / gx)
    if gy > max_y:
        raise ValueError(f"{invocations} invocations exceed the device's dispatch grid ({max_x} x {max_y} groups)")
    return gx, gy


class RopeOp:
    """Runs the operator on one context; owns its pipelines, buffers, image
    and command stream (all registered with the context for release)."""

    def __init__(self, ctx: Context, workgroup_size: int | None = None) -> None:
        self.ctx = ctx
        wg = workgroup_size or int(os.environ.get("VKROPE_WORKGROUP", DEFAULT_WORKGROUP))
        self.workgroup_size = min(wg, ctx.info.max_compute_work_group_size_x)
        self.unified = unified_memory(ctx)
        self.stream = CommandStream(ctx)
        self.pipelines: dict[str, ComputePipeline] = {}
        self.buffers: dict[str, Buffer] = {}
        self.image: Image3D | None = None

    # --- cached resources -------------------------------------------------
    def pipeline(self, storage: str, x_dtype: str, f_dtype: str) -> ComputePipeline:
        """The compute pipeline of one variant, built on first use."""
        variant = load_variant(storage, x_dtype, f_dtype)
        pipe = self.pipelines.get(variant.name)
        if pipe is None:
            if "storageBuffer16BitAccess" in variant.required_features:
                self.ctx.require_16bit_storage()
            pipe = ComputePipeline(
                self.ctx, variant.spirv, variant.binding_kinds, variant.push_constant_bytes, self.workgroup_size
            )
            self.pipelines[variant.name] = pipe
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

    # --- staging helpers --------------------------------------------------
    def _upload(self, role: str, data: np.ndarray, nbytes: int) -> Buffer:
        """Put `data` (any layout) into the device buffer for `role`; returns
        the buffer to bind. In staging mode the copy is recorded later."""
        host = self.buffer("host_" + role if not self.unified else role, nbytes, host_visible=True)
        if data.size:
            np.copyto(host.view(data.dtype, data.size).reshape(data.shape), data, casting="no")
        if self.unified:
            return host
        return self.buffer(role, nbytes, host_visible=False)

    def _record_uploads(self, roles: list[tuple[str, int]]) -> None:
        if self.unified:
            return
        for role, nbytes in roles:
            self.stream.copy_buffer(self.buffers["host_" + role], self.buffers[role], max(MIN_BUFFER, nbytes))

    # --- the operator -----------------------------------------------------
    def run(self, req: Request, storage: str, out: np.ndarray, timing: bool = False) -> float | None:
        """Rotate `req.x` into `out` (same shape and dtype) using `storage`.
        Returns the kernel time in seconds when `timing` and timestamps exist."""
        vk = b.vk()
        ctx = self.ctx
        ctx.check_open()
        info = ctx.info
        x_dtype = np.dtype(req.dtype)
        f_dtype = np.dtype(np.float16) if (x_dtype == np.float16 and req.freqs_pairs.dtype == np.float16) else np.dtype(np.float32)
        pipe = self.pipeline(storage, x_dtype.name, f_dtype.name)

        ppr = req.channels // 2
        total_pairs = req.x.size // 2
        rows = req.rows
        freqs = np.ascontiguousarray(req.freqs_pairs, dtype=f_dtype)
        f_pair_bytes = 2 * f_dtype.itemsize
        positions = req.positions if req.positions is not None else np.zeros(1, np.int32)
        flags = (FLAG_INVERSE if req.inverse else 0) | (FLAG_POSITIONS if req.positions is not None else 0)
        max_range = info.max_storage_buffer_range
        if positions.nbytes > max_range:
            raise ValueError(f"positions take {positions.nbytes} bytes, past maxStorageBufferRange = {max_range}")

        texel_bytes = 4 * x_dtype.itemsize
        f_buf = self._upload("freqs", freqs, freqs.nbytes)
        p_buf = self._upload("positions", positions, positions.nbytes)

        if storage == "buffer":
            total_texels = (total_pairs + 1) // 2
            x_bytes = total_texels * texel_bytes
            host = self.buffer("host_x" if not self.unified else "x", x_bytes, host_visible=True)
            np.copyto(host.view(x_dtype, req.x.size).reshape(req.shape), req.x, casting="no")
            x_buf = host if self.unified else self.buffer("x", x_bytes, host_visible=False)
            chunks = plan_chunks(
                total_texels,
                lambda t0, t1: (2 * t0 // ppr, (min(2 * t1, total_pairs) - 1) // ppr),
                req.token_rows, ppr, texel_bytes, f_pair_bytes, max_range,
                info.min_storage_buffer_offset_alignment,
            )
            image_height = 0
        else:
            width = (ppr + 1) // 2
            max_dim = info.max_image_dimension_3d
            if width > max_dim:
                raise ValueError(
                    f"x has C = {req.channels}: {width} texels per row exceed the device's maxImageDimension3D "
                    f"= {max_dim}; use storage='buffer'"
                )
            height = min(rows, max_dim)
            depth = -(-rows // height)
            if depth > max_dim:
                raise ValueError(
                    f"x has {rows} rows: more than maxImageDimension3D^2 = {max_dim}^2 rows do not fit one 3D "
                    "image; use storage='buffer'"
                )
            total_texels = rows * width
            fmt = vk.VK_FORMAT_R16G16B16A16_SFLOAT if x_dtype == np.float16 else vk.VK_FORMAT_R32G32B32A32_SFLOAT
            image = self.image3d((width, height, depth), fmt)
            x_bytes = width * height * depth * texel_bytes
            host = self.buffer("host_x", x_bytes, host_visible=True)
            packed = host.view(x_dtype, width * height * depth * 4).reshape(height * depth, width * 4)
            np.copyto(packed[:rows, : req.channels].reshape(req.shape), req.x, casting="no")
            chunks = plan_chunks(
                total_texels,
                lambda t0, t1: (t0 // width, (t1 - 1) // width),
                req.token_rows, ppr, None, f_pair_bytes, max_range,
                info.min_storage_buffer_offset_alignment,
            )
            image_height = height

        pipe.ensure_sets(len(chunks))
        for i, ch in enumerate(chunks):
            f_binding = (f_buf, ch.f_base * f_pair_bytes, ch.f_pairs * f_pair_bytes)
            p_binding = (p_buf, 0, min(p_buf.size, max_range))
            if storage == "buffer":
                x_binding = (x_buf, ch.x_base * texel_bytes, ch.x_texels * texel_bytes)
                pipe.write_set(i, [x_binding, x_binding, f_binding, p_binding])
            else:
                pipe.write_set(i, [image, image, f_binding, p_binding])

        s = self.stream
        s.begin()
        compute = vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
        transfer = vk.VK_PIPELINE_STAGE_TRANSFER_BIT
        shader_rw = vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT
        uploads = [("freqs", freqs.nbytes), ("positions", positions.nbytes)]
        if storage == "buffer":
            uploads.append(("x", x_bytes))
        self._record_uploads(uploads)
        if not self.unified:
            s.barrier(transfer, vk.VK_ACCESS_TRANSFER_WRITE_BIT, compute, shader_rw)
        if storage == "texture3d":
            image.layout = vk.VK_IMAGE_LAYOUT_UNDEFINED  # old contents are not needed
            s.image_layout(image, vk.VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                           vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, 0, transfer, vk.VK_ACCESS_TRANSFER_WRITE_BIT)
            s.copy_buffer_image(host, image, to_image=True)
            s.image_layout(image, vk.VK_IMAGE_LAYOUT_GENERAL, transfer, vk.VK_ACCESS_TRANSFER_WRITE_BIT,
                           compute, shader_rw)
        if timing:
            s.timestamp_begin()
        max_x, max_y = info.max_compute_work_group_count[0], info.max_compute_work_group_count[1]
        for i, ch in enumerate(chunks):
            s.bind(pipe, i)
            s.push_constants(pipe, pipe.pack_push_constants([
                ch.begin, ch.end, ch.x_base, ch.f_base, total_pairs, ppr, req.n_tokens, req.n_rot,
                req.n_freq_rows, flags, image_height,
            ]))
            gx, gy = grid(ch.end - ch.begin, self.workgroup_size, max_x, max_y)
            s.dispatch(gx, gy)
        if timing:
            s.timestamp_end()
        if storage == "texture3d":
            s.image_layout(image, vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, compute, vk.VK_ACCESS_SHADER_WRITE_BIT,
                           transfer, vk.VK_ACCESS_TRANSFER_READ_BIT)
            s.copy_buffer_image(host, image, to_image=False)
            s.barrier(transfer, vk.VK_ACCESS_TRANSFER_WRITE_BIT, vk.VK_PIPELINE_STAGE_HOST_BIT, vk.VK_ACCESS_HOST_READ_BIT)
        elif self.unified:
            s.barrier(compute, vk.VK_ACCESS_SHADER_WRITE_BIT, vk.VK_PIPELINE_STAGE_HOST_BIT, vk.VK_ACCESS_HOST_READ_BIT)
        else:
            s.barrier(compute, vk.VK_ACCESS_SHADER_WRITE_BIT, transfer, vk.VK_ACCESS_TRANSFER_READ_BIT)
            s.copy_buffer(x_buf, host, x_bytes)
            s.barrier(transfer, vk.VK_ACCESS_TRANSFER_WRITE_BIT, vk.VK_PIPELINE_STAGE_HOST_BIT, vk.VK_ACCESS_HOST_READ_BIT)
        seconds = s.submit_and_wait()

        if storage == "buffer":
            np.copyto(out, host.view(x_dtype, req.x.size).reshape(req.shape))
        else:
            np.copyto(out, packed[:rows, : req.channels].reshape(req.shape))
        return seconds
