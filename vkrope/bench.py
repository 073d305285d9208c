"""The benchmark behind `vkrope bench`: kernel time and bandwidth from
timestamp queries, the same run's device-copy bandwidth, end-to-end
`vkrope.apply`, device-resident calls, numpy's best, and (when importable)
torch's SAM2 formulation and the same op written with wgpu-py.

All ratios are measured in one run, on one machine, side by side."""

from __future__ import annotations

import json
import platform
import statistics
import time
from datetime import datetime, timezone
from typing import Any, Callable

import numpy as np

from .ops import interleaved
from .baselines import numpy_rope
from .device import Device

QUICK_SHAPES = [(1, 256, 256), (1, 1792, 256), (1, 4096, 256), (8, 4096, 256)]
FULL_SHAPES = QUICK_SHAPES + [(32, 4096, 256), (64, 4096, 256), (256, 4096, 256)]


def _median_time(fn: Callable[[], Any], repeats: int, warmup: int = 1) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _numpy_fp16_best(x: np.ndarray, f: np.ndarray, repeats: int) -> tuple[float, str]:
    """numpy has no float16 complex type: time the two usual paths, keep the faster."""
    def direct() -> np.ndarray:
        re, im = x[..., 0::2], x[..., 1::2]
        c, s = f[..., 0::2], f[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = re * c - im * s
        out[..., 1::2] = re * s + im * c
        return out

    widened = _median_time(lambda: numpy_rope(x, f), repeats)
    native = _median_time(direct, repeats)
    return (widened, "widen to complex64") if widened <= native else (native, "float16 arithmetic")


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

    def times(self, x: np.ndarray, f: np.ndarray, repeats: int) -> dict[str, float]:
        torch = self.torch
        xt = torch.from_numpy(x).to(self.device)
        fc = torch.view_as_complex(torch.from_numpy(f.astype(np.float32)).to(self.device).reshape(f.shape[0], -1, 2))

        def op(t):
            tc = torch.view_as_complex(t.float().reshape(*t.shape[:-1], -1, 2))
            return torch.view_as_real(tc * fc).flatten(-2).to(t.dtype)

        def kernel() -> None:
            op(xt)
            self.sync()

        def e2e() -> None:
            op(torch.from_numpy(x).to(self.device)).cpu().numpy()

        return {"op_s": _median_time(kernel, repeats), "end_to_end_s": _median_time(e2e, repeats)}


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
        return {"end_to_end_s": _median_time(run, repeats)}


HEADER = (f"{'shape':<16} {'dtype':<7} {'storage':<9} {'MiB':>7} {'kernel ms':>9} {'GB/s':>6} "
          f"{'copy GB/s':>9} {'k/copy':>6} {'apply ms':>9} {'resid ms':>8} {'numpy ms':>9} "
          f"{'np/apply':>8} {'memcpy GB/s':>11} {'torch op':>8} {'torch e2e':>9} {'wgpu ms':>8}")


def run(quick: bool = False, shapes: list[tuple[int, int, int]] | None = None, repeats: int | None = None,
        storages: tuple[str, ...] = ("buffer", "texture3d"), dtypes: tuple[str, ...] = ("float32", "float16"),
        log: Callable[[str], None] = print, json_path: str | None = None) -> dict[str, Any]:
    """Run the benchmark and return its results (see module docstring).
    With `json_path`, the results so far are saved after every row, so a run
    cut short by a time limit still leaves them."""
    shapes = shapes or (QUICK_SHAPES if quick else FULL_SHAPES)
    reps = repeats or (5 if quick else 9)
    rng = np.random.default_rng(0)
    extras = _competitors()
    rows: list[dict[str, Any]] = []
    with Device() as dev:
        info = dev.info
        result = {
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "host": platform.node(), "machine": platform.machine(), "python": platform.python_version(),
            "numpy": np.__version__, "device": info,
            "torch": extras["torch"] if isinstance(extras["torch"], str) else extras["torch"].name,
            "wgpu": extras["wgpu"] if isinstance(extras["wgpu"], str) else extras["wgpu"].name,
            "quick": quick, "repeats": reps, "rows": rows, "complete": False,
            "notes": "times are medians; kernel from timestamp queries; apply = end to end from numpy to numpy; "
                     "resident = Device.apply on a DeviceArray; copy = vkCmdCopyBuffer moving the same bytes "
                     "as the kernel; memcpy = numpy copyto of x",
        }
        log(f"device: {info['name']} ({info['type']}), Vulkan {info['api_version']}")
        for name in ("torch", "wgpu"):
            log(f"{name}: {result[name]}")
        log(HEADER)
        for shape in shapes:
            for dtype_name in dtypes:
                x, f = _inputs(rng, shape, np.dtype(dtype_name))
                r = max(3, reps if x.nbytes < (256 << 20) else 3)
                shape_rows = _measure(dev, x, f, storages, r)
                # Competitors after vkrope: torch's CPU threads keep spinning for a
                # while after each op and would slow lavapipe's threads down.
                competitor = _competitor_times(extras, x, f, r)
                for row in shape_rows:
                    row.update(competitor)
                    rows.append(row)
                    log(_row_line(row))
                if json_path:
                    save_json(result, json_path)
        result["complete"] = True
    return result


def _competitors() -> dict[str, Any]:
    """torch and wgpu-py runners, or why each is unavailable."""
    extras: dict[str, Any] = {}
    for name, cls in (("torch", _Torch), ("wgpu", _Wgpu)):
        try:
            extras[name] = cls()
        except Exception as exc:  # noqa: BLE001  (optional competitors)
            extras[name] = f"unavailable: {type(exc).__name__}: {exc}"[:200]
    return extras


def _inputs(rng: np.random.Generator, shape: tuple[int, int, int], dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """x of `shape` and unit (cos, sin) freqs [N, C] of `dtype`."""
    _, n, c = shape
    x = rng.standard_normal(shape, dtype=np.float32).astype(dtype)
    theta = rng.uniform(-3, 3, (n, c // 2))
    return x, np.stack([np.cos(theta), np.sin(theta)], -1).reshape(n, c).astype(dtype)


def _measure(dev: Device, x: np.ndarray, f: np.ndarray, storages: tuple[str, ...], r: int) -> list[dict[str, Any]]:
    """vkrope's rows for one shape and dtype (one per storage), with numpy,
    memcpy and the device copy measured on the same bytes."""
    moved = 2 * x.nbytes + f.nbytes
    if x.dtype == np.float32:
        t_np, np_path = _median_time(lambda: numpy_rope(x, f), r), "complex64 multiply"
    else:
        t_np, np_path = _numpy_fp16_best(x, f, r)
    dst = np.empty_like(x)
    t_memcpy = _median_time(lambda: np.copyto(dst, x), r)
    del dst
    copies = [s for s in (dev._time_copy(moved // 2) for _ in range(r)) if s]
    copy_s = statistics.median(copies) if copies else None
    rows = []
    for storage in storages:
        req = interleaved.check(x, f, storage=storage)
        out = np.empty_like(x)
        timed = [dev.run(req, out) for _ in range(r + 1)][1:]
        kernels = [k for k in timed if k is not None]
        kernel = statistics.median(kernels) if len(kernels) == len(timed) else None
        t_apply = _median_time(lambda: dev.apply(x, f, storage=storage), r)
        xd = dev.asarray(x, storage=storage)
        t_resident = _median_time(lambda: dev.apply(xd, f), r)
        xd.release()
        dev.trim()
        rows.append({
            "shape": list(x.shape), "dtype": x.dtype.name, "storage": storage, "bytes_moved": moved,
            "kernel_s": kernel, "kernel_gbps": moved / kernel / 1e9 if kernel else None,
            "copy_s": copy_s, "copy_gbps": moved / copy_s / 1e9 if copy_s else None,
            "kernel_over_copy": (copy_s / kernel) if (kernel and copy_s) else None,
            "apply_s": t_apply, "resident_apply_s": t_resident,
            "numpy_s": t_np, "numpy_path": np_path, "numpy_over_apply": t_np / t_apply,
            "memcpy_s": t_memcpy, "memcpy_gbps": 2 * x.nbytes / t_memcpy / 1e9,
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


def _row_line(row: dict[str, Any]) -> str:
    tt, wg = row["torch"], row["wgpu"]
    return (f"{str(tuple(row['shape'])):<16} {row['dtype']:<7} {row['storage']:<9} {row['bytes_moved'] / 2**20:>7.1f} "
            f"{_ms(row['kernel_s']):>9} {_num(row['kernel_gbps']):>6} {_num(row['copy_gbps']):>9} "
            f"{_num(row['kernel_over_copy'], 2):>6} {_ms(row['apply_s']):>9} "
            f"{_ms(row['resident_apply_s']):>8} {_ms(row['numpy_s']):>9} "
            f"{_num(row['numpy_over_apply'], 2):>8} {_num(row['memcpy_gbps']):>11} "
            f"{_ms(tt['op_s']) if isinstance(tt, dict) else '-':>8} "
            f"{_ms(tt['end_to_end_s']) if isinstance(tt, dict) else '-':>9} "
            f"{_ms(wg['end_to_end_s']) if isinstance(wg, dict) else '-':>8}")


def _ms(s: float | None) -> str:
    return "-" if s is None else f"{s * 1e3:.3f}"


def _num(v: float | None, digits: int = 1) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def plot(result: dict[str, Any], path: str) -> None:
    """GB/s against tensor size per dtype and storage, with the device-copy
    and numpy-memcpy ceilings as lines (needs matplotlib)."""
    import matplotlib  # noqa: PLC0415  (optional)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, ax = plt.subplots(figsize=(8, 5))
    rows = result["rows"]
    for dtype in sorted({r["dtype"] for r in rows}):
        for storage in sorted({r["storage"] for r in rows}):
            sel = [r for r in rows if r["dtype"] == dtype and r["storage"] == storage and r["kernel_gbps"]]
            if sel:
                ax.plot([r["bytes_moved"] / 2**20 for r in sel], [r["kernel_gbps"] for r in sel], "o-",
                        label=f"vkrope kernel {dtype} {storage}")
            sel = [r for r in rows if r["dtype"] == dtype and r["storage"] == storage]
            ax.plot([r["bytes_moved"] / 2**20 for r in sel], [r["bytes_moved"] / r["apply_s"] / 1e9 for r in sel],
                    "x:", label=f"vkrope.apply end to end {dtype} {storage}")
    first = [r for r in rows if r["storage"] == rows[0]["storage"] and r["dtype"] == rows[0]["dtype"]]
    ax.plot([r["bytes_moved"] / 2**20 for r in first], [r["copy_gbps"] or 0 for r in first], "k--",
            label="device copy (vkCmdCopyBuffer)")
    ax.plot([r["bytes_moved"] / 2**20 for r in first], [r["memcpy_gbps"] for r in first], "k-.",
            label="numpy memcpy")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("bytes moved per call (MiB): read x + read freqs + write out")
    ax.set_ylabel("GB/s")
    ax.set_title(f"vkrope on {result['device']['name']} ({result['date'][:10]})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def save_json(result: dict[str, Any], path: str) -> None:
    """Write the results as JSON."""
    with open(path, "w") as fh:
        json.dump(result, fh, indent=1, default=str)


def plot_svg(result: dict[str, Any], path: str) -> None:
    """The same chart as `plot`, as a plain SVG, for machines without
    matplotlib (the offline GPU machine)."""
    import math

    rows = result["rows"]
    series: list[tuple[str, list[tuple[float, float]], str]] = []
    colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
    for dtype in sorted({r["dtype"] for r in rows}):
        for storage in sorted({r["storage"] for r in rows}):
            sel = [r for r in rows if r["dtype"] == dtype and r["storage"] == storage]
            pts = [(r["bytes_moved"] / 2**20, r["kernel_gbps"]) for r in sel if r["kernel_gbps"]]
            series.append((f"kernel {dtype} {storage}", pts, colors[len(series) % len(colors)]))
            pts = [(r["bytes_moved"] / 2**20, r["bytes_moved"] / r["apply_s"] / 1e9) for r in sel]
            series.append((f"apply end to end {dtype} {storage}", pts, colors[len(series) % len(colors)]))
    first = [r for r in rows if r["storage"] == rows[0]["storage"] and r["dtype"] == rows[0]["dtype"]]
    series.append(("device copy", [(r["bytes_moved"] / 2**20, r["copy_gbps"]) for r in first if r["copy_gbps"]], "#000"))
    series.append(("numpy memcpy", [(r["bytes_moved"] / 2**20, r["memcpy_gbps"]) for r in first], "#888"))
    xs = [x for _, pts, _ in series for x, _ in pts]
    ys = [y for _, pts, _ in series for _, y in pts if y > 0]
    x0, x1 = math.log10(min(xs)), math.log10(max(xs)) + 1e-9
    y0, y1 = math.log10(min(ys)) - 0.1, math.log10(max(ys)) + 0.1
    w, h, m = 800, 500, 60

    def sx(v: float) -> float:
        return m + (math.log10(v) - x0) / (x1 - x0) * (w - 2 * m)

    def sy(v: float) -> float:
        return h - m - (math.log10(v) - y0) / (y1 - y0) * (h - 2 * m)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{w / 2}" y="20" text-anchor="middle" font-size="14">vkrope on {result["device"]["name"]} '
           f'({result["date"][:10]}): GB/s against MiB moved (log-log)</text>',
           f'<line x1="{m}" y1="{h - m}" x2="{w - m}" y2="{h - m}" stroke="black"/>',
           f'<line x1="{m}" y1="{m}" x2="{m}" y2="{h - m}" stroke="black"/>']
    for e in range(math.floor(y0), math.ceil(y1) + 1):
        if y0 <= e <= y1:
            out.append(f'<text x="{m - 5}" y="{sy(10 ** e) + 4}" text-anchor="end">{10 ** e:g}</text>')
    for e in range(math.floor(x0), math.ceil(x1) + 1):
        if x0 <= e <= x1:
            out.append(f'<text x="{sx(10 ** e)}" y="{h - m + 15}" text-anchor="middle">{10 ** e:g}</text>')
    for i, (label, pts, color) in enumerate(series):
        if pts:
            path_d = " ".join(f"{'M' if j == 0 else 'L'}{sx(x):.1f},{sy(y):.1f}" for j, (x, y) in enumerate(pts))
            dash = ' stroke-dasharray="4,3"' if "end to end" in label or label in ("device copy", "numpy memcpy") else ""
            out.append(f'<path d="{path_d}" fill="none" stroke="{color}" stroke-width="1.5"{dash}/>')
        out.append(f'<text x="{m + 10}" y="{m + 14 * i}" fill="{color}">{label}</text>')
    out.append("</svg>")
    with open(path, "w") as fh:
        fh.write("\n".join(out))
