#!/usr/bin/env python3
"""Facts of a GPU that the suite and the benchmark do not print, for
docs/PERFORMANCE.md and docs/storage.md (#35): the memory types, the float
controls the driver reports, float32 subnormals through a kernel, end-to-end
numpy calls through the staging path, and (with --forks) how a forked child
of a process using Vulkan exits. JSON on stdout.

    python scripts/gpu_checks.py [--forks] > checks.json   (on the GPU machine: after .offline/activate.sh)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import vkrope  # noqa: E402
import vkrope.vk.binding as b  # noqa: E402

FLOAT_CONTROLS = ["denormBehaviorIndependence", "roundingModeIndependence", "shaderSignedZeroInfNanPreserveFloat32",
                  "shaderDenormPreserveFloat16", "shaderDenormPreserveFloat32", "shaderDenormFlushToZeroFloat16",
                  "shaderDenormFlushToZeroFloat32", "shaderRoundingModeRTEFloat32"]


def device_facts(dev: vkrope.Device) -> dict:
    """Memory types (flags, heap) and the float controls the driver reports."""
    vk = b.vk()
    ctx = dev._context()
    mp = ctx.memory_properties
    types = [{"flags": hex(mp.memoryTypes[i].propertyFlags), "heap": mp.memoryTypes[i].heapIndex}
             for i in range(mp.memoryTypeCount)]
    heaps = [{"size_gib": round(mp.memoryHeaps[i].size / 2**30, 1), "flags": hex(mp.memoryHeaps[i].flags)}
             for i in range(mp.memoryHeapCount)]
    exts = {e.extensionName for e in vk.vkEnumerateDeviceExtensionProperties(ctx.info.handle, None)}
    fc = vk.ffi.new("VkPhysicalDeviceFloatControlsProperties*")
    fc.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES
    head = vk.ffi.new("VkPhysicalDeviceProperties2*")
    head.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2
    head.pNext = fc
    vk.lib.vkGetPhysicalDeviceProperties2(ctx.info.handle, head)
    return {"memory_types": types, "memory_heaps": heaps, "float_controls_extension": "VK_KHR_shader_float_controls" in exts,
            "float_controls": {k: int(getattr(fc, k)) for k in FLOAT_CONTROLS},
            "denorm_preserve_float32": dev.info["denorm_preserve_float32"]}


def subnormals(dev: vkrope.Device) -> dict:
    """x * cos(0) for float32 subnormals and the smallest normal: kept or flushed."""
    x = np.array([[[1e-39, -3e-42, 1.2e-38, 2e-38]]], np.float32)
    f = np.tile(np.array([1.0, 0.0], np.float32), (1, 2))
    y = dev.apply(x, f)
    return {"in": x.ravel().tolist(), "out": y.ravel().tolist()}


def end_to_end(dev: vkrope.Device) -> list[dict]:
    """Median seconds of numpy-in numpy-out calls (the staging path for small buffers and every image)."""
    rows = []
    rng = np.random.default_rng(0)
    for shape, storage in [((1, 256, 256), "buffer"), ((1, 256, 256), "texture3d"), ((1, 4096, 256), "texture3d"),
                           ((8, 4096, 256), "texture3d"), ((8, 4096, 256), "buffer")]:
        x = rng.standard_normal(shape, dtype=np.float32)
        theta = rng.uniform(-3, 3, (shape[1], shape[2] // 2))
        f = np.stack([np.cos(theta), np.sin(theta)], -1).reshape(shape[1], shape[2]).astype(np.float32)
        dev.apply(x, f, storage=storage)
        ts = []
        for _ in range(7):
            t0 = time.perf_counter()
            dev.apply(x, f, storage=storage)
            ts.append(time.perf_counter() - t0)
        rows.append({"shape": shape, "storage": storage, "MiB": x.nbytes / 2**20,
                     "apply_ms": round(statistics.median(ts) * 1e3, 3)})
    return rows


FORK = """
import faulthandler, os, sys, threading, time
import numpy as np
mode = sys.argv[1]
if mode == "instance":
    import vulkan as vk
    vk.vkCreateInstance(vk.VkInstanceCreateInfo(pApplicationInfo=vk.VkApplicationInfo(apiVersion=vk.VK_MAKE_VERSION(1, 1, 0))), None)
else:
    import vkrope
    dev = vkrope.Device()
    dev.apply(np.ones((1, 4, 8), np.float32), np.ones((4, 8), np.float32))
    if mode == "closed":
        dev.close()
pid = os.fork()
if pid == 0:
    faulthandler.dump_traceback_later(3, exit=False)  # a Python-level hang prints its stack
    sys.exit(0)
deadline = time.monotonic() + 8
while time.monotonic() < deadline:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        print("child", "exit", os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status))
        break
    time.sleep(0.01)
else:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    print("child TIMEOUT")
"""


def forks() -> dict:
    """A child forked after the parent opened Vulkan, exiting with sys.exit(0): how it ends."""
    out = {}
    for mode in ("device", "closed", "instance"):
        try:
            res = subprocess.run([sys.executable, "-c", FORK, mode], capture_output=True, text=True, timeout=30,
                                 env=dict(os.environ, VKROPE_VALIDATION="0"))
            out[mode] = (res.stdout + res.stderr)[-1500:]
        except subprocess.TimeoutExpired as exc:  # (on the H200 the parent itself hung: docs/errors.md)
            out[mode] = f"the parent hung past 30 s: {exc.stdout!r} {exc.stderr!r}"[-1500:]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--forks", action="store_true", help="also fork children of a process using Vulkan "
                                                                  "(each bounded by 30 s; some drivers hang there)")
    args = parser.parse_args()
    with vkrope.Device() as dev:
        facts = {"device": dev.info["name"], "driver": dev.info["driver"], **device_facts(dev),
                 "subnormals": subnormals(dev), "end_to_end": end_to_end(dev)}
    print(json.dumps(facts, indent=1), flush=True)  # (first: the fork checks may hang on some drivers)
    if args.forks:
        print(json.dumps({"forks": forks()}, indent=1))


if __name__ == "__main__":
    main()
