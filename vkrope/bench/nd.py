"""`vkrope bench --nd`: N-D axial RoPE on a Flux-sized and a Wan-sized call,
frequencies computed in the shader (`vkrope.NdFreqs`, the exact angle and
the float32 one) against the table path (the (cos, sin) table diffusers'
rotary modules return, read by the interleaved operator), with the bytes
each call moves between host and device.

Rows (float32):
- flux: `[1, 24, 4608, 128]` (`[B, H, S, D]`), 512 text tokens (ids 0) and
  a 64 x 64 latent (ids (0, row, col)); axes 16 / 56 / 56, theta 1e4;
- wan: `[1, 7800, 12, 128]` (`[B, S, H, D]`, Wan's attention layout), a
  5 x 30 x 52 latent (t, h, w); axes 44 / 42 / 42 (table path: the
  ExecuTorch LLM operator, which reads that layout).
Kernel times are medians of timestamp queries; end-to-end times medians of
numpy-in, numpy-out calls; all in one run on one device.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .kernel import median_of, median_time
from .timing import time_request
from ..device import Device
from ..nd_freqs import NdFreqs, grid_ids
from ..kernels import interleaved, table
from ..ops import executorch, nd, sam2

ROWS: dict[str, tuple[tuple[int, ...], tuple[int, ...], int]] = {  # shape, axes widths, token axis
    "flux": ((1, 24, 4608, 128), (16, 56, 56), -2),
    "wan": ((1, 7800, 12, 128), (44, 42, 42), -3),
}


def _ids(name: str) -> np.ndarray:
    if name == "flux":
        return np.concatenate([np.zeros((512, 3)), grid_ids((1, 64, 64))])
    return grid_ids((5, 30, 52))


def run(repeats: int = 5, log: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """Measure both rows; returns them (also logged as a table)."""
    rows = []
    rng = np.random.default_rng(0)
    with Device() as dev:
        log(f"{'row':<5} {'shape':<20} {'exact ms':>9} {'float32 ms':>10} {'table ms':>9} {'table/exact':>11} "
            f"{'e2e exact ms':>12} {'e2e table ms':>12} {'MiB exact':>9} {'MiB table':>9}")
        for name, (shape, axes, token_axis) in ROWS.items():
            x = rng.standard_normal(shape).astype(np.float32)
            ids = _ids(name)
            kernel: dict[str, float | None] = {}
            results = {}
            for angle in ("exact", "float32"):
                spec = NdFreqs(axes, 10000.0, angle=angle)
                req = nd.check_nd(x, spec, ids, token_axis=token_axis)
                out = np.empty_like(x)
                kernel[angle] = median_of(lambda: time_request(dev, req, out, table), repeats)
                results[angle] = out
            spec = NdFreqs(axes, 10000.0)
            cos, sin = spec.cos_sin(ids)
            c, s = cos[:, ::2], sin[:, ::2]  # one per pair (diffusers' table holds each twice)
            treq: Any
            top: Any
            if token_axis == -2:
                pairs = np.stack([c, s], -1).reshape(len(ids), -1)
                treq, top, table_bytes = sam2.check(x, pairs), interleaved, pairs.nbytes
            else:  # [B, S, H, D]: the ExecuTorch LLM operator reads that layout
                treq, top, table_bytes = executorch.check_llm(x, x[:, :, :1], c, s)[0], table, c.nbytes + s.nbytes

            def e2e_table() -> None:
                time_request(dev, treq, np.empty_like(x), top)  # numpy in, numpy out, through the same checks

            tout = np.empty_like(x)
            kernel["table"] = median_of(lambda: time_request(dev, treq, tout, top), repeats)
            assert np.abs(tout - results["exact"]).max() < 1e-4 * np.abs(x).max(), "table and in-shader results disagree"
            e2e_exact = median_time(lambda: dev.apply_nd(x, spec, ids, token_axis=token_axis), repeats)
            e2e_tab = median_time(e2e_table, repeats)
            moved_exact = 2 * x.nbytes + nd.check_nd(x, spec, ids, token_axis=token_axis).row_of.nbytes
            moved_table = 2 * x.nbytes + table_bytes
            k_e, k_f, k_t = (kernel[k] or 0.0 for k in ("exact", "float32", "table"))
            row = {"row": name, "shape": list(shape), "axes": list(axes), "tokens": len(ids), "dtype": "float32",
                   "exact_kernel_s": kernel["exact"], "float32_kernel_s": kernel["float32"],
                   "table_kernel_s": kernel["table"], "exact_end_to_end_s": e2e_exact, "table_end_to_end_s": e2e_tab,
                   "exact_bytes_moved": moved_exact, "table_bytes_moved": moved_table}
            rows.append(row)
            log(f"{name:<5} {str(list(shape)):<20} {k_e * 1e3:>9.2f} {k_f * 1e3:>10.2f} {k_t * 1e3:>9.2f} "
                f"{(k_t / k_e if k_e else 0):>11.2f} {e2e_exact * 1e3:>12.2f} {e2e_tab * 1e3:>12.2f} "
                f"{moved_exact / 2**20:>9.2f} {moved_table / 2**20:>9.2f}")
    log("exact / float32: cos / sin computed in the shader from the ids (vkrope.NdFreqs angle modes); table: the "
        "(cos, sin) table read by the interleaved operator (flux) or the ExecuTorch LLM operator (wan); e2e: numpy "
        "in and out; MiB: bytes each call moves between host and device (x in and out, and the ids or the table)")
    return rows


__all__ = ["run"]
