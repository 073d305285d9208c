"""The rope operator: from a checked `Request` to a plan (shader variant,
workgroup shape, buffers, chunks, dispatch grid) and its execution on a
`Context`.

This is the one place where the dispatch grid and the splitting of large
tensors are computed. It never builds a Vulkan struct: it drives the thin
Vulkan layer in `vkrope.vk`.
"""

from __future__ import annotations

import ctypes
import math
from collections import OrderedDict
from dataclasses import dataclass, replace

from typing import Any, Callable

import numpy as np

from .arguments import Request
from .shaders import FLAGS, load_variant
from .vk import binding as b
from .vk.commands import CommandStream, Recording
from .vk.context import Context, unified_memory
from .vk.instance import PhysicalDeviceInfo
from .vk.pipeline import ComputePipeline
from .errors import VulkanError
from .vk.resources import Buffer, Image3D, ImportedBuffer


# Invocations per workgroup; x covers the texels of a row, y the tokens.
WORKGROUP_INVOCATIONS = 128
MAX_WORKGROUP_X = 64
# Buffers grow in steps of this many bytes so that nearby sizes reuse them.
GROWTH = 1 << 16
MIN_BUFFER = 16
# Import numpy memory into the device (no copies) from this size on; smaller
# calls are cheaper through the cached staging buffers and recordings.
IMPORT_MIN_BYTES = 4 << 20

_MADV_POPULATE_WRITE = 23  # Linux >= 5.14
_madvise: Any = None


def _prefault(a: np.ndarray) -> None:
    """Map every page of `a` before the device writes it.

    A fresh result array is untouched memory. Left alone, lavapipe's worker
    threads take its page faults during the kernel, which made that kernel
    take 17 to 90 ms instead of 17 (fp32 8x4096x256, 32 MiB out); mapping the
    pages first costs ~3 ms and keeps the kernel at its usual time. Best
    effort: a no-op where madvise or MADV_POPULATE_WRITE is missing."""
    global _madvise
    if _madvise is None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
            _madvise = libc.madvise
        except (OSError, AttributeError):
            _madvise = False
    if _madvise:
        start = a.ctypes.data // 4096 * 4096
        _madvise(start, a.ctypes.data + a.nbytes - start, _MADV_POPULATE_WRITE)


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


def padded_bytes(values: int, itemsize: int) -> int:
    """Bytes of a flat tensor padded to whole texels (4 values): the buffer
    storage shader reads and writes texels."""
    return -(-values // 4) * 4 * itemsize


def workgroup_shape(texels_per_row: int) -> tuple[int, int]:
    """(x, y) local size: x spans a row's texels (a power of two up to 64),
    y takes the rest of the 128 invocations so short rows waste nothing."""
    wx = 1
    while wx < min(texels_per_row, MAX_WORKGROUP_X):
        wx *= 2
    return wx, max(1, WORKGROUP_INVOCATIONS // wx)


def plan(req: Request, storage: str, info: PhysicalDeviceInfo) -> Plan:
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
    f_align = max(2, align // f_pair_bytes)  # even: aligned rows read freqs as vec4
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


@dataclass
class Job:
    """One rotation inside a submission: a checked request, its plan, and the
    resources holding x and receiving the output (the same one in place)."""

    req: Request
    plan: Plan
    x_res: Any  # Buffer (buffer storage) or Image3D (texture3d)
    out_res: Any
    x_offset: int = 0  # bytes into x_res where the tensor starts (imported host memory)
    out_offset: int = 0


def push_flags(req: Request) -> int:
    """The `flags` push constant of a request (bits from shaders.FLAGS)."""
    return (FLAGS["FLAG_INVERSE"] if req.inverse else 0) | (FLAGS["FLAG_POSITIONS"] if req.positions is not None else 0)


class RopeOp:
    """Runs the operator on one context; owns its pipelines, buffers, images
    and command stream (all registered with the context for release)."""

    # Device-array buffers kept for reuse after their arrays die, at most this many bytes.
    POOL_BYTES = 512 << 20
    # Recorded command buffers kept per plan (numpy path), least recently used out first.
    MAX_RECORDINGS = 32

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.unified = unified_memory(ctx)
        self.stream = CommandStream(ctx)
        self.scratch = Recording(self.stream)  # re-recorded for one-off work
        self.recordings: OrderedDict[tuple, Recording] = OrderedDict()
        self.pipelines: dict[tuple, ComputePipeline] = {}
        self.buffers: dict[str, Buffer] = {}
        self.image: Image3D | None = None
        self.pool: list[Buffer] = []
        self.plans: dict[tuple, Plan] = {}

    def plan(self, req: Request, storage: str) -> Plan:
        """`plan()` for this device. Without `positions` a plan depends only
        on shapes, dtypes, storage and the (repeat, exclude_last) mapping, so
        it is memoised on those (it is most of a small call's host cost)."""
        if req.positions is not None:
            return plan(req, storage, self.ctx.info)
        key = (storage, req.shape, req.dtype, req.freqs_pairs.dtype, req.n_rot, req.n_freq_rows)
        pl = self.plans.get(key)
        if pl is None:
            if len(self.plans) >= 256:
                self.plans.clear()
            pl = self.plans[key] = plan(req, storage, self.ctx.info)
        return pl

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
            self._forget_recordings()
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
            self._forget_recordings()
            self.ctx.release(old)
        self.image = Image3D(self.ctx, extent, vk_format)
        return self.image

    def _forget_recordings(self) -> None:
        """Drop cached recordings (before a resource they may bind goes away)."""
        while self.recordings:
            self.ctx.release(self.recordings.popitem()[1])

    def trim(self) -> None:
        """Free cached recordings, buffers, pooled array buffers and the image."""
        self._forget_recordings()
        for buf in list(self.buffers.values()) + self.pool:
            self.ctx.release(buf)
        self.buffers.clear()
        self.pool.clear()
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

    def _image_format(self, x_dtype: np.dtype) -> int:
        vk = b.vk()
        half = x_dtype == np.float16
        fmt = vk.VK_FORMAT_R16G16B16A16_SFLOAT if half else vk.VK_FORMAT_R32G32B32A32_SFLOAT
        self.ctx.require_storage_image_format(fmt, "rgba16f" if half else "rgba32f")
        return fmt

    # --- recording ----------------------------------------------------------
    def _write_args(self, jobs: list[Job]) -> tuple[Buffer, Buffer, list[tuple[int, int, int, int]]]:
        """Pack every job's freqs and positions into one argument buffer;
        returns (host buffer, bound buffer, per job (f_off, f_bytes, p_off, p_bytes))."""
        align = max(MIN_BUFFER, self.ctx.info.min_storage_buffer_offset_alignment)
        layout, arrays, end = [], [], 0
        for job in jobs:
            freqs = np.ascontiguousarray(job.req.freqs_pairs, dtype=job.plan.f_dtype).reshape(-1)
            pos = job.req.positions if job.req.positions is not None else np.zeros(1, np.int32)
            f_off = end
            end = -(-(f_off + max(MIN_BUFFER, freqs.nbytes)) // align) * align
            p_off = end
            end = -(-(p_off + max(MIN_BUFFER, pos.nbytes)) // align) * align
            layout.append((f_off, freqs.nbytes, p_off, pos.nbytes))
            arrays.append((freqs, pos))
        host, bound = self._staged("args", end)
        for (f_off, _, p_off, _), (freqs, pos) in zip(layout, arrays):
            if freqs.size:
                host.view(freqs.dtype, freqs.size, f_off)[:] = freqs
            host.view(np.int32, pos.size, p_off)[:] = pos
        return host, bound, layout

    def _record_jobs(self, rec: Recording, jobs: list[Job], args: Buffer,
                     layout: list[tuple[int, int, int, int]]) -> None:
        """Write descriptor sets and record the dispatches of every job."""
        for job, (f_off, _, p_off, p_bytes) in zip(jobs, layout):
            pl, req = job.plan, job.req
            pipe = self.pipeline(pl)
            pair_bytes = 2 * pl.x_dtype.itemsize
            f_pair_bytes = 2 * pl.f_dtype.itemsize
            wx, wy = pl.workgroup
            image_width, image_height = pl.image_extent[:2] if pl.image_extent else (0, 0)
            for ch in pl.chunks:
                dset = rec.new_set(pipe)
                f_binding = (args, f_off + ch.f_base * f_pair_bytes, ch.f_pairs * f_pair_bytes)
                p_binding = (args, p_off, max(MIN_BUFFER, p_bytes))
                if pl.storage == "buffer":
                    x_binding = (job.x_res, job.x_offset + ch.x_base * pair_bytes, ch.x_pairs * pair_bytes)
                    o_binding = (job.out_res, job.out_offset + ch.x_base * pair_bytes, ch.x_pairs * pair_bytes)
                    pipe.write_set(dset, [o_binding, x_binding, f_binding, p_binding])
                else:
                    pipe.write_set(dset, [job.out_res, job.x_res, f_binding, p_binding])
                rec.bind(pipe, dset)
                rec.push_constants(pipe, pipe.pack_push_constants([
                    pl.n_tokens, pl.pairs_per_row, ch.n0, ch.n1, ch.b0, ch.b1, ch.x_base, ch.f_base,
                    req.n_rot, req.n_freq_rows, push_flags(req), image_height, image_width,
                ]))
                rec.dispatch(math.ceil(pl.texels_per_row / wx), math.ceil((ch.n1 - ch.n0) / wy), ch.b1 - ch.b0)

    # --- numpy in, numpy out -------------------------------------------------
    def run(self, req: Request, storage: str, out: np.ndarray, want_time: bool = False) -> float | None:
        """Rotate `req.x` into `out` (same shape and dtype) using `storage`.
        With `want_time`, returns the kernel seconds (None without timestamps)."""
        ctx = self.ctx
        ctx.check_open()
        # One allocation holds x (twice that for texture staging + image).
        limit = (ctx.info.max_memory_allocation_size or (1 << 31)) // 2
        if req.x.size * req.x.itemsize > limit:
            return self._run_split(req, storage, out, limit, want_time)
        return self._run_block(req, storage, out, want_time)

    def _run_block(self, req: Request, storage: str, out: np.ndarray, want_time: bool) -> float | None:
        """`run` for a tensor that fits one allocation."""
        pl = self.plan(req, storage)
        if storage == "buffer" and self._importable(req.x, out):
            try:
                return self._run_imported(req, pl, out, want_time)
            except VulkanError:
                pass  # the driver refused this memory: take the copy path
        x_dtype = pl.x_dtype
        if storage == "buffer":
            x_bytes = padded_bytes(req.x.size, x_dtype.itemsize)
            x_host, x_buf = self._staged("x", x_bytes)
            staged_view = x_host.view(x_dtype, req.x.size).reshape(req.shape)
            x_res: Buffer | Image3D = x_buf
        else:
            extent = pl.image_extent
            assert extent is not None  # texture plans always have one
            w, h, d = extent
            x_bytes = w * h * d * 4 * x_dtype.itemsize
            x_host = self.buffer("host_x", x_bytes, host_visible=True)
            staged_view = _packed_view(x_host, extent, x_dtype, req.shape)
            x_res = self.image3d(extent, self._image_format(x_dtype))
        np.copyto(staged_view, req.x, casting="no")
        job = Job(req, pl, x_res, x_res)
        args_host, args, layout = self._write_args([job])
        # Everything the recording depends on; the data itself is not part of it.
        key = (pl, req.n_rot, req.n_freq_rows, push_flags(req), tuple(layout),
               x_host.serial, x_res.serial, args_host.serial, args.serial)
        if storage == "texture3d":
            src = dst = None
            image_host: Buffer | None = x_host
        else:
            src = dst = None if self.unified else (x_host, 0)
            image_host = None
        rec = self._recording(key, lambda r: self._record_numpy_call(
            r, job, args_host, args, layout, src, dst, x_bytes, image_host))
        seconds = self.stream.submit_and_wait([rec], want_time=want_time)
        np.copyto(out, staged_view)
        return seconds

    def _recording(self, key: tuple, record: Callable[[Recording], None]) -> Recording:
        """The cached recording for `key`, recorded by `record` on a miss
        (least recently used recordings are dropped past MAX_RECORDINGS)."""
        rec = self.recordings.get(key)
        if rec is not None:
            self.recordings.move_to_end(key)
            return rec
        rec = Recording(self.stream)
        try:
            record(rec)
        except BaseException:
            self.ctx.release(rec)
            raise
        self.recordings[key] = rec
        if len(self.recordings) > self.MAX_RECORDINGS:
            self.ctx.release(self.recordings.popitem(last=False)[1])
        return rec

    def _run_split(self, req: Request, storage: str, out: np.ndarray, max_bytes: int,
                   want_time: bool) -> float | None:
        """Run a tensor larger than one allocation may be in row blocks: whole
        batch items when one fits, else token ranges (as positions) of each."""
        n, c = req.n_tokens, req.channels
        x3 = req.x.reshape(-1, n, c)  # a view for any layout numpy can reshape without copying
        o3 = out.reshape(-1, n, c) if out.flags.c_contiguous else None
        if o3 is None or not np.shares_memory(o3, out):
            o3 = np.empty(x3.shape, x3.dtype)
        row_bytes = c * req.x.itemsize
        per_batch = max(1, max_bytes // max(1, n * row_bytes))
        seconds = 0.0
        if n * row_bytes <= max_bytes:
            blocks = [(b0, min(x3.shape[0], b0 + per_batch), 0, n) for b0 in range(0, x3.shape[0], per_batch)]
        else:
            tokens = max(1, max_bytes // row_bytes)
            blocks = [(b0, b0 + 1, n0, min(n, n0 + tokens)) for b0 in range(x3.shape[0]) for n0 in range(0, n, tokens)]
        for b0, b1, n0, n1 in blocks:
            sub = replace(req, x=x3[b0:b1, n0:n1], n_tokens=n1 - n0, out=None)
            if (n0, n1) != (0, n):
                rows = req.token_rows[n0:n1]
                sub = replace(sub, positions=rows.astype(np.int32), token_rows=rows, n_rot=n1 - n0)
            seconds += self._run_block(sub, storage, o3[b0:b1, n0:n1], want_time) or 0.0
        if not np.shares_memory(o3, out):
            np.copyto(out, o3.reshape(out.shape))
        return seconds if want_time else None

    def _importable(self, x: np.ndarray, out: np.ndarray) -> bool:
        """Whether `out` (and so the call) can run on imported numpy memory:
        a device with VK_EXT_external_memory_host, a large C-contiguous
        writeable output whose offset inside its first page meets the
        storage-buffer offset alignment."""
        return (
            self.ctx.external_memory_host
            and out.nbytes >= IMPORT_MIN_BYTES
            and self._import_ok(out)
        )

    def _import_ok(self, a: np.ndarray) -> bool:
        info = self.ctx.info
        return (
            a.flags.c_contiguous
            and a.flags.writeable
            and info.min_imported_host_pointer_alignment > 0
            and (a.ctypes.data % info.min_imported_host_pointer_alignment) % info.min_storage_buffer_offset_alignment == 0
        )

    def _run_imported(self, req: Request, pl: Plan, out: np.ndarray, want_time: bool) -> float | None:
        """The zero-copy path. On unified memory the shader reads x and writes
        `out` where they are; on a discrete GPU the imported memory is the
        source and destination of the device's copies (no CPU memcpy). When x
        cannot be imported (strided, read-only, misaligned, or overlapping
        `out`), it is copied into `out` once and rotated in place. The imports
        are destroyed before returning, so no device view outlives the numpy
        memory."""
        x = req.x
        same = x is out or (x.ctypes.data == out.ctypes.data and x.flags.c_contiguous and x.strides == out.strides)
        read_x = not same and self._import_ok(x) and not np.shares_memory(x, out)
        if not same and not read_x:
            np.copyto(out, x, casting="no")
        elif not same and self.unified:
            _prefault(out)  # the device writes it directly
        imports: list[ImportedBuffer] = []
        try:
            out_buf = ImportedBuffer(self.ctx, out.ctypes.data, out.nbytes)
            imports.append(out_buf)
            x_buf = out_buf
            if read_x:
                x_buf = ImportedBuffer(self.ctx, x.ctypes.data, x.nbytes)
                imports.append(x_buf)
            if self.unified:
                job = Job(req, pl, x_buf, out_buf, x_buf.offset, out_buf.offset)
                src = dst = None
            else:
                dev_x = self.buffer("x", padded_bytes(x.size, x.itemsize), host_visible=False)
                job = Job(req, pl, dev_x, dev_x)
                src, dst = (x_buf, x_buf.offset), (out_buf, out_buf.offset)
            args_host, args, layout = self._write_args([job])
            s = self.scratch
            self._record_numpy_call(s, job, args_host, args, layout, src, dst, x.nbytes, None)
            return self.stream.submit_and_wait([s], want_time=want_time)
        except BaseException:
            # A timed-out or failed submission may still use the caller's
            # memory: let the device finish before giving it back.
            try:
                self.ctx.wait_idle()
            except Exception:
                pass
            raise
        finally:
            for imp in imports:
                self.ctx.release(imp)

    def _record_numpy_call(self, s: Recording, job: Job, args_host: Buffer, args: Buffer,
                           layout: list[tuple[int, int, int, int]], src: tuple[Buffer, int] | None,
                           dst: tuple[Buffer, int] | None, nbytes: int, image_host: Buffer | None) -> None:
        """Record one numpy call: upload (args on staging devices; x from
        `src` when given, or into the image from `image_host`), the timed
        dispatches, and the readback (to `dst`, or from the image into
        `image_host`), with the barriers between them."""
        vk = b.vk()
        compute = vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
        transfer = vk.VK_PIPELINE_STAGE_TRANSFER_BIT
        host_stage = vk.VK_PIPELINE_STAGE_HOST_BIT
        shader_rw = vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT
        s.begin()
        if not self.unified or src is not None:
            if not self.unified:
                s.copy_buffer(args_host, args, args.size)
            if src is not None:
                s.copy_buffer(src[0], job.x_res, nbytes, src_offset=src[1])
            s.barrier(transfer, vk.VK_ACCESS_TRANSFER_WRITE_BIT, compute, shader_rw)
        if image_host is not None:
            image = job.x_res
            image.layout = vk.VK_IMAGE_LAYOUT_UNDEFINED  # old contents are not needed
            s.image_layout(image, vk.VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                           vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, 0, transfer, vk.VK_ACCESS_TRANSFER_WRITE_BIT)
            s.copy_buffer_image(image_host, image, to_image=True)
            s.image_layout(image, vk.VK_IMAGE_LAYOUT_GENERAL, transfer, vk.VK_ACCESS_TRANSFER_WRITE_BIT,
                           compute, shader_rw)
        s.timestamp_begin()
        self._record_jobs(s, [job], args, layout)
        s.timestamp_end()
        if image_host is not None:
            s.image_layout(image, vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, compute, vk.VK_ACCESS_SHADER_WRITE_BIT,
                           transfer, vk.VK_ACCESS_TRANSFER_READ_BIT)
            s.copy_buffer_image(image_host, image, to_image=False)
            s.barrier(transfer, vk.VK_ACCESS_TRANSFER_WRITE_BIT, host_stage, vk.VK_ACCESS_HOST_READ_BIT)
        elif dst is not None:
            s.barrier(compute, vk.VK_ACCESS_SHADER_WRITE_BIT, transfer, vk.VK_ACCESS_TRANSFER_READ_BIT)
            s.copy_buffer(job.out_res, dst[0], nbytes, dst_offset=dst[1])
            s.barrier(transfer, vk.VK_ACCESS_TRANSFER_WRITE_BIT, host_stage, vk.VK_ACCESS_HOST_READ_BIT)
        else:
            s.barrier(compute, vk.VK_ACCESS_SHADER_WRITE_BIT, host_stage, vk.VK_ACCESS_HOST_READ_BIT)
        s.end()

    def time_copy(self, nbytes: int) -> float | None:
        """GPU seconds of one vkCmdCopyBuffer of `nbytes` between two device
        buffers (the benchmark's ceiling), from timestamps. Past a quarter of
        maxMemoryAllocationSize the copy is timed on that many bytes and
        scaled linearly (copies of that size already run at full bandwidth)."""
        cap = max(GROWTH, (self.ctx.info.max_memory_allocation_size or (1 << 31)) // 4)
        if nbytes > cap:
            seconds = self.time_copy(cap)
            return None if seconds is None else seconds * nbytes / cap
        src = self.buffer("bench_src", nbytes, host_visible=False)
        dst = self.buffer("bench_dst", nbytes, host_visible=False)
        s = self.scratch
        s.begin()
        s.timestamp_begin()
        s.copy_buffer(src, dst, nbytes)
        s.timestamp_end()
        s.end()
        return self.stream.submit_and_wait([s], want_time=True)

    # --- device-resident arrays ----------------------------------------------
    def new_resource(self, storage: str, shape: tuple[int, ...], dtype: np.dtype) -> Buffer | Image3D:
        """Device memory for an array of `shape` / `dtype` (images start in
        GENERAL layout and stay there)."""
        dtype = np.dtype(dtype)
        if storage == "buffer":
            size = max(MIN_BUFFER, padded_bytes(math.prod(shape), dtype.itemsize))
            for i, buf in enumerate(self.pool):
                if size <= buf.size <= 2 * size:
                    return self.pool.pop(i)
            return Buffer(self.ctx, size, host_visible=self.unified)
        n, c = shape[-2], shape[-1]
        width = (c // 2 + 1) // 2
        extent = image_extent(width, n, int(np.prod(shape[:-2], dtype=np.int64)), self.ctx.info.max_image_dimension_3d)
        image = Image3D(self.ctx, extent, self._image_format(dtype))
        vk = b.vk()
        s = self.scratch
        s.begin()
        s.image_layout(image, vk.VK_IMAGE_LAYOUT_GENERAL, vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, 0,
                       vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                       vk.VK_ACCESS_MEMORY_READ_BIT | vk.VK_ACCESS_MEMORY_WRITE_BIT)
        s.end()
        self.stream.submit_and_wait([s])
        return image

    def free_resource(self, res: Buffer | Image3D) -> None:
        """Return an array's memory: buffers go to the reuse pool (bounded)."""
        if isinstance(res, Buffer) and res.handle is not None:
            self.pool.append(res)
            while sum(p.size for p in self.pool) > self.POOL_BYTES:
                self.ctx.release(self.pool.pop(0))
        else:
            self.ctx.release(res)

    def transfer(self, res: Buffer | Image3D, data: np.ndarray, upload: bool) -> None:
        """Copy numpy `data` into `res` (upload) or `res` into `data`."""
        vk = b.vk()
        dtype = data.dtype
        if isinstance(res, Buffer) and res.host_visible and self.unified:
            # (On a discrete GPU, mapped device-local memory is write-combined
            # and slow to read: go through staging there.)
            view = res.view(dtype, data.size).reshape(data.shape)
            if upload:
                np.copyto(view, data, casting="no")
            else:
                np.copyto(data, view)
            return
        if isinstance(res, Buffer):
            nbytes = data.nbytes
            host = self.buffer("host_transfer", nbytes, host_visible=True)
            view = host.view(dtype, data.size).reshape(data.shape)
        else:
            w, h, d = res.extent
            host = self.buffer("host_transfer", w * h * d * 4 * dtype.itemsize, host_visible=True)
            view = _packed_view(host, res.extent, dtype, data.shape)
        if upload:
            np.copyto(view, data, casting="no")
        s = self.scratch
        s.begin()
        all_cmds = vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT
        mem_rw = vk.VK_ACCESS_MEMORY_READ_BIT | vk.VK_ACCESS_MEMORY_WRITE_BIT
        s.barrier(all_cmds, mem_rw, vk.VK_PIPELINE_STAGE_TRANSFER_BIT, mem_rw)
        if isinstance(res, Buffer):
            if upload:
                s.copy_buffer(host, res, max(MIN_BUFFER, data.nbytes))
            else:
                s.copy_buffer(res, host, max(MIN_BUFFER, data.nbytes))
        else:
            # Resident images live in GENERAL; copies want the transfer layouts.
            transfer = vk.VK_PIPELINE_STAGE_TRANSFER_BIT
            layout = vk.VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL if upload else vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL
            access = vk.VK_ACCESS_TRANSFER_WRITE_BIT if upload else vk.VK_ACCESS_TRANSFER_READ_BIT
            s.image_layout(res, layout, all_cmds, mem_rw, transfer, access)
            s.copy_buffer_image(host, res, to_image=upload)
            s.image_layout(res, vk.VK_IMAGE_LAYOUT_GENERAL, transfer, access, all_cmds, mem_rw)
        s.barrier(vk.VK_PIPELINE_STAGE_TRANSFER_BIT, vk.VK_ACCESS_TRANSFER_WRITE_BIT, all_cmds, mem_rw)
        s.end()
        self.stream.submit_and_wait([s])
        if not upload:
            np.copyto(data, view)

    def run_resident(self, jobs: list[Job], want_time: bool = False) -> float | None:
        """Run several jobs on device-resident resources in one submission;
        with `want_time`, returns the kernel seconds of all of them."""
        self.ctx.check_open()
        args_host, args, layout = self._write_args(jobs)
        key = ("resident", args_host.serial, args.serial, tuple(layout)) + tuple(
            (j.plan, j.req.n_rot, j.req.n_freq_rows, push_flags(j.req), j.x_res.serial, j.out_res.serial) for j in jobs
        )
        rec = self._recording(key, lambda r: self._record_resident(r, jobs, args_host, args, layout))
        return self.stream.submit_and_wait([rec], want_time=want_time)

    def _record_resident(self, s: Recording, jobs: list[Job], args_host: Buffer, args: Buffer,
                         layout: list[tuple[int, int, int, int]]) -> None:
        vk = b.vk()
        s.begin()
        compute = vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
        all_cmds = vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT
        mem_rw = vk.VK_ACCESS_MEMORY_READ_BIT | vk.VK_ACCESS_MEMORY_WRITE_BIT
        shader_rw = vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT
        if not self.unified:
            s.copy_buffer(args_host, args, args.size)
        # Earlier work on these arrays (uploads, other dispatches) happens-before.
        s.barrier(all_cmds, mem_rw, compute, shader_rw)
        s.timestamp_begin()
        self._record_jobs(s, jobs, args, layout)
        s.timestamp_end()
        s.barrier(compute, vk.VK_ACCESS_SHADER_WRITE_BIT, all_cmds, mem_rw)
        s.end()


def _packed_view(host: Buffer, extent: tuple[int, int, int], dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """The part of a staging buffer laid out as an image's texel rows that
    holds the tensor: [rows, C] inside [rows, parts * width * 4], where each
    tensor row takes `parts` image rows of `width` texels."""
    w, h, d = extent
    c = shape[-1]
    parts = -(-((c // 2 + 1) // 2) // w)
    rows = int(np.prod(shape[:-1], dtype=np.int64))
    packed = host.view(dtype, w * h * d * 4)[: rows * parts * w * 4].reshape(rows, parts * w * 4)
    return packed[:, :c].reshape(shape)
