#!/usr/bin/env python3
"""Write tests/torch_golden.py: the float32 bits torch gives for the
frequencies vkrope's specs stand for, so the tests can hold vkrope to
torch without torch installed. Needs torch (CPU is enough); vkrope is not
imported.

    python scripts/torch_golden.py [--out tests/torch_golden.py]

For each config: Hugging Face's "yarn" inverse frequencies (transformers
modeling_rope_utils.py `_compute_yarn_parameters`, its steps written out
here in torch float32 on the CPU), the `pos_freqs` power they start from,
the plain RoPE inverse frequencies `1 / base ** (arange(0, dim, 2) / dim)`
and SAM2's axial `1 / theta ** (arange(0, dim, 4)[: dim // 4] / dim)`.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

YARN_CONFIGS = [  # (dim, base, factor, original context, beta_fast, beta_slow, truncate)
    (128, 10000.0, 4.0, 4096, 32.0, 1.0, True),
    (64, 1000000.0, 8.0, 32768, 32.0, 1.0, True),
    (128, 150000.0, 32.0, 4096, 32.0, 1.0, False),
    (32, 10000.0, 2.0, 2048, 16.0, 2.0, True),
    (64, 10000.0, 4.0, 128, 32.0, 1.0, True),
    (32, 10.0, 4.0, 635, 32.0, 1.0, True),
    (96, 500000.0, 16.0, 8192, 24.0, 1.5, True),
]
PLAIN_CONFIGS = [(64, 10000.0), (128, 10000.0), (128, 500000.0), (256, 1000000.0), (80, 150000.0)]
AXIAL_CONFIGS = [(256, 10000.0), (64, 100.0)]


def hf_yarn(torch, dim, base, factor, orig, beta_fast, beta_slow, truncate):
    """(pos_freqs, inv_freq, attention_factor) as transformers computes them."""
    attention_factor = 0.1 * math.log(factor) + 1.0 if factor > 1 else 1.0

    def find_correction_dim(num_rotations):
        return (dim * math.log(orig / (num_rotations * 2 * math.pi))) / (2 * math.log(base))

    low, high = find_correction_dim(beta_fast), find_correction_dim(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low), 0, 1)
    pos_freqs = base ** (torch.arange(0, dim, 2).to(dtype=torch.float) / dim)
    inv_freq_extrapolation = 1.0 / pos_freqs
    inv_freq_interpolation = 1.0 / (factor * pos_freqs)
    extrapolation_factor = 1 - ramp
    inv_freq = inv_freq_interpolation * (1 - extrapolation_factor) + inv_freq_extrapolation * extrapolation_factor
    return pos_freqs, inv_freq, attention_factor


def bits(torch, t) -> list[int]:
    """float32 tensor -> its bits as int32 numbers."""
    return [int(v) for v in t.contiguous().view(dtype=torch.int32).tolist()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "tests" / "torch_golden.py"))
    args = parser.parse_args()
    import torch  # noqa: PLC0415  (only here: --help works without it)

    lines = ['"""float32 bits (as int32) torch computed for vkrope\'s frequency specs;',
             f'written by scripts/torch_golden.py with torch {torch.__version__} (CPU, '
             f'{torch.backends.cpu.get_cpu_capability()}: its power routine depends on it). Data only."""', "",
             "YARN = {  # config: (pos_freqs bits, inv_freq bits, attention_factor)"]
    for cfg in YARN_CONFIGS:
        pos, inv, af = hf_yarn(torch, *cfg)
        lines.append(f"    {cfg!r}: ({bits(torch, pos)}, {bits(torch, inv)}, {af!r}),")
    lines += ["}", "", "PLAIN = {  # (dim, base): 1 / base ** (arange(0, dim, 2) / dim) bits"]
    for dim, base in PLAIN_CONFIGS:
        inv = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        lines.append(f"    {(dim, base)!r}: {bits(torch, inv)},")
    lines += ["}", "", "AXIAL = {  # (dim, theta): SAM2's 1 / theta ** (arange(0, dim, 4)[: dim // 4] / dim) bits"]
    for dim, theta in AXIAL_CONFIGS:
        f = 1.0 / (theta ** (torch.arange(0, dim, 4)[: (dim // 4)].float() / dim))
        lines.append(f"    {(dim, theta)!r}: {bits(torch, f)},")
    lines += ["}", ""]
    Path(args.out).write_text("\n".join(lines))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
