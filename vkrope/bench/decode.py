"""`vkrope bench --decode`: what a call costs beyond its kernel, where a
decode loop lives.

- Decode loops of each public operator, numpy and resident, tables and
  in-shader frequencies: the per-step time with the position advancing by
  one each step against the same loop at a fixed position, measured in
  one run with the two loops alternating (goal: <= 1.1x, since the
  advancing loop replays the same recording), and the recordings each
  loop made.
- The decode step fused (`Device.rope_and_cache`) against RoPE followed by
  a cache copy (vkrope/bench/step.py).
- The KV cache: the step into fp8 against float16 caches, and the context
  shift of each cache dtype (vkrope/bench/kv.py).
- The numpy path's own cost: `Device.apply` numpy in, numpy out (arrays
  passed again, and fresh ones), against
  the same call on a resident array, at (1, 256, 256) float32, as the
  median of interleaved pairs.
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable

import numpy as np

from ..device import Device
from ..freqs import RopeFreqs
from ..runtime.array import DeviceArray

MAX_POS = 4096


def _tables(rows: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    inv = 1.0 / 10000.0 ** (np.arange(width) / width)
    a = np.outer(np.arange(rows), inv)
    return np.cos(a).astype(np.float32), np.sin(a).astype(np.float32)


def decode_loops(dev: Device) -> dict[str, Callable[[int], Any]]:
    """name -> step(position): one decode step of each operator and form."""
    rng = np.random.default_rng(0)
    cos, sin = _tables(MAX_POS, 64)
    pairs = np.stack([cos, sin], -1).reshape(MAX_POS, 128)
    full_c, full_s = np.concatenate([cos, cos], 1), np.concatenate([sin, sin], 1)
    spec = RopeFreqs(128)
    x = rng.standard_normal((32, 1, 128)).astype(np.float32)  # apply: 32 heads, one token
    x4 = rng.standard_normal((1, 32, 1, 128)).astype(np.float32)  # ONNX [B, H, S, D]
    q = rng.standard_normal((1, 1, 32, 128)).astype(np.float32)  # ExecuTorch [B, S, H, D]
    k = rng.standard_normal((1, 1, 8, 128)).astype(np.float32)
    dx, dx4, dq, dk = dev.asarray(x), dev.asarray(x4), dev.asarray(q), dev.asarray(k)
    dpairs, dcos, dsin = dev.asarray(pairs), dev.asarray(cos), dev.asarray(sin)
    dfc, dfs = dev.asarray(full_c), dev.asarray(full_s)
    keep = [dx, dx4, dq, dk, dpairs, dcos, dsin, dfc, dfs]
    loops: dict[str, Callable[[int], Any]] = {
        "apply numpy table": lambda p: dev.apply(x, pairs, positions=np.array([p])),
        "apply numpy spec": lambda p: dev.apply(x, spec, positions=np.array([p])),
        "apply resident table": lambda p: dev.apply(dx, dpairs, positions=np.array([p])),
        "apply resident spec": lambda p: dev.apply(dx, spec, positions=np.array([p])),
        "rotary_embedding numpy table": lambda p: dev.rotary_embedding(x4, cos, sin, np.array([[p]])),
        "rotary_embedding numpy spec": lambda p: dev.rotary_embedding(x4, spec, None, np.array([[p]])),
        "rotary_embedding resident table": lambda p: dev.rotary_embedding(dx4, dcos, dsin, np.array([[p]])),
        "rotary_embedding resident spec": lambda p: dev.rotary_embedding(dx4, spec, None, np.array([[p]])),
        "apply_rotary_emb_hf numpy table": lambda p: dev.apply_rotary_emb_hf(q, k, full_c, full_s, p),
        "apply_rotary_emb_hf numpy spec": lambda p: dev.apply_rotary_emb_hf(q, k, spec, None, p),
        "apply_rotary_emb_hf resident table": lambda p: dev.apply_rotary_emb_hf(dq, dk, dfc, dfs, p),
        "apply_rotary_emb_hf resident spec": lambda p: dev.apply_rotary_emb_hf(dq, dk, spec, None, p),
        # ExecuTorch's LLM op takes the step's rows (it has no position): the caller slices them
        "apply_rotary_emb numpy table": lambda p: dev.apply_rotary_emb(q, k, cos[p:p + 1], sin[p:p + 1]),
        "apply_rotary_emb resident table": lambda p: dev.apply_rotary_emb(dq, dk, cos[p:p + 1], sin[p:p + 1]),
        "apply_many numpy table": lambda p: dev.apply_many([(x, pairs, {"positions": np.array([p])}),
                                                            (x, pairs, {"positions": np.array([p + 1])})]),
    }
    loops["_keep"] = lambda p: keep  # (the resident arrays live as long as the loops)
    return loops


def _loop_time(step: Callable[[int], Any], steps: int, advancing: bool, start: int) -> float:
    t0 = time.perf_counter()
    for i in range(steps):
        step(start + i if advancing else start)
    return (time.perf_counter() - t0) / steps


def decode_rows(dev: Device, steps: int = 64, rounds: int = 7, log: Callable[[str], None] = print) -> list[dict]:
    """Per-step time of each decode loop, advancing against fixed (alternating, medians of `rounds`)."""
    rows = []
    log(f"{'decode loop':<36} {'fixed us':>9} {'advancing us':>12} {'ratio':>6} {'recordings':>10}")
    loops = decode_loops(dev)
    for name, step in loops.items():
        if name.startswith("_"):
            continue
        _loop_time(step, steps, True, 100)  # warm up: pipelines, buffers, the recording
        made = dev.stats()["recordings"]
        fixed, advancing = [], []
        for r in range(rounds):
            fixed.append(_loop_time(step, steps, False, 100 + r * steps))
            advancing.append(_loop_time(step, steps, True, 100 + r * steps))
        made = dev.stats()["recordings"] - made
        f, a = statistics.median(fixed), statistics.median(advancing)
        rows.append({"loop": name, "steps": steps, "rounds": rounds, "fixed_step_s": f, "advancing_step_s": a,
                     "advancing_over_fixed": a / f, "recordings_made": made})
        log(f"{name:<36} {f * 1e6:>9.1f} {a * 1e6:>12.1f} {a / f:>6.2f} {made:>10}")
    return rows


def overhead_row(dev: Device, pairs: int = 200, log: Callable[[str], None] = print) -> dict:
    """The numpy path's cost over the resident one at (1, 256, 256) float32:
    medians of `pairs` interleaved calls, and their difference; numpy x and
    `out` passed again on every call (a decode loop's: their imports are
    kept), and, for comparison, a fresh result array on every call (x and
    the result copied through the argument arena)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 256, 256)).astype(np.float32)
    a = rng.uniform(-np.pi, np.pi, (256, 128))
    f = np.stack([np.cos(a), np.sin(a)], -1).reshape(256, 256).astype(np.float32)
    dx = dev.asarray(x)
    out = np.empty_like(x)
    for _ in range(50):
        dev.apply(x, f, out=out)
        dev.apply(x.copy(), f)
        _release(dev.apply(dx, f))
    numpy_t, fresh_t, resident_t = [], [], []
    for _ in range(pairs):
        fresh_x = x.copy()
        t0 = time.perf_counter()
        dev.apply(x, f, out=out)
        t1 = time.perf_counter()
        y = dev.apply(dx, f)
        t2 = time.perf_counter()
        dev.apply(fresh_x, f)
        t3 = time.perf_counter()
        _release(y)
        numpy_t.append(t1 - t0)
        resident_t.append(t2 - t1)
        fresh_t.append(t3 - t2)
    n, r, fr = statistics.median(numpy_t), statistics.median(resident_t), statistics.median(fresh_t)
    diffs = statistics.median(np.subtract(numpy_t, resident_t))
    fresh_diffs = statistics.median(np.subtract(fresh_t, resident_t))
    log(f"numpy path over resident, (1, 256, 256) float32: numpy {n * 1e6:.0f} us, resident {r * 1e6:.0f} us, "
        f"median difference of {pairs} pairs {diffs * 1e6:.0f} us (goal 50 us); fresh x and result every call "
        f"{fr * 1e6:.0f} us, {fresh_diffs * 1e6:.0f} us over resident")
    return {"shape": [1, 256, 256], "dtype": "float32", "pairs": pairs, "numpy_s": n, "resident_s": r,
            "median_pair_difference_s": diffs, "fresh_s": fr, "fresh_median_pair_difference_s": fresh_diffs}


def _release(y: Any) -> None:
    if isinstance(y, DeviceArray):
        y.release()


def run(repeats: int = 7, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Both measurements on one device, one run."""
    from .kv import fp8_rows, shift_rows  # noqa: PLC0415
    from .step import step_rows  # noqa: PLC0415

    with Device() as dev:
        return {"device": dev.name, "overhead": overhead_row(dev, log=log),
                "decode": decode_rows(dev, rounds=repeats, log=log),
                "step": step_rows(dev, rounds=repeats, log=log),
                "fp8": fp8_rows(dev, rounds=repeats, log=log),
                "shift": shift_rows(dev, rounds=repeats, log=log)}


__all__ = ["run", "decode_rows", "overhead_row", "decode_loops"]
