#!/usr/bin/env python3
"""Where the kernel time goes on a device: vkrope's shader against two
stripped variants compiled on the fly from glsl/rope_interleaved.glsl, run through the
same runtime, grid and buffers (fp32, buffer storage, timestamp queries):

- copy:  each invocation copies its texel (the floor of any one-texel shader)
- naive: flat index, freqs by modulo, plain a*c - b*s (what a wgpu-py user writes)
- vkrope: the shipped shader

    python scripts/kernel_ceiling.py [BxNxC] [--rounds R]    (default 8x4096x256)
Needs glslc. Prints min and median kernel ms over interleaved rounds.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import vkrope  # noqa: E402
import vkrope.runtime.engine as engine  # noqa: E402
from vkrope.bench.timing import time_request  # noqa: E402
from vkrope.ops import sam2  # noqa: E402
from vkrope.runtime import manifest as kernels  # noqa: E402

VARIANT = "rope_interleaved_buffer_x32_f32"
HEADER_END = "void main() {"
BODIES = {
    "copy": """void main() {
  uint c4 = gl_GlobalInvocationID.x;
  uint n = p.token_begin + gl_GlobalInvocationID.y;
  uint b = p.batch_begin + gl_GlobalInvocationID.z;
  if (2u * c4 >= p.pairs_per_row || n >= p.token_end || b >= p.batch_end) return;
  uint g = (b * p.n_tokens + n) * p.pairs_per_row + 2u * c4 - p.x_base;
  out_texels[g >> 1] = in_texels[g >> 1];  // raw bits, as the shipped kernel moves them
}
""",
    "naive": """void main() {
  uint c4 = gl_GlobalInvocationID.x;
  uint n = p.token_begin + gl_GlobalInvocationID.y;
  uint b = p.batch_begin + gl_GlobalInvocationID.z;
  if (2u * c4 >= p.pairs_per_row || n >= p.token_end || b >= p.batch_end) return;
  uint i = ((b * p.n_tokens + n) * p.pairs_per_row + 2u * c4 - p.x_base) >> 1;
  vec4 v = raw_to_vec4(in_texels[i]);
  vec4 cs = vec4(freqs4[i % (p.n_tokens * p.pairs_per_row / 2u)]);
  out_texels[i] = vec4_to_raw(vec4(v.x * cs.x - v.y * cs.y, v.x * cs.y + v.y * cs.x,
                                   v.z * cs.z - v.w * cs.w, v.z * cs.w + v.w * cs.z));
}
""",
}


def compile_variant(source: str, out: Path) -> bytes:
    """Compile a stripped kernel with the shipped variant's defines."""
    src = out.with_suffix(".comp")
    src.write_text(source)
    defines = [f"-D{d}" for d in kernels.manifest()["variants"][VARIANT]["defines"]]
    subprocess.run(["glslc", "--target-env=vulkan1.1", "-O", "-fshader-stage=comp", f"-I{ROOT / 'glsl'}", *defines,
                    str(src), "-o", str(out)], check=True)
    return out.read_bytes()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shape", nargs="?", default="8x4096x256", help="BxNxC, fp32 (default 8x4096x256)")
    parser.add_argument("--rounds", type=int, default=6, help="interleaved rounds of 3 timed calls each (default 6)")
    args = parser.parse_args()
    shape = tuple(int(v) for v in args.shape.split("x"))
    if len(shape) != 3 or min(shape) < 1 or shape[2] % 4 or args.rounds < 1:
        parser.error("shape must be BxNxC with positive sizes and C % 4 == 0; --rounds >= 1")
    text = (ROOT / "glsl" / "rope_interleaved.glsl").read_text()
    head = text[: text.index(HEADER_END)]
    tmp = Path(tempfile.mkdtemp())
    variants: dict[str, bytes | None] = {"vkrope": None}
    for name, body in BODIES.items():
        variants[name] = compile_variant(head + body, tmp / f"{name}.spv")

    original = kernels.load
    current: dict[str, bytes | None] = {"spirv": None}

    def patched(name: str) -> kernels.Kernel:
        k = original(name)
        return dataclasses.replace(k, spirv=current["spirv"]) if current["spirv"] else k

    engine.load = patched  # the runtime builds its pipelines from what this returns
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    f = rng.standard_normal(shape[1:]).astype(np.float32)
    req = sam2.check(x, f, storage="buffer")
    out = np.empty_like(x)
    devices = {}
    for name, spirv in variants.items():
        current["spirv"] = spirv
        devices[name] = vkrope.Device(validation=False)
        time_request(devices[name], req, out)  # builds the pipeline with this SPIR-V
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.rounds):
        for name, dev in devices.items():
            times[name] += [s for s in (time_request(dev, req, out) for _ in range(3)) if s is not None]
    moved = 2 * x.nbytes + f.nbytes
    print(f"{devices['vkrope'].name}, fp32 {shape}, {moved / 2**20:.1f} MiB moved per call")
    for name, ts in times.items():
        if not ts:
            print(f"  {name:<7} no timestamps on this device")
            continue
        print(f"  {name:<7} kernel min {min(ts) * 1e3:7.2f} ms  median {statistics.median(ts) * 1e3:7.2f} ms  "
              f"({moved / min(ts) / 1e9:.1f} GB/s at best)")
    for dev in devices.values():
        dev.close()


if __name__ == "__main__":
    main()
