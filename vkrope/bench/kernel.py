"""The benchmark behind `vkrope bench`: kernel time and bandwidth from
timestamp queries, with the table and with frequencies computed in the
shader (`vkrope.AxialFreqs`) side by side; the same run's two ceilings (the
texel-copy shader over the same tensor, the roofline of a one-texel kernel,
and vkCmdCopyBuffer); end-to-end `vkrope.apply`, device-resident calls,
numpy's best, and (when importable) torch's SAM2 formulation and the same
op written with wgpu-py.

Bytes moved are what the kernel reads and writes in device memory: x, out
and the table (2 * x + table), or the generated frequencies' per-column
words instead of the table. Kernel GB/s are counted on those bytes; the
texel copy's on its own (2 * x). All ratios are measured in one run, on
one machine, side by side. A ceiling over more bytes than the device
copies at once (bench/timing.py) is timed on fewer and scaled: each row
says on how many (`texel_copy_timed_bytes`, `copy_timed_bytes`), and the
table, the notes and the chart say which values are scaled."""

from __future__ import annotations

import functools
import json
import math
import os
import platform
import reprlib
import statistics
import sys
import time
from datetime import datetime, timezone
from types import SimpleNamespace
from typing import Any, Callable

import numpy as np

from ..charts import figure, import_matplotlib, save_figure
from ..files import write_whole
from ..ops import sam2
from ..ops.lowering import lower
from .baselines import numpy_rope
from .timing import copy_timed_bytes, texel_copy_timed_bytes, time_copy, time_request, time_texel_copy, timed_bytes
from ..device import Device
from ..spec_checks import MAX_HEAD_DIM, MAX_POSITION
from ..freqs import AxialFreqs
from ..arguments import STORAGES
from ..runtime.dtypes import BFLOAT16, TENSOR_DTYPES, as_dtype

# What the chart reads from each row (rows of older runs lack the last two).
ROW_KEYS = ("shape", "dtype", "storage", "kernel_gbps", "texel_copy_gbps", "copy_gbps", "memcpy_gbps",
            "bytes_moved", "apply_s", "x_bytes", "freqs")

QUICK_SHAPES = [(1, 256, 256), (1, 1792, 256), (1, 4096, 256), (8, 4096, 256)]
FULL_SHAPES = QUICK_SHAPES + [(32, 4096, 256), (64, 4096, 256), (256, 4096, 256)]
# A shape of 256 MiB or more takes at most 3 repeats (each row's "repeats" says how many it took): a second each
# on lavapipe, of a run that would take many minutes otherwise
BIG_BYTES, BIG_REPEATS = 256 << 20, 3


def median_time(fn: Callable[[], Any], repeats: int, warmup: int = 1) -> float:
    """Median wall-clock seconds of `repeats` calls of `fn` after `warmup` ones."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _numpy_fp16_best(x: np.ndarray, f: np.ndarray, repeats: int) -> tuple[float, str]:
    """numpy has no 16-bit complex type: time the two usual paths (widen to
    complex64, or the dtype's own arithmetic: ml_dtypes' for bfloat16), keep
    the faster."""
    def direct() -> np.ndarray:
        re, im = x[..., 0::2], x[..., 1::2]
        c, s = f[..., 0::2], f[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = re * c - im * s
        out[..., 1::2] = re * s + im * c
        return out

    widened = median_time(lambda: numpy_rope(x, f), repeats)
    native = median_time(direct, repeats)
    return (widened, "widen to complex64") if widened <= native else (native, f"{x.dtype.name} arithmetic")


class _Torch:
    """SAM2's formulation: view_as_real(view_as_complex(x) * freqs_cis)."""

    def __init__(self) -> None:
        import torch  # noqa: PLC0415  (optional)

        self.torch = torch
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.name = f"torch {torch.__version__} ({self.device})"

    def sync(self) -> None:
        if self.device == "cuda":
            self.torch.cuda.synchronize()

    def tensor(self, x: np.ndarray) -> Any:
        """x on torch's device (torch reads no ml_dtypes array: bfloat16 goes as its 16-bit words)."""
        if x.dtype in BFLOAT16:
            return self.torch.from_numpy(x.view(np.int16)).view(self.torch.bfloat16).to(self.device)
        return self.torch.from_numpy(x).to(self.device)

    def times(self, x: np.ndarray, f: np.ndarray, repeats: int) -> dict[str, float]:
        torch = self.torch
        xt = self.tensor(x)
        fc = torch.view_as_complex(torch.from_numpy(f.astype(np.float32)).to(self.device).reshape(f.shape[0], -1, 2))

        def op(t: Any) -> Any:  # (a torch tensor: torch is optional)
            tc = torch.view_as_complex(t.float().reshape(*t.shape[:-1], -1, 2))
            return torch.view_as_real(tc * fc).flatten(-2).to(t.dtype)

        def kernel() -> None:
            op(xt)
            self.sync()

        def e2e() -> None:
            y = op(self.tensor(x)).cpu()
            (y.view(torch.int16).numpy().view(x.dtype) if x.dtype in BFLOAT16 else y.numpy())

        return {"op_s": median_time(kernel, repeats), "end_to_end_s": median_time(e2e, repeats)}


WGSL = """
struct Params { texels_per_batch: u32, total: u32, row_groups: u32, pad: u32 };
@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> f: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> o: array<vec4<f32>>;
@group(0) @binding(3) var<uniform> p: Params;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x + gid.y * p.row_groups * 64u;
  if (i >= p.total) { return; }
  let v = x[i];
  let cs = f[i % p.texels_per_batch];
  o[i] = vec4<f32>(v.x * cs.x - v.y * cs.y, v.x * cs.y + v.y * cs.x,
                   v.z * cs.z - v.w * cs.w, v.z * cs.w + v.w * cs.z);
}
"""


class _Wgpu:
    """The op as a wgpu-py user writes it: WGSL, pipeline and buffers made
    once per shape, queue.write_buffer in, queue.read_buffer out (float32)."""

    def __init__(self) -> None:
        import wgpu  # noqa: PLC0415  (optional)

        self.wgpu = wgpu
        adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
        limits = {k: adapter.limits[k] for k in ("max-storage-buffer-binding-size", "max-buffer-size")}
        self.device = adapter.request_device_sync(required_limits=limits)
        self.max_binding = limits["max-storage-buffer-binding-size"]
        self.name = f"wgpu-py {wgpu.__version__} ({adapter.info['device']})"
        module = self.device.create_shader_module(code=WGSL)
        self.pipeline = self.device.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})

    def times(self, x: np.ndarray, f: np.ndarray, repeats: int) -> dict[str, float] | str:
        wgpu = self.wgpu
        if x.dtype != np.float32:
            return "float32 only (WGSL f16 needs an optional feature)"
        if x.nbytes > self.max_binding:
            return f"past wgpu's storage binding limit ({self.max_binding} bytes)"
        dev = self.device
        usage = wgpu.BufferUsage
        xb = dev.create_buffer(size=x.nbytes, usage=usage.STORAGE | usage.COPY_DST)
        fb = dev.create_buffer_with_data(data=np.ascontiguousarray(f, np.float32), usage=usage.STORAGE)
        ob = dev.create_buffer(size=x.nbytes, usage=usage.STORAGE | usage.COPY_SRC)
        total = x.size // 4
        groups = -(-total // 64)
        gx = min(groups, 65535)
        gy = -(-groups // gx)
        params = np.array([f.size // 4, total, gx, 0], np.uint32)
        pb = dev.create_buffer_with_data(data=params, usage=usage.UNIFORM)
        bind = dev.create_bind_group(layout=self.pipeline.get_bind_group_layout(0), entries=[
            {"binding": i, "resource": {"buffer": buf, "offset": 0, "size": buf.size}} for i, buf in enumerate((xb, fb, ob, pb))
        ])

        def run() -> np.ndarray:
            dev.queue.write_buffer(xb, 0, x)
            enc = dev.create_command_encoder()
            cp = enc.begin_compute_pass()
            cp.set_pipeline(self.pipeline)
            cp.set_bind_group(0, bind)
            cp.dispatch_workgroups(gx, gy, 1)
            cp.end()
            dev.queue.submit([enc.finish()])
            return np.frombuffer(dev.queue.read_buffer(ob), np.float32).reshape(x.shape)

        y = run()
        ref = numpy_rope(x, f)
        if not np.allclose(y, ref, atol=1e-4, rtol=1e-4):
            return "wrong result"
        return {"end_to_end_s": median_time(run, repeats)}


HEADER = (f"{'shape':<16} {'dtype':<8} {'storage':<9} {'freqs':<9} {'MiB':>7} {'kernel ms':>9} {'GB/s':>6} "
          f"{'tcopy GB/s':>10} {'tcopy/k':>7} {'copy GB/s':>9} {'apply ms':>9} {'resid ms':>8} {'numpy ms':>9} "
          f"{'np/apply':>8} {'memcpy GB/s':>11} {'torch op':>8} {'torch e2e':>9} {'wgpu ms':>8}")


def run(quick: bool = False, shapes: list[tuple[int, int, int]] | None = None, repeats: int | None = None,
        storages: tuple[str, ...] = STORAGES, dtypes: tuple[str, ...] = TENSOR_DTYPES.names,
        log: Callable[[str], None] = print, json_path: str | None = None) -> dict[str, Any]:
    """Run the benchmark and return its results (see module docstring).
    With `json_path`, the results so far are saved after every row, so a run
    cut short by a time limit still leaves them."""
    shapes = shapes or (QUICK_SHAPES if quick else FULL_SHAPES)
    check_memory(shapes, dtypes)
    reps = repeats or (5 if quick else 9)
    rng = np.random.default_rng(0)
    extras = _competitors()
    rows: list[dict[str, Any]] = []
    with Device() as dev:
        info = dev.info
        result = {
            **run_header(info),
            "torch": extras["torch"] if isinstance(extras["torch"], str) else extras["torch"].name,
            "wgpu": extras["wgpu"] if isinstance(extras["wgpu"], str) else extras["wgpu"].name,
            "quick": quick, "repeats": reps, "rows": rows, "complete": False,
            "notes": "times are medians; kernel from timestamp queries; bytes_moved = 2 * x + table (freqs "
                     "'table') or 2 * x + the generated columns ('generated', vkrope.AxialFreqs); texel_copy = "
                     "glsl/texel_copy.glsl over x (2 * x moved, the roofline of a one-texel kernel); copy = "
                     "vkCmdCopyBuffer moving bytes_moved; apply = end to end from numpy to numpy; resident = "
                     "Device.apply on a DeviceArray; memcpy = numpy copyto of x (all of it); a texel_copy over more "
                     "than one binding holds (maxStorageBufferRange) or a copy over more than a quarter of "
                     "maxMemoryAllocationSize is timed on that many bytes (texel_copy_timed_bytes, "
                     "copy_timed_bytes, else the row's own) and scaled linearly: an extrapolation, marked * in "
                     "the table",
        }
        log(f"device: {info['name']} ({info['type']}), Vulkan {info['api_version']}")
        warn_if_validating(info)
        for name in ("torch", "wgpu"):
            log(f"{name}: {result[name]}")
        log(HEADER)
        for shape in shapes:
            for dtype_name in dtypes:
                x, f = _inputs(rng, shape, as_dtype(dtype_name))
                r = reps if x.nbytes < BIG_BYTES else min(reps, BIG_REPEATS)  # (each row says its own)
                try:
                    shape_rows = _measure(dev, x, f, storages, r)
                except ValueError as exc:  # (a device limit the shape passes: its storage, a row's width)
                    raise ValueError(f"--shapes {'x'.join(map(str, shape))} ({dtype_name}): {exc}") from None
                # Competitors after vkrope: torch's CPU threads keep spinning for a
                # while after each op and would slow lavapipe's threads down.
                competitor = _competitor_times(extras, x, f, r)
                for row in shape_rows:
                    row.update(competitor)
                    rows.append(row)
                    log(_row_line(row))
                note = scaled_note(shape_rows, info)
                if note:
                    log(note)
                if json_path:
                    save_json(result, json_path)
        result["complete"] = True
    return result


VALIDATION_WARNING = ("vkrope: warning: the validation layer is on (VKROPE_VALIDATION): it checks every call, so "
                      "these timings are slower than this device's; unset VKROPE_VALIDATION to benchmark")


def warn_if_validating(info: dict[str, Any]) -> None:
    """VALIDATION_WARNING on stderr where the device `info` runs under the validation layer (VKROPE_VALIDATION):
    it checks every call, so the timings that follow are slower than the device's (the JSON's device facts
    say so too)."""
    if info.get("validation"):
        print(VALIDATION_WARNING, file=sys.stderr)


def _competitors() -> dict[str, Any]:
    """torch and wgpu-py runners, or why each is unavailable."""
    extras: dict[str, Any] = {}
    for name, cls in (("torch", _Torch), ("wgpu", _Wgpu)):
        try:
            extras[name] = cls()
        except Exception as exc:  # noqa: BLE001  (optional competitors)
            extras[name] = f"unavailable: {type(exc).__name__}: {exc}"[:200]
    return extras


def host_bytes(shape: tuple[int, int, int], dtype: np.dtype) -> int:
    """About the host memory one row of the benchmark holds at once: x made in float32 and converted, its
    results and numpy's complex64 baseline (about 6 float32 copies of x), and the [N, C] freqs made in
    float64 (theta, cos, sin, their stack: about 40 bytes a value)."""
    b, n, c = shape
    return b * n * c * (6 * 4 + 2 * np.dtype(dtype).itemsize) + n * c * 40


def available_memory() -> int | None:
    """Bytes the system can give without swapping (Linux's MemAvailable), else the physical memory, else None."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None


def check_memory(shapes: list[tuple[int, int, int]], dtypes: tuple[str, ...]) -> None:
    """A MemoryError naming the first shape whose arrays would not fit in the memory the system has now, before
    anything is measured: with Linux's overcommit numpy's allocation succeeds and the kernel's OOM killer ends
    the process later, with no message (a 1x1x2^32 shape did)."""
    have = available_memory()
    for shape in shapes:
        need = max(host_bytes(shape, as_dtype(d)) for d in dtypes)
        if have is not None and need > have:
            raise MemoryError(f"shape {'x'.join(map(str, shape))} needs about {need / 2**30:.1f} GiB of host memory; "
                              f"this machine has {have / 2**30:.1f} GiB available")


def _inputs(rng: np.random.Generator, shape: tuple[int, int, int], dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """x of `shape` and unit (cos, sin) freqs [N, C] of `dtype`."""
    _, n, c = shape
    x = rng.standard_normal(shape, dtype=np.float32).astype(dtype)
    theta = rng.uniform(-3, 3, (n, c // 2))
    return x, np.stack([np.cos(theta), np.sin(theta)], -1).reshape(n, c).astype(dtype)


def axial_spec(n: int, c: int) -> AxialFreqs | None:
    """SAM2's axial frequencies for N tokens of C channels: the grid closest
    to square (64 x 64 for 4096), None when C % 4 != 0, C is wider than a
    spec's head (MAX_HEAD_DIM) or N > 2^24 (no axial grid has that many
    cells): the table rows are timed alone then."""
    if c % 4 or c > MAX_HEAD_DIM or n > MAX_POSITION:
        return None
    end_x = max(d for d in range(1, math.isqrt(n) + 1) if n % d == 0)
    return AxialFreqs(c, end_x, n // end_x)


def median_of(fn: Callable[[], float | None], r: int) -> float | None:
    """Median of `r` device timings after one warm-up (None when the device
    gave no timestamps)."""
    fn()
    ts = [t for t in (fn() for _ in range(r)) if t]
    return statistics.median(ts) if ts else None


def _measure(dev: Device, x: np.ndarray, f: np.ndarray, storages: tuple[str, ...], r: int) -> list[dict[str, Any]]:
    """vkrope's rows for one shape and dtype: the table per storage, then
    the frequencies computed in the shader (buffer storage), each with
    numpy, memcpy and both device ceilings measured on the same tensor."""
    if x.dtype == np.float32:
        t_np, np_path = median_time(lambda: numpy_rope(x, f), r), "complex64 multiply"
    else:
        t_np, np_path = _numpy_fp16_best(x, f, r)
    dst = np.empty_like(x)
    t_memcpy = median_time(functools.partial(np.copyto, dst, x), r)
    del dst  # (x's size again: not held through the device rows)
    half = x.dtype.itemsize == 2  # 16-bit texels: 8 bytes
    texel_s = median_of(lambda: time_texel_copy(dev, x.nbytes, half), r)
    spec = axial_spec(x.shape[-2], x.shape[-1])
    cases: list[tuple[str, str, Any]] = [(storage, "table", f) for storage in storages]
    if x.dtype.itemsize == 2 and "buffer" in storages:
        # 16-bit x with float32 cos / sin (what a model's float32 rotary
        # module gives): the kernel widens x and, for bfloat16, splits the
        # products exactly (glsl/common.glsl)
        cases.append(("buffer", "table32", f.astype(np.float32)))
    if spec is not None and "buffer" in storages:
        cases.append(("buffer", "generated", spec))
    rows = []
    for storage, kind, freqs in cases:
        moved = 2 * x.nbytes + (freqs.nbytes if kind != "generated" else lower(freqs).columns.nbytes)
        copy_s = median_of(lambda: time_copy(dev, moved // 2), r)  # reads and writes moved / 2
        texel_timed, copy_timed = timed_bytes(dev, x.nbytes, moved // 2, half)  # (fewer than asked: scaled)
        req = sam2.check(x, freqs, storage=storage)
        y = np.empty_like(x)
        kernel = median_of(lambda: time_request(dev, req, y), r)
        t_apply = median_time(lambda: dev.apply(x, freqs, storage=storage), r)
        xd = dev.asarray(x, storage=storage)
        t_resident = median_time(lambda: dev.apply(xd, freqs), r)
        xd.release()
        dev.trim()
        rows.append({
            "shape": list(x.shape), "dtype": x.dtype.name, "storage": storage, "freqs": kind,
            "x_bytes": x.nbytes, "bytes_moved": moved,
            "kernel_s": kernel, "kernel_gbps": moved / kernel / 1e9 if kernel else None,
            "texel_copy_s": texel_s, "texel_copy_gbps": 2 * x.nbytes / texel_s / 1e9 if texel_s else None,
            "texel_copy_over_kernel": (texel_s / kernel) if (kernel and texel_s) else None,
            "texel_copy_timed_bytes": texel_timed, "copy_timed_bytes": copy_timed,
            "copy_s": copy_s, "copy_gbps": moved / copy_s / 1e9 if copy_s else None,
            "copy_over_kernel": (copy_s / kernel) if (kernel and copy_s) else None,
            "apply_s": t_apply, "resident_apply_s": t_resident,
            "numpy_s": t_np, "numpy_path": np_path, "numpy_over_apply": t_np / t_apply,
            "memcpy_s": t_memcpy, "memcpy_gbps": 2 * x.nbytes / t_memcpy / 1e9, "repeats": r,
        })
    return rows


def _competitor_times(extras: dict[str, Any], x: np.ndarray, f: np.ndarray, r: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in ("torch", "wgpu"):
        ext = extras[name]
        if isinstance(ext, str):
            out[name] = ext
            continue
        try:
            out[name] = ext.times(x, f, r)
        except Exception as exc:  # noqa: BLE001
            out[name] = f"failed: {type(exc).__name__}: {exc}"[:200]
    return out


def ceiling_scaling(row: dict[str, Any], device: Any) -> dict[str, tuple[int, int]]:
    """The ceilings of `row` that were timed on fewer bytes and scaled: "texel_copy" and / or "copy", each
    (bytes timed, bytes of the row's ceiling). From the row's own counts; a row of an older run, without them,
    from the `device` facts it ran on (the same rule, bench/timing.py), where they hold the limits."""
    full = {"texel_copy": row["x_bytes"], "copy": row["bytes_moved"] // 2}
    limits = SimpleNamespace(**device) if isinstance(device, dict) else None
    derive = limits is not None and all(_is_number(getattr(limits, k, None), int) and getattr(limits, k) > 0
                                        for k in ("max_storage_buffer_range", "max_memory_allocation_size"))
    scaled = {}
    for kind, nbytes in full.items():
        timed = row.get(f"{kind}_timed_bytes")
        if timed is None and derive:
            timed = texel_copy_timed_bytes(limits, nbytes, row["dtype"] != "float32") if kind == "texel_copy" \
                else copy_timed_bytes(limits, nbytes)
        if timed is not None and timed < nbytes:
            scaled[kind] = (timed, nbytes)
    return scaled


def scaled_note(rows: list[dict[str, Any]], device: Any) -> str | None:
    """The table's line under `rows` (one shape and dtype) naming each ceiling timed on fewer bytes and scaled
    (its values marked *); None where none was."""
    parts: dict[str, None] = {}
    for row in rows:
        for kind, (timed, nbytes) in ceiling_scaling(row, device).items():
            name = "tcopy" if kind == "texel_copy" else f"copy ({row['freqs']})"
            parts[f"{name} timed on {timed / 2**20:.5g} of {nbytes / 2**20:.5g} MiB"] = None
    if not parts:
        return None
    return (f"  * scaled, not measured at this size: {'; '.join(parts)} (past one binding's range or a quarter of "
            "maxMemoryAllocationSize), each time scaled linearly to the whole")


def _row_line(row: dict[str, Any]) -> str:
    tt, wg = row["torch"], row["wgpu"]
    scaled = ceiling_scaling(row, None)
    tc, cp = ("*" if kind in scaled else "" for kind in ("texel_copy", "copy"))
    return (f"{str(tuple(row['shape'])):<16} {row['dtype']:<8} {row['storage']:<9} {row['freqs']:<9} "
            f"{row['bytes_moved'] / 2**20:>7.1f} {_ms(row['kernel_s']):>9} {_num(row['kernel_gbps']):>6} "
            f"{_num(row['texel_copy_gbps']) + tc:>10} {_num(row['texel_copy_over_kernel'], 2) + tc:>7} "
            f"{_num(row['copy_gbps']) + cp:>9} {_ms(row['apply_s']):>9} "
            f"{_ms(row['resident_apply_s']):>8} {_ms(row['numpy_s']):>9} "
            f"{_num(row['numpy_over_apply'], 2):>8} {_num(row['memcpy_gbps']):>11} "
            f"{_ms(tt['op_s']) if isinstance(tt, dict) else '-':>8} "
            f"{_ms(tt['end_to_end_s']) if isinstance(tt, dict) else '-':>9} "
            f"{_ms(wg['end_to_end_s']) if isinstance(wg, dict) else '-':>8}")


def _ms(s: float | None) -> str:
    return "-" if s is None else f"{s * 1e3:.3f}"


def _num(v: float | None, digits: int = 1) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def run_header(info: dict[str, Any] | None = None) -> dict[str, Any]:
    """When and where a benchmark ran: date (now: call it at the start), host, Python, numpy and the device
    (`info`, a Device's; else the one vkrope picks, opened for it). The kernel benchmark's JSON holds it, a
    mode's (--family, --nd, --decode, --overhead) under "run"."""
    if info is None:
        with Device() as dev:
            info = dev.info
    return {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "host": platform.node(),
            "machine": platform.machine(), "python": platform.python_version(), "numpy": np.__version__,
            "device": info}


def check_result(result: Any) -> None:
    """Raise ValueError unless `result` is a `run` result the chart can draw:
    a device name, a date and at least one row with every key it reads,
    each of the type the chart reads (a JSON from elsewhere: --chart-from)."""
    if not isinstance(result, dict) or "rows" not in result or "mode" in result:  # (the modes' JSON: "mode", a
        # list before they said their run)
        raise ValueError("it has no rows: only the kernel benchmark's bench.json has a chart (the JSON of bench "
                         "--family, --nd, --overhead or --decode has none)")
    device = result.get("device")
    named = isinstance(device, dict) and isinstance(device.get("name"), str)
    if not isinstance(result.get("date"), str) or not named:
        raise ValueError("it needs a date and a device name (strings)")
    rows = result.get("rows")
    if not isinstance(rows, list) or not rows:
        raise ValueError("it has no rows")
    for i, row in enumerate(rows):
        missing = [k for k in ROW_KEYS if not isinstance(row, dict) or k not in row]
        if missing:
            raise ValueError(f"row {i} lacks {', '.join(missing)} (a run of an older vkrope? run the benchmark again)")
        _check_row(row, i)


_TEXT_KEYS = ("dtype", "storage", "freqs")
_SIZE_KEYS = ("x_bytes", "bytes_moved", "apply_s")  # on a log axis, or divided by: > 0
_RATE_KEYS = ("kernel_gbps", "texel_copy_gbps", "copy_gbps", "memcpy_gbps")  # null where the run had no timestamps
_TIMED_KEYS = ("texel_copy_timed_bytes", "copy_timed_bytes")  # absent from older runs' rows; compared with sizes


def _check_row(row: dict[str, Any], i: int) -> None:
    """ValueError naming row `i` and its key unless every value the chart
    reads is of its type: shape [B, N, C] of positive ints, names strings,
    sizes finite numbers > 0, rates finite numbers >= 0 or null."""
    shape = row["shape"]
    if not isinstance(shape, list) or len(shape) != 3 or not all(_is_number(v, int) and v > 0 for v in shape):
        raise ValueError(f"row {i}: shape must be a list of 3 positive integers [B, N, C]; got {reprlib.repr(shape)}")
    for key in _TEXT_KEYS:
        if not isinstance(row[key], str):
            raise ValueError(f"row {i}: {key} must be a string; got {reprlib.repr(row[key])}")
    for key in _SIZE_KEYS + _RATE_KEYS:
        value, size = row[key], key in _SIZE_KEYS
        if value is None and not size:
            continue
        if not _is_number(value, (int, float)) or not _finite(value) or value < 0 or (size and value == 0):
            want = "a finite number > 0" if size else "a finite number >= 0, or null"
            raise ValueError(f"row {i}: {key} must be {want}; got {reprlib.repr(value)}")
    for key in _TIMED_KEYS:
        value = row.get(key)
        if value is not None and not (_is_number(value, int) and value > 0):
            raise ValueError(f"row {i}: {key} must be a positive integer, or null; got {reprlib.repr(value)}")


def _is_number(value: Any, types: Any) -> bool:
    return isinstance(value, types) and not isinstance(value, bool)


def _finite(value: float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # (an int of 400 digits: no float holds it)
        return False


def plot(result: dict[str, Any], path: str, what: str = "--plot") -> None:
    """The chart of a run (needs matplotlib, the `bench` extra): kernel GB/s
    against the size of x, one line per dtype, storage and frequency source,
    under the texel-copy roofline of each dtype, with vkCmdCopyBuffer,
    end-to-end calls and numpy's memcpy for scale; every series marks its
    points (a run of one shape draws no line), and a ceiling timed on fewer
    bytes and scaled is drawn hollow there, its legend saying from what size.
    The legend sits outside the axes, so it covers no line. A failed write
    is a ValueError naming `what` (the flag that chose `path`)."""
    check_result(result)
    rows = result["rows"]
    fig = figure(figsize=(11, 6))
    ax = fig.subplots()
    tab20 = import_matplotlib().colormaps["tab20"]
    ax.set_prop_cycle(color=[tab20(i) for i in range(20)])  # ten kernel and end-to-end lines: no colour twice

    def line(sel: list[dict[str, Any]], key: str, style: str, label: str, **kw: Any) -> None:
        pts = [(r["x_bytes"] / 2**20, r[key]) for r in sel if r.get(key)]
        if not pts:
            return
        kind = key[:-len("_gbps")]  # (texel_copy, copy: a ceiling that may be scaled)
        scaled = {r["x_bytes"] / 2**20: got for r in sel
                  if r.get(key) and (got := ceiling_scaling(r, result.get("device")).get(kind))}
        if scaled:  # (an extrapolation, said as one: hollow points, and from what size)
            label += f"; hollow: timed on {min(t for t, _ in scaled.values()) / 2**20:.5g} MiB, scaled linearly"
        (drawn,) = ax.plot(*zip(*sorted(pts)), style, label=label, **kw)
        if scaled:
            ax.plot(*zip(*sorted((x, v) for x, v in pts if x in scaled)), linestyle="none", marker=drawn.get_marker(),
                    markersize=drawn.get_markersize() + 3, markerfacecolor="white", color=drawn.get_color(),
                    alpha=kw.get("alpha"))

    for dtype in sorted({r["dtype"] for r in rows}):
        of_dtype = [r for r in rows if r["dtype"] == dtype]
        shade = 1.0 if dtype == "float32" else 0.55  # the ceilings of each dtype, told apart
        per_shape = list({tuple(r["shape"]): r for r in of_dtype}.values())  # one row per shape for the ceilings
        table_rows = list({tuple(r["shape"]): r for r in of_dtype if r["freqs"] == "table"}.values())
        line(per_shape, "texel_copy_gbps", "s--", f"texel-copy shader, {dtype} (roofline)", color="black", lw=2.2,
             alpha=shade)
        for storage, kind in sorted({(r["storage"], r["freqs"]) for r in of_dtype}):
            sel = [r for r in of_dtype if r["storage"] == storage and r["freqs"] == kind]
            line(sel, "kernel_gbps", "o-", f"vkrope kernel, {dtype} {storage}, {kind} freqs")
            if kind == "table":
                e2e = [dict(r, e2e_gbps=r["bytes_moved"] / r["apply_s"] / 1e9) for r in sel]
                line(e2e, "e2e_gbps", "x:", f"vkrope.apply numpy to numpy, {dtype} {storage}")
        line(table_rows, "copy_gbps", "^-.", f"vkCmdCopyBuffer, same bytes as the {dtype} table kernel", color="grey",
             alpha=shade)
        line(per_shape, "memcpy_gbps", "v:", f"numpy memcpy of x, {dtype} (host)", color="grey", alpha=shade)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("size of x (MiB)")
    ax.set_ylabel("throughput (GB/s = 1e9 bytes moved per second)")
    cut = ", a run cut short" if result.get("complete") is False else ""
    ax.set_title(f"vkrope on {result['device']['name']} ({result['date'][:10]}{cut}): bytes moved per second\n"
                 "kernel bytes = read x + write out + read the table (or the generated columns)", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    save_figure(fig, path, what, dpi=110, bbox_inches="tight")


def save_json(result: dict[str, Any], path: str) -> None:
    """Write the results as JSON, whole or not at all (a Ctrl-C mid-run leaves the last whole one, marked
    incomplete)."""
    text = json.dumps(result, indent=1, default=str).encode()
    write_whole(path, lambda fh: fh.write(text), "--out")
