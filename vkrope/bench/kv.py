"""`vkrope bench --decode`, the KV cache over a long conversation: the
fused decode step into fp8 caches against float16 ones, and the context
shift (`Device.shift_cache`) of each cache dtype.

- fp8 rows: `rope_and_cache` at batch 1 and 8 (Hq 32, Hk 8, D 128, a
  4096-row cache, float16 q / k / v, resident) into float16 and into
  float8_e4m3fn caches, rounds alternating: per-step time, the bytes each
  step writes into the caches and the caches' size.
- shift rows: a StreamingLLM shift of a full [1, 8, 4096, 128] cache (4
  sinks kept, 1024 tokens dropped, the 3068 after them moved down with
  their values), and the paged form (keys turned in place, values stay), per
  cache dtype: time per shift and the bytes it moves (each key read, its
  float32 rotation written to scratch and read back, written; each moved
  value read, copied through scratch, written).
"""

from __future__ import annotations

import statistics
import time
from typing import Callable

import numpy as np

from ..device import Device
from ..freqs import RopeFreqs
from ..runtime.dtypes import FLOAT16, FLOAT32, ml_dtype

# (the benchmark times every dtype: ml_dtypes is imported with it)
BF16, E4M3FN, E5M2 = (ml_dtype(n) for n in ("bfloat16", "float8_e4m3fn", "float8_e5m2"))

HQ, HK, D, S_MAX = 32, 8, 128, 4096
SINKS, DROPPED = 4, 1024


def _round_means(step: Callable[[int], None], steps: int, rounds: int) -> list[float]:
    """Seconds per step of each of `rounds` rounds of `steps` steps."""
    out = []
    for r in range(rounds):
        t0 = time.perf_counter()
        for i in range(steps):
            step(r * steps + i)
        out.append((time.perf_counter() - t0) / steps)
    return out


def fp8_rows(dev: Device, steps: int = 64, rounds: int = 7, log: Callable[[str], None] = print) -> list[dict]:
    """The decode step into float16 and into fp8 (e4m3fn) caches, alternating rounds, batch 1 and 8."""
    rows = []
    spec = RopeFreqs(D, base=500000.0, angle="exact")
    log(f"{'decode step into a cache (fp16 q/k/v)':<40} {'fp16 us':>8} {'fp8 us':>8} {'fp8/fp16':>8} "
        f"{'fp16 KiB':>9} {'fp8 KiB':>8} {'cache MiB fp16 / fp8':>21}")
    for batch in (1, 8):
        rng = np.random.default_rng(batch)
        q, k, v = (dev.asarray(rng.standard_normal((batch, h, 1, D)).astype(np.float16)) for h in (HQ, HK, HK))
        q_out = dev.asarray(np.zeros((batch, HQ, 1, D), np.float16))
        caches = {dt: [dev.asarray(np.zeros((batch, HK, S_MAX, D), dt)) for _ in range(2)]
                  for dt in (FLOAT16, E4M3FN)}
        scales = {FLOAT16: (None, None), E4M3FN: (0.05, 0.02)}

        def step(dt: np.dtype) -> Callable[[int], None]:
            kc, vc = caches[dt]
            ks, vs = scales[dt]

            def one(p: int) -> None:
                dev.rope_and_cache(q, k, v, kc, vc, spec, np.full((batch, 1), p % S_MAX), out=q_out, k_scale=ks,
                                   v_scale=vs)
            return one

        steps_of = {dt: step(dt) for dt in caches}
        for s in steps_of.values():
            _round_means(s, steps, 1)  # warm up: pipelines, recordings
        times: dict[np.dtype, list[float]] = {dt: [] for dt in caches}
        for _ in range(rounds):
            for dt, s in steps_of.items():
                times[dt] += _round_means(s, steps, 1)
        t16, t8 = statistics.median(times[FLOAT16]), statistics.median(times[E4M3FN])
        written = {dt: 2 * batch * HK * D * dt.itemsize for dt in caches}  # one k and one v row per head
        size = {dt: 2 * batch * HK * S_MAX * D * dt.itemsize for dt in caches}
        rows.append({"batch": batch, "heads": [HQ, HK], "head_dim": D, "s_max": S_MAX, "steps": steps,
                     "rounds": rounds, "float16_step_s": t16, "fp8_e4m3fn_step_s": t8, "fp8_over_float16": t8 / t16,
                     "float16_bytes_written": written[FLOAT16], "fp8_bytes_written": written[E4M3FN],
                     "float16_cache_bytes": size[FLOAT16], "fp8_cache_bytes": size[E4M3FN]})
        log(f"{'batch ' + str(batch):<40} {t16 * 1e6:>8.1f} {t8 * 1e6:>8.1f} {t8 / t16:>8.2f} "
            f"{written[FLOAT16] / 1024:>9.0f} {written[E4M3FN] / 1024:>8.0f} "
            f"{size[FLOAT16] / 2**20:>12.0f} / {size[E4M3FN] / 2**20:.0f}")
        for a in (q, k, v, q_out, *caches[FLOAT16], *caches[E4M3FN]):
            a.release()
    return rows


def shift_rows(dev: Device, rounds: int = 5, log: Callable[[str], None] = print) -> list[dict]:
    """One StreamingLLM shift of a full cache per dtype, contiguous (rows move) and paged (keys turn)."""
    spec = RopeFreqs(D, base=500000.0, angle="exact")
    old = np.arange(SINKS + DROPPED, S_MAX)[None]
    new = old - DROPPED
    moved = old.size
    rows = []
    log(f"{'context shift (Hk 8, D 128, 3068 tokens)':<42} {'ms':>8} {'MiB moved':>10} {'GB/s':>7}")
    for dt in (FLOAT32, FLOAT16, BF16, E4M3FN, E5M2):
        rng = np.random.default_rng(0)
        data = (rng.standard_normal((1, HK, S_MAX, D)) * 4).astype(np.float32).astype(dt)
        kc, vc = dev.asarray(data), dev.asarray(data)
        paged_k = dev.asarray(data.reshape(S_MAX, 1, HK, D))  # [blocks, block_size 1, Hk, D]: slot = token
        slots = old.copy()
        kinds = {"contiguous (rows move)": lambda: dev.shift_cache(kc, spec, old, new, v_cache=vc),
                 "paged (keys turn)": lambda: dev.shift_cache(paged_k, spec, old, new, slots=slots)}
        for kind, shift in kinds.items():
            shift()  # warm up (the keys turn back and forth: a shift's cost does not depend on the values)
            times = []
            for _ in range(rounds):
                t0 = time.perf_counter()
                shift()
                times.append(time.perf_counter() - t0)
            t = statistics.median(times)
            values = moved * HK * D
            k_bytes = values * (2 * dt.itemsize + 8)  # read, scratch float32 written and read, written
            v_bytes = values * 4 * dt.itemsize if kind.startswith("contiguous") else 0  # read, scratch, written
            total = k_bytes + v_bytes
            rows.append({"dtype": dt.name, "kind": kind, "tokens": moved, "heads": HK, "head_dim": D,
                         "rounds": rounds, "shift_s": t, "bytes_moved": total, "gb_per_s": total / t / 1e9})
            log(f"{dt.name + ' ' + kind:<42} {t * 1e3:>8.2f} {total / 2**20:>10.1f} {total / t / 1e9:>7.2f}")
        for a in (kc, vc, paged_k):
            a.release()
    return rows


__all__ = ["fp8_rows", "shift_rows"]
