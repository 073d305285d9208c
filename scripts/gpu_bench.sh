#!/usr/bin/env bash
# Benchmark (and a correctness pass) on an offline x86-64 machine with an
# NVIDIA GPU, NVIDIA's Vulkan driver and Python 3.12 with numpy, pytest,
# hypothesis and CUDA torch. Run from the project root after
#   source .offline/activate.sh        (see ../shared/gpu/prepare-offline-bundle.sh)
# Usage: scripts/gpu_bench.sh OUTDIR    -> OUTDIR/{bench.json, bench.svg or .png, log.txt, tests.txt}
# Finishes in under 4 minutes: each step has its own time limit.
set -uo pipefail
out=${1:?usage: scripts/gpu_bench.sh OUTDIR}
mkdir -p "$out"
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
export VKROPE_VALIDATION=0  # no validation layer on that machine
{
  echo "== $(date -u +%FT%TZ) $(uname -m) $($py --version 2>&1)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>/dev/null || echo "nvidia-smi: not available"
  echo "== devices"
  timeout 60 $py -m vkrope info || echo "vkrope info failed"
  echo "== correctness on the GPU (ExecuTorch shapes, properties, full contract, device arrays, big tensors)"
  timeout 90 $py -m pytest -q -p no:cacheprovider -o addopts="" \
      tests/test_contract_shapes.py tests/test_contract_full.py tests/test_device_arrays.py \
      tests/test_texture.py::test_texture_equals_buffer_bitwise tests/test_properties.py \
      2>&1 | tail -15 | tee "$out/tests.txt"
  echo "== benchmark"
  timeout 170 $py -m vkrope bench --out "$out" --repeats 7 \
      --shapes 1x256x256,1x1792x256,1x4096x256,8x4096x256,32x4096x256,128x4096x256,512x4096x256 \
    || echo "bench failed or ran out of time (exit $?)"
} 2>&1 | tee "$out/log.txt"
