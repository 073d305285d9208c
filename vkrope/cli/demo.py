"""`vkrope demo` (EdgeTAM's memory attention rotated on the device, against the float64 reference and
numpy) and `vkrope info` (the Vulkan devices and the one vkrope picks)."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

import numpy as np

from ..runtime.dtypes import BFLOAT16, ml_dtype


def _max_error(y: np.ndarray, ref: np.ndarray) -> tuple[float, float]:
    """Max |y - ref|, and that error relative to the largest |ref| (float32)
    or in units of the ulp of y's 16-bit dtype at each reference value
    (float16, bfloat16: the spacing of that dtype's neighbours there)."""
    diff = np.abs(y.astype(np.float64) - ref)
    err = float(diff.max())
    if y.dtype != np.float32:
        r = np.abs(ref.astype(y.dtype)).astype(np.float64)
        if y.dtype in BFLOAT16:  # 8 significant bits; 2^-133 apart below 2^-126
            _, e = np.frexp(np.where(r > 0, r, 1.0))
            ulp = np.exp2(np.maximum(e - 8, -133).astype(np.float64))
        else:
            ulp = np.spacing(r.astype(np.float16)).astype(np.float64)
        return err, float(np.max(diff / ulp))
    return err, err / float(np.abs(ref).max())


def _fmt(rel: float, dtype: Any) -> str:
    return f"{rel:.1e}" if np.dtype(dtype) == np.float32 else f"{rel:.2f} ulp"


def cmd_demo(args: argparse.Namespace) -> int:
    """EdgeTAM memory attention, rotated on the Vulkan device."""
    import vkrope
    from vkrope.bench.baselines import numpy_rope
    from vkrope.bench.timing import best_seconds

    dev = vkrope.default_device()
    print(f"device: {dev.name} ({dev.info['type']}, Vulkan {dev.info['api_version']})")
    rng = np.random.default_rng(0)
    ok = True
    times: list[tuple[float, float]] = []  # (vkrope, numpy) seconds of each row numpy also ran
    q_freqs = vkrope.axial_freqs(256, 64, 64)  # [4096, 256]: EdgeTAM queries, 64x64 grid
    k_freqs = vkrope.axial_freqs(256, 16, 16)  # [256, 256]: one memory frame, 16x16 grid
    print(f"{'tensor':<40} {'dtype':<8} {'max |err|':>10} {'rel/ulps':>9} {'vkrope ms':>10} {'numpy ms':>9}")
    for dtype in (np.float32, np.float16, ml_dtype("bfloat16")):
        q = rng.standard_normal((1, 4096, 256)).astype(dtype)
        fq = q_freqs.astype(dtype)
        y = vkrope.apply(q, fq)
        err, rel = _max_error(y, vkrope.apply_reference(q, fq))
        t_vk = best_seconds(lambda: vkrope.apply(q, fq))
        t_np = best_seconds(lambda: numpy_rope(q, fq))
        times.append((t_vk, t_np))
        ok &= rel < 1e-6 if dtype == np.float32 else rel <= (1.0 if dtype == np.float16 else 0.5)  # bfloat16: rounded once
        print(f"{'queries [1, 4096, 256], 64x64 axial':<40} {np.dtype(dtype).name:<8} {err:>10.2e} {_fmt(rel, dtype):>9} "
              f"{t_vk * 1e3:>10.3f} {t_np * 1e3:>9.3f}")

        k = rng.standard_normal((1, 7 * 256 + 4, 256)).astype(dtype)
        fk = k_freqs.astype(dtype)
        y = vkrope.apply(k, fk, repeat=7, exclude_last=4)
        err, rel = _max_error(y, vkrope.apply_reference(k, fk, repeat=7, exclude_last=4))
        same_tail = bool(np.array_equal(y[:, -4:], k[:, -4:]))
        t_vk = best_seconds(lambda: vkrope.apply(k, fk, repeat=7, exclude_last=4))
        fk_full = np.concatenate([np.tile(fk, (7, 1)), np.tile(np.array([1, 0], dtype), (4, 128))])
        t_np = best_seconds(lambda: numpy_rope(k, fk_full))
        times.append((t_vk, t_np))
        ok &= same_tail and (rel < 1e-6 if dtype == np.float32 else rel <= (1.0 if dtype == np.float16 else 0.5))
        print(f"{'keys 7x256 + 4 ptr (repeat=7, excl=4)':<40} {np.dtype(dtype).name:<8} {err:>10.2e} {_fmt(rel, dtype):>9} "
              f"{t_vk * 1e3:>10.3f} {t_np * 1e3:>9.3f}")
    spec = vkrope.AxialFreqs(256, 64, 64)  # the same grid, cos / sin computed in the shader
    q = rng.standard_normal((1, 4096, 256)).astype(np.float32)
    y = vkrope.apply(q, spec)
    err, rel = _max_error(y, vkrope.apply_reference(q, spec.table()))
    t_vk = best_seconds(lambda: vkrope.apply(q, spec))
    ok &= rel < 1e-6
    print(f"{'queries, AxialFreqs (no table)':<40} {'float32':<8} {err:>10.2e} {_fmt(rel, np.float32):>9} "
          f"{t_vk * 1e3:>10.3f} {'-':>9}")
    print("rel/ulps: float32 max error over max |ref|; float16 / bfloat16 max error in ulps of that dtype")
    print("times: best of 5, end to end from numpy to numpy; numpy = complex64 multiply "
          "(16-bit types widened to float32), with freqs materialised for repeat/exclusion")
    _demo_ceiling(dev, q, q_freqs, times)
    print("result: " + ("correct (matches the float64 reference)" if ok else "WRONG"))
    return 0 if ok else 1


def _demo_ceiling(dev: Any, q: np.ndarray, freqs: np.ndarray, times: list[tuple[float, float]]) -> None:
    """Where the kernel stands against the driver's own ceiling, and, from
    the rows' `times` (vkrope, numpy), which of the two was faster here (on
    a CPU driver, numpy mostly: why)."""
    from vkrope.bench.timing import time_request, time_texel_copy
    from vkrope.ops import sam2

    req = sam2.check(q, freqs)
    out = np.empty_like(q)
    time_request(dev, req, out)  # warm-up
    kernel = min((t for t in (time_request(dev, req, out) for _ in range(5)) if t), default=None)
    time_texel_copy(dev, q.nbytes, False)
    floor = min((t for t in (time_texel_copy(dev, q.nbytes, False) for _ in range(5)) if t), default=None)
    if kernel and floor:
        print(f"kernel alone (queries, float32): {kernel * 1e3:.3f} ms; this driver's texel-copy shader over the "
              f"same tensor: {floor * 1e3:.3f} ms, so the kernel runs at {floor / kernel:.0%} of its ceiling")
    for line in demo_verdict(times, str(dev.info["type"]).lower() == "cpu"):
        print(line)
    print("GPU measurements, where there are any: docs/PERFORMANCE.md in vkrope's repository")


def demo_verdict(times: list[tuple[float, float]], cpu: bool) -> list[str]:
    """The demo's lines on which was faster, from its rows' (vkrope, numpy) seconds; on a CPU driver where
    numpy wins most rows, why."""
    faster = sum(t_vk < t_np for t_vk, t_np in times)
    lines = [f"vkrope was faster than numpy on {faster} of the {len(times)} rows numpy ran"]
    if cpu and 2 * faster < len(times):
        lines.append("numpy wins most rows here: this Vulkan device is the CPU itself (a software driver), so vkrope "
                     "adds a copy in and out and runs each texel as a shader invocation on the same cores that numpy "
                     "uses directly")
    return lines


def cmd_info(args: argparse.Namespace) -> int:
    """Each Vulkan device and the facts vkrope depends on. Where none can be
    chosen (VKROPE_DEVICE matches none, or none is usable) the devices are
    listed all the same, then the error says why (exit 1): a bad VKROPE_*
    value too."""
    import vkrope

    devs = vkrope.devices()
    try:
        chosen = vkrope.default_device().info
    except (vkrope.VulkanUnavailableError, ValueError) as exc:
        if not devs:
            raise
        chosen, unusable = None, exc
    if args.json:
        print(json.dumps({"devices": devs, "chosen": chosen}, indent=2, default=str))
    else:
        _print_devices(devs, chosen)
    if chosen is None:
        raise unusable
    return 0


def _print_devices(devs: list[dict[str, Any]], chosen: dict[str, Any] | None) -> None:
    """`vkrope info`'s lines: each device, and the one vkrope uses and why
    (or that it uses none)."""
    for d in devs:
        mark = "*" if chosen is not None and d["index"] == chosen["index"] else " "
        print(f"{mark}[{d['index']}] {d['name']} ({d['type']}), Vulkan {d['api_version']}, {d['driver']}")
        print(f"     maxStorageBufferRange {d['max_storage_buffer_range']}, maxImageDimension3D "
              f"{d['max_image_dimension_3d']}, 16-bit storage {d['storage_buffer_16bit']}, "
              f"external host memory {d['external_memory_host']}, timestamps {d['timestamp_valid_bits'] > 0}")
        print("     float32 subnormals: " + ("kept (shaders ask for DenormPreserve)" if d["denorm_preserve_float32"]
                                              else "the device's default (it cannot be asked to keep them)"))
        print("     signed zeros, inf, NaN: " + ("kept (shaders ask for SignedZeroInfNanPreserve)"
                                                  if d["signed_zero_inf_nan_preserve_float32"] else
                                                  "the device's default (it cannot be asked to keep them)"))
        if d["problems"]:
            print(f"     not usable: {'; '.join(d['problems'])}")
    if chosen is None:  # (why: the error that follows)
        wanted = os.environ.get("VKROPE_DEVICE", "").strip()
        print("vkrope uses none of them" + (f" (VKROPE_DEVICE = {wanted!r})" if wanted else ""))
    else:
        print(f"vkrope uses [{chosen['index']}]: {chosen['why_chosen']}")
