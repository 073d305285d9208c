#!/usr/bin/env bash
# Benchmark (and a correctness pass) on an offline x86-64 machine with an
# NVIDIA GPU, NVIDIA's Vulkan driver and Python 3.12 with numpy, pytest,
# hypothesis and CUDA torch. Run from the project root after
#   source .offline/activate.sh        (see ../shared/gpu/prepare-offline-bundle.sh)
# Usage: scripts/gpu_bench.sh OUTDIR    -> OUTDIR/{bench.json, bench_family.json, bench_nd.json,
#                                           bench_decode.json, log.txt, tests.txt}
# (that machine has no matplotlib: draw the chart back here with
#  python -m vkrope bench --chart-from OUTDIR/bench.json)
# Finishes within 8 minutes (480 s) in all. Each step has a time limit and
# the benchmark gets what is left of the budget:
#   nvidia-smi                     timeout  10 s
#   vkrope info                    timeout  30 s
#   the whole test suite           timeout 230 s
#   vkrope bench --family          timeout  40 s
#   vkrope bench --nd              timeout  30 s   (Flux / Wan sizes, in-shader against table)
#   vkrope bench --decode          timeout  30 s   (decode loops, numpy path, fused step)
#   vkrope bench --quick           timeout 480 - 20 - (seconds used so far),
#                                  at least 480 - 20 - 10 - 30 - 230 - 40 - 30 - 30 = 90 s
#   (20 s kept for start-up, writing the logs and the bench JSON)
# The benchmark writes its JSON as it goes, so a cut-short run still leaves
# the rows it finished (marked "complete": false).
set -uo pipefail
case "${1:-}" in
  -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac
out=${1:?usage: scripts/gpu_bench.sh OUTDIR}
mkdir -p "$out"
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
export VKROPE_VALIDATION=0  # no validation layer on that machine
budget=480
reserve=20
SECONDS=0
{
  echo "== $(date -u +%FT%TZ) $(uname -m) $($py --version 2>&1)"
  timeout 10 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>/dev/null \
    || echo "nvidia-smi: not available"
  echo "== devices"
  timeout 30 $py -m vkrope info || echo "vkrope info failed"
  echo "== correctness on the GPU: the whole suite (at most 230 s)"
  timeout 230 $py -m pytest -q -p no:cacheprovider -o addopts="" tests/ 2>&1 | tail -25 | tee "$out/tests.txt"
  echo "== the table operators (ONNX / ExecuTorch shapes), at most 40 s"
  timeout 40 $py -m vkrope bench --family --out "$out" || echo "bench --family failed or ran out of time (exit $?)"
  echo "== N-D axial RoPE (Flux / Wan sizes), at most 30 s"
  timeout 30 $py -m vkrope bench --nd --out "$out" || echo "bench --nd failed or ran out of time (exit $?)"
  echo "== decode loops, the numpy path's cost, the fused decode step, at most 30 s"
  timeout 30 $py -m vkrope bench --decode --out "$out" || echo "bench --decode failed or ran out of time (exit $?)"
  left=$((budget - reserve - SECONDS))
  echo "== quick benchmark (at most ${left} s; ${SECONDS} s used so far)"
  if ((left > 0)); then
    timeout "$left" $py -m vkrope bench --quick --out "$out" \
      || echo "bench failed or ran out of time (exit $?)"
  else
    echo "no time left for the benchmark"
  fi
  echo "== done after ${SECONDS} s"
} 2>&1 | tee "$out/log.txt"
