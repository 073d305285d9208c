"""`vkrope bench --family`: the table operators on Llama-like shapes, side
by side with onnxruntime's CPU RotaryEmbedding (when installed), with the
bytes each call moves between host and device.

Rows (float32, rotate-half, position_ids into an 8192-row cache):
- prefill `[1, 32, 512, 128]`, positions 0..511;
- decode `[8, 32, 1, 128]`, one token per sequence at scattered positions.
For each: the kernel (timestamps), numpy in / numpy out with numpy caches,
the same with device-resident caches, a fully resident call (x and caches on
the device, result left there), and onnxruntime's CPU op. All times are
medians of one run on one machine.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .kernel import median_of, median_time
from .timing import time_request
from ..device import Device
from ..freqs import RopeFreqs
from ..kernels import table
from ..ops import onnx

SHAPES = {"prefill": (1, 32, 512, 128), "decode": (8, 32, 1, 128)}
MAX_POS = 8192


def _caches(d: int) -> tuple[np.ndarray, np.ndarray]:
    inv = 1.0 / 10000.0 ** (np.arange(0, d, 2, dtype=np.float64) / d)
    ang = np.outer(np.arange(MAX_POS), inv)
    return np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)


def _onnxruntime(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, pos: np.ndarray, repeats: int) -> Any:
    """Median seconds of onnxruntime's CPU RotaryEmbedding, or why not."""
    try:
        import onnxruntime as ort  # noqa: PLC0415  (optional)
        from onnx import TensorProto, helper  # noqa: PLC0415
    except ImportError as exc:
        return f"unavailable: {exc}"
    node = helper.make_node("RotaryEmbedding", ["X", "cos", "sin", "pos"], ["Y"])
    graph = helper.make_graph([node], "rope", [
        helper.make_tensor_value_info("X", TensorProto.FLOAT, list(x.shape)),
        helper.make_tensor_value_info("cos", TensorProto.FLOAT, list(cos.shape)),
        helper.make_tensor_value_info("sin", TensorProto.FLOAT, list(sin.shape)),
        helper.make_tensor_value_info("pos", TensorProto.INT64, list(pos.shape)),
    ], [helper.make_tensor_value_info("Y", TensorProto.FLOAT, list(x.shape))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    try:
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001  (an old onnxruntime without opset 23)
        return f"failed: {type(exc).__name__}: {exc}"[:200]
    feeds = {"X": x, "cos": cos, "sin": sin, "pos": pos.astype(np.int64)}
    y = sess.run(None, feeds)[0]
    return {"end_to_end_s": median_time(lambda: sess.run(None, feeds), repeats), "result": y}


def _table_bytes(req: table.Request, dev: Device) -> int:
    """Bytes of tables the call packs and uploads (resident caches: none)."""
    pl = table.plan(req, dev._rt.limits)
    return sum(a.nbytes for seg in table.tables(req, pl) for a in seg if isinstance(a, np.ndarray))


def run(repeats: int = 7, log: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """Measure every row; returns them (also logged as a table)."""
    rows = []
    rng = np.random.default_rng(0)
    with Device() as dev:
        log(f"{'row':<8} {'shape':<18} {'kernel ms':>9} {'numpy ms':>9} {'MiB':>6} {'res.cache ms':>12} {'MiB':>6} "
            f"{'resident ms':>11} {'KiB':>6} {'gen kernel':>10} {'gen exact':>9} {'ort ms':>8}")
        for name, shape in SHAPES.items():
            b, h, s, d = shape
            x = rng.standard_normal(shape).astype(np.float32)
            cos, sin = _caches(d)
            pos = (np.arange(s)[None, :].repeat(b, 0) if name == "prefill"
                   else rng.integers(0, MAX_POS, (b, s)))
            cos_d, sin_d, x_d = dev.asarray(cos), dev.asarray(sin), dev.asarray(x)
            req = onnx.check_onnx(x, cos, sin, pos)
            out = np.empty_like(x)
            kernel = median_of(lambda: time_request(dev, req, out, table), repeats)
            t_numpy = median_time(lambda: dev.rotary_embedding(x, cos, sin, pos), repeats)
            t_cached = median_time(lambda: dev.rotary_embedding(x, cos_d, sin_d, pos), repeats)
            t_resident = median_time(lambda: dev.rotary_embedding(x_d, cos_d, sin_d, pos), repeats)
            # The same call with the frequencies computed in the shader (RopeFreqs).
            gen = {}
            for angle in ("float32", "exact"):
                greq = onnx.check_onnx(x, RopeFreqs(d, angle=angle), None, pos)
                gout = np.empty_like(x)
                gen[angle] = median_of(lambda: time_request(dev, greq, gout, table), repeats)
                assert np.abs(gout - out).max() < 1e-3, "generated and table results disagree"
            row_of = pos.size * 4
            moved_numpy = 2 * x.nbytes + _table_bytes(req, dev)
            moved_cached = 2 * x.nbytes + row_of
            ort = _onnxruntime(x, cos, sin, pos, repeats)
            if isinstance(ort, dict):
                assert np.abs(ort.pop("result") - out).max() < 1e-4, "onnxruntime and vkrope disagree"
            row = {"row": name, "shape": list(shape), "dtype": "float32", "cache_rows": MAX_POS,
                   "cache_bytes": cos.nbytes + sin.nbytes, "kernel_s": kernel,
                   "numpy_s": t_numpy, "numpy_bytes_moved": moved_numpy,
                   "resident_cache_s": t_cached, "resident_cache_bytes_moved": moved_cached,
                   "resident_s": t_resident, "resident_bytes_moved": row_of, "onnxruntime": ort,
                   "generated_kernel_s": gen["float32"], "generated_exact_kernel_s": gen["exact"]}
            rows.append(row)
            ort_ms = f"{ort['end_to_end_s'] * 1e3:8.3f}" if isinstance(ort, dict) else "       -"
            log(f"{name:<8} {str(shape):<18} {(kernel or 0) * 1e3:>9.3f} {t_numpy * 1e3:>9.3f} "
                f"{moved_numpy / 2**20:>6.2f} {t_cached * 1e3:>12.3f} {moved_cached / 2**20:>6.2f} "
                f"{t_resident * 1e3:>11.3f} {row_of / 1024:>6.2f} {(gen['float32'] or 0) * 1e3:>10.3f} "
                f"{(gen['exact'] or 0) * 1e3:>9.3f} {ort_ms}")
            for a in (cos_d, sin_d, x_d):
                a.release()
    log("MiB / KiB: bytes each call moves between host and device (x in and out, the tables it packs, "
        "the per-token cache rows); res.cache: caches resident, x numpy; resident: x and caches resident; "
        "gen: the kernel with cos / sin computed in the shader (vkrope.RopeFreqs, float32 and exact angle)")
    missing = {r["onnxruntime"] for r in rows if isinstance(r["onnxruntime"], str)}
    for why in sorted(missing):  # (said on the terminal, not only in the JSON: an empty column is a question)
        log(f"ort: onnxruntime's op {why} (pip install '.[bench]' gives onnx and onnxruntime)")
    return rows
