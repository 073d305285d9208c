#!/usr/bin/env python3
"""Where the kernel time goes on a device: vkrope's shader against two
stripped variants compiled on the fly from glsl/rope.glsl, run through the
same runtime, grid and buffers (fp32, buffer storage, timestamp queries):

- copy:  each invocation copies its texel (the floor of any one-texel shader)
- naive: flat index, freqs by modulo, plain a*c - b*s (what a wgpu-py user writes)
- vkrope: the shipped shader

    python scripts/kernel_ceiling.py [BxNxC]     (default 8x4096x256)
Needs glslc. Prints min and median kernel ms over interleaved rounds.
"""

from __future__ import annotations

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
import vkrope.op as op  # noqa: E402
import vkrope.shaders as shaders  # noqa: E402
from vkrope.arguments import check_request  # noqa: E402

HEADER_END = "void main() {"
BODIES = {
    "copy": """void main() {
  uint c4 = gl_GlobalInvocationID.x;
  uint n = p.token_begin + gl_GlobalInvocationID.y;
  uint b = p.batch_begin + gl_GlobalInvocationID.z;
  if (2u * c4 >= p.pairs_per_row || n >= p.token_end || b >= p.batch_end) return;
  uint g = (b * p.n_tokens + n) * p.pairs_per_row + 2u * c4 - p.x_base;
  out_texels[g >> 1] = in_texels[g >> 1];
}
""",
    "naive": """void main() {
  uint c4 = gl_GlobalInvocationID.x;
  uint n = p.token_begin + gl_GlobalInvocationID.y;
  uint b = p.batch_begin + gl_GlobalInvocationID.z;
  if (2u * c4 >= p.pairs_per_row || n >= p.token_end || b >= p.batch_end) return;
  uint i = ((b * p.n_tokens + n) * p.pairs_per_row + 2u * c4 - p.x_base) >> 1;
  vec4 v = vec4(in_texels[i]);
  vec4 cs = vec4(freqs4[i % (p.n_tokens * p.pairs_per_row / 2u)]);
  out_texels[i] = XVEC4(v.x * cs.x - v.y * cs.y, v.x * cs.y + v.y * cs.x,
                        v.z * cs.z - v.w * cs.w, v.z * cs.w + v.w * cs.z);
}
""",
}


def compile_variant(source: str, out: Path) -> bytes:
    src = out.with_suffix(".comp")
    src.write_text(source)
    subprocess.run(["glslc", "--target-env=vulkan1.1", "-O", "-fshader-stage=comp", "-DSTORAGE_BUFFER",
                    str(src), "-o", str(out)], check=True)
    return out.read_bytes()


def main() -> None:
    shape = tuple(int(v) for v in (sys.argv[1] if len(sys.argv) > 1 else "8x4096x256").split("x"))
    text = (ROOT / "glsl" / "rope.glsl").read_text()
    head = text[: text.index(HEADER_END)]
    tmp = Path(tempfile.mkdtemp())
    variants = {"vkrope": None}
    for name, body in BODIES.items():
        variants[name] = compile_variant(head + body, tmp / f"{name}.spv")

    original = shaders.load_variant
    current: dict[str, bytes | None] = {"spirv": None}

    def patched(storage: str, x_dtype: str, f_dtype: str) -> shaders.Variant:
        v = original(storage, x_dtype, f_dtype)
        return dataclasses.replace(v, spirv=current["spirv"]) if current["spirv"] else v

    op.load_variant = patched
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    f = rng.standard_normal(shape[1:]).astype(np.float32)
    req = check_request(x, f, storage="buffer")
    out = np.empty_like(x)
    devices = {}
    for name, spirv in variants.items():
        current["spirv"] = spirv
        devices[name] = vkrope.Device(validation=False)
        devices[name].run(req, out)  # builds the pipeline with this SPIR-V
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(6):
        for name, dev in devices.items():
            times[name] += [dev.run(req, out) for _ in range(3)]
    moved = 2 * x.nbytes + f.nbytes
    print(f"{devices['vkrope'].name}, fp32 {shape}, {moved / 2**20:.1f} MiB moved per call")
    for name, ts in times.items():
        print(f"  {name:<7} kernel min {min(ts) * 1e3:7.2f} ms  median {statistics.median(ts) * 1e3:7.2f} ms  "
              f"({moved / min(ts) / 1e9:.1f} GB/s at best)")
    for dev in devices.values():
        dev.close()


if __name__ == "__main__":
    main()
