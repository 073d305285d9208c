"""`vkrope bench --overhead`: what a decode-sized call costs on the host,
against the floor of any call through the `vulkan` package: an empty
command buffer submitted and waited for on the same stream, in the same
process. In one run, rounds alternate between the floor and each call
(tiny resident calls of every operator, numpy and resident, one token, the
position fixed; the fused decode step at batch 1, Hq 32, Hk 8, D 128;
`apply` at (1, 256, 256): numpy in and out, and resident with a resident
table, given `out=` or making its result), so a noisy machine slows them
alike; each row is the median per call and its ratio to the floor's.
The goals of issue #32 are printed beside: a tiny resident `apply` <= 1.5x
the floor; the decode step <= floor + its kernel + 60 us; and #35's, a
resident (1, 256, 256) call <= 60 us."""

from __future__ import annotations

import functools
import statistics
import time
from typing import Any, Callable

import numpy as np

from ..device import Device
from .decode import decode_loops
from .step import fused_and_unfused
from .timing import empty_submission_seconds


def _per_call(step: Callable[[], Any], calls: int) -> list[float]:
    out = []
    for _ in range(calls):
        t0 = time.perf_counter()
        step()
        out.append(time.perf_counter() - t0)
    return out


def calls_of(dev: Device) -> dict[str, Callable[[], Any]]:
    """name -> one call: the decode loops at a fixed position, the fused step, tiny and numpy `apply`."""
    loops = decode_loops(dev)
    out: dict[str, Callable[[], Any]] = {name: functools.partial(step, 100) for name, step in loops.items()
                                         if not name.startswith("_")}
    fused, _, _ = fused_and_unfused(dev, 1)
    out["rope_and_cache resident batch 1"] = lambda: fused(100)
    tiny = dev.asarray(np.ones((1, 1, 2), np.float32))
    table = dev.asarray(np.array([[1.0, 0.0]], np.float32))
    x = np.random.default_rng(0).standard_normal((1, 256, 256)).astype(np.float32)
    freqs = np.tile(np.array([1.0, 0.0], np.float32), (256, 128))
    y = np.empty_like(x)
    out["apply resident (1, 1, 2)"] = lambda: dev.apply(tiny, table, out=tiny)
    out["apply numpy (1, 256, 256)"] = lambda: dev.apply(x, freqs, out=y)
    xr, fr, yr = dev.asarray(x), dev.asarray(freqs), dev.asarray(y)
    out["apply resident (1, 256, 256) out="] = lambda: dev.apply(xr, fr, out=yr)
    out["apply resident (1, 256, 256)"] = lambda: dev.apply(xr, fr)  # (its result made, and dropped)
    out["_keep"] = lambda: (loops, tiny, table, xr, fr, yr)  # (the resident arrays live as long as the calls)
    return out


def decode_kernel_seconds(dev: Device, rounds: int = 50) -> float | None:
    """GPU seconds (timestamps) of the fused decode step of `calls_of` (batch 1, resident, the same shapes and
    tables, its own arrays): the median of `rounds`; None without timestamps."""
    from ..kernels import cache as cache_kernel  # noqa: PLC0415
    from ..ops import decode  # noqa: PLC0415
    from ..runtime import execute  # noqa: PLC0415

    _, _, info = fused_and_unfused(dev, 1)
    cos, sin, q, k, v, q_out, kc, vc = info["arrays"][:8]
    req = decode.check(q, k, v, kc, vc, (cos, sin), np.full((1, 1), 100), out=q_out)

    def timed(rt: Any) -> list[float | None]:
        jobs = [execute.Job(req, execute.plan_for(rt, cache_kernel, req), {"q_out": q_out, "k_cache": kc,
                                                                          "v_cache": vc})]
        return [execute.run(rt, cache_kernel, jobs, want_time=True) for _ in range(rounds)]

    seconds = dev._on_runtime(timed)  # noqa: SLF001  (the benchmark's)
    return None if any(t is None for t in seconds) else statistics.median(seconds)


def run(repeats: int = 7, calls: int = 100, log: Callable[[str], None] = print) -> dict[str, Any]:
    """The floor and every call, alternating, medians over `repeats` rounds of `calls` calls."""
    with Device() as dev:
        table = calls_of(dev)
        names = [n for n in table if not n.startswith("_")]
        for name in names:
            _per_call(table[name], 20)  # warm up: pipelines, buffers, recordings
        floor: list[float] = []
        times: dict[str, list[float]] = {n: [] for n in names}
        for _ in range(repeats):
            floor += dev._on_runtime(empty_submission_seconds, calls)  # noqa: SLF001  (the benchmark's)
            for name in names:
                times[name] += _per_call(table[name], calls)
        f = statistics.median(floor)
        log(f"floor (empty submission + wait, same stream): {f * 1e6:.1f} us")
        log(f"{'call':<40} {'us':>8} {'x floor':>8}")
        rows: list[dict[str, Any]] = []
        for name in names:
            t = statistics.median(times[name])
            rows.append({"call": name, "seconds": t, "over_floor": t / f})
            log(f"{name:<40} {t * 1e6:>8.1f} {t / f:>8.2f}")
        tiny = next(r for r in rows if r["call"] == "apply resident (1, 1, 2)")
        log(f"goal: a tiny resident apply <= 1.5x the floor; measured {tiny['over_floor']:.2f}x")
        for name in ("apply resident (1, 256, 256) out=", "apply resident (1, 256, 256)"):
            row = next(r for r in rows if r["call"] == name)
            log(f"goal (#35): a resident (1, 256, 256) call <= 60 us; {name}: {row['seconds'] * 1e6:.1f} us, "
                f"{row['over_floor']:.2f}x the floor")
        step = statistics.median(times["rope_and_cache resident batch 1"])
        kernel = decode_kernel_seconds(dev)
        if kernel is not None:
            goal = f + kernel + 60e-6
            log(f"goal: the decode step <= floor + its kernel ({kernel * 1e6:.1f} us) + 60 us = {goal * 1e6:.1f} us; "
                f"measured {step * 1e6:.1f} us")
        return {"device": dev.name, "floor_seconds": f, "rounds": repeats, "calls": calls, "rows": rows,
                "decode_kernel_seconds": kernel}


__all__ = ["run", "calls_of", "decode_kernel_seconds"]
