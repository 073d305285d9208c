"""`vkrope bench --decode`, the decode step: `Device.rope_and_cache` (q and
k rotated, k and v written into the KV caches, one submission) against
what it replaces, RoPE followed by a cache copy: q and k rotated by the
table operator into preallocated arrays (one submission), then the rotated
k and the v written into the caches' rows by a row-scatter kernel that takes
the rows as data, as llama.cpp's SET_ROWS (a second submission; here the
same kernel with no q heads and an identity rotation). Both replay one
recording per shape (positions are data in each). Llama-shaped: 32 query
heads, 8 key / value heads, head dim 128, one token per sequence, batch 1
and 8, float32, a 4096-row cache (past lavapipe's binding range at batch 8:
written in fixed slices); all tensors resident. Per-step medians of
alternating rounds, one run.
"""

from __future__ import annotations

import statistics
import time
from typing import Callable

import numpy as np

from ..device import Device, BatchJob
from ..freqs import RopeFreqs
from ..kernels import table
from ..ops import onnx

HQ, HK, D, S_MAX = 32, 8, 128, 4096


def fused_and_unfused(dev: Device, batch: int, s_max: int = S_MAX) -> tuple[Callable[[int], None],
                                                                             Callable[[int], None], dict]:
    """step(position) of the fused step and of RoPE + cache copy over the
    same resident tensors and caches (info: them, and the bytes each moves)."""
    rng = np.random.default_rng(batch)
    spec = RopeFreqs(D, base=500000.0)
    cos, sin = (dev.asarray(t) for t in spec.table(np.arange(s_max)))
    q, k, v = (dev.asarray(rng.standard_normal((batch, h, 1, D)).astype(np.float32)) for h in (HQ, HK, HK))
    q_out = dev.asarray(np.zeros((batch, HQ, 1, D), np.float32))
    kc, vc = (dev.asarray(np.zeros((batch, HK, s_max, D), np.float32)) for _ in range(2))
    item = 4

    def fused(p: int) -> None:
        dev.rope_and_cache(q, k, v, kc, vc, (cos, sin), np.full((batch, 1), p), out=q_out)

    yq = dev.asarray(np.zeros((batch, HQ, 1, D), np.float32))
    yk = dev.asarray(np.zeros((batch, HK, 1, D), np.float32))
    no_q = np.zeros((batch, 0, 1, D), np.float32)  # (no q heads: the kernel only writes the rows)
    identity = (dev.asarray(np.ones((s_max, D // 2), np.float32)), dev.asarray(np.zeros((s_max, D // 2), np.float32)))

    def unfused(p: int) -> None:
        pos = np.full((batch, 1), p)
        rq, rk = onnx.check_onnx(q, cos, sin, pos, out=yq), onnx.check_onnx(k, cos, sin, pos, out=yk)
        dev._run(table, [BatchJob(rq), BatchJob(rk)])
        dev.rope_and_cache(no_q, yk, v, kc, vc, identity, pos)  # the row scatter: k and v into their rows

    tokens = batch
    # bytes of the tensors each kernel reads and writes (the tables' rows aside)
    moved = {"fused_bytes": tokens * D * item * (2 * HQ + 4 * HK),  # q in, q out, k in, v in, k and v rows out
             "unfused_bytes": tokens * D * item * (2 * HQ + 6 * HK)}  # + the rotated k out and in again
    return fused, unfused, {"arrays": (cos, sin, q, k, v, q_out, kc, vc, yq, yk, identity), **moved}


def _loop(step: Callable[[int], None], steps: int, start: int) -> float:
    t0 = time.perf_counter()
    for i in range(steps):
        step(start + i)
    return (time.perf_counter() - t0) / steps


def step_rows(dev: Device, steps: int = 64, rounds: int = 7, log: Callable[[str], None] = print) -> list[dict]:
    """Per-step time of the fused step and of RoPE + cache copy, batch 1 and 8."""
    rows = []
    log(f"{'decode step (Hq 32, Hk 8, D 128, fp32)':<40} {'fused us':>9} {'rope+copy us':>12} {'speed-up':>8} "
        f"{'fused KiB':>9} {'rope+copy KiB':>13} {'recordings':>10}")
    for batch in (1, 8):
        fused, unfused, info = fused_and_unfused(dev, batch)
        _loop(fused, steps, 0)  # warm up: pipelines, buffers, recordings
        _loop(unfused, steps, 0)
        made = dev.stats()["recordings"]
        f_t, u_t = [], []
        for r in range(rounds):
            f_t.append(_loop(fused, steps, r * steps))
            u_t.append(_loop(unfused, steps, r * steps))
        made = dev.stats()["recordings"] - made
        f, u = statistics.median(f_t), statistics.median(u_t)
        rows.append({"batch": batch, "heads": [HQ, HK], "head_dim": D, "steps": steps, "rounds": rounds,
                     "fused_step_s": f, "rope_then_copy_step_s": u, "speedup": u / f,
                     "recordings_made": made,
                     "fused_bytes": info["fused_bytes"], "rope_then_copy_bytes": info["unfused_bytes"]})
        log(f"{'batch ' + str(batch):<40} {f * 1e6:>9.1f} {u * 1e6:>12.1f} {u / f:>8.2f} "
            f"{info['fused_bytes'] / 1024:>9.0f} {info['unfused_bytes'] / 1024:>13.0f} {made:>10}")
        del info
    return rows


__all__ = ["step_rows", "fused_and_unfused"]
