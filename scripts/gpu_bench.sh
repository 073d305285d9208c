#!/usr/bin/env bash
# The GPU run (issue 35): the whole suite under the Khronos validation layer,
# then every benchmark, on an offline x86-64 machine with an NVIDIA GPU,
# NVIDIA's Vulkan driver and Python 3.12 with numpy, pytest, hypothesis and
# CUDA torch. Run from the project root after
#   source .offline/activate.sh        (made by scripts/gpu_bundle.sh: the shared bundle, the glvnd libraries;
#                                        .offline/whl also carries the test extras that
#                                        machine lacks: gguf, dask, mypy and their needs)
# Usage: scripts/gpu_bench.sh OUTDIR    -> OUTDIR/{log.txt, tests.txt, bench.json, bench_family.json,
#                                           bench_nd.json, bench_decode.json, bench_overhead.json,
#                                           wait_probe.json, big/bench.json}   (9 files: what the device tool
#                                           returns)
# Charts are drawn back here: python -m vkrope bench --chart-from OUTDIR/bench.json
# SUITE_ONLY=1 stops after the suite (a rerun after fixes).
# Every step has a time limit, so the run ends within BUDGET seconds (470):
#   vkrope info (validation on)     30 s
#   the whole suite, validation on  180 s  (pytest-xdist when installed, JOBS workers, default 16;
#                                          pytest-timeout 150 s a test when installed)
#   bench --family / --nd           40 s each
#   bench --decode / --overhead     50 s / 40 s
#   scripts/wait_probe.py           20 s (call latency per fence poll window)
#   bench --quick                   at most 90 s, kernel rows up to 32 MiB, every dtype and storage
#   bench --shapes (big)            what is left: 128 MiB to 1 GiB float32 / float16, buffer storage
# The suite leaves out what needs this project's host tools (glslc, spirv-val, mkdocs, a browser,
# pip with an index); those run in CI. The kernel benchmark writes its JSON row by row, so a cut
# run keeps its rows ("complete": false).
set -uo pipefail
case "${1:-}" in
  -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac
out=${1:?usage: scripts/gpu_bench.sh OUTDIR}
mkdir -p "$out/big"
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
budget=${BUDGET:-470}
SECONDS=0
step() {  # [STEP_LOG=FILE] step SECONDS LABEL COMMAND...: run with a time limit, say how it ended
  local limit=$1 label=$2 rc; shift 2
  echo "== $label (at most ${limit} s; ${SECONDS} s used so far)"
  if [[ -n ${STEP_LOG:-} ]]; then timeout "$limit" "$@" > "$STEP_LOG" 2>&1; else timeout "$limit" "$@"; fi
  rc=$?
  echo "== $label: exit $rc after ${SECONDS} s"
}
{
  echo "== $(date -u +%FT%TZ) $(uname -m) $($py --version 2>&1) numpy $($py -c 'import numpy; print(numpy.__version__)')"
  timeout 10 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv \
    || echo "nvidia-smi: not available"
  VKROPE_VALIDATION=1 step 30 "vkrope info, validation on" $py -m vkrope info
  par=(); $py -c "import xdist" 2>/dev/null && par=(-n "${JOBS:-16}")
  $py -c "import pytest_timeout" 2>/dev/null && par+=(--timeout 150)
  VKROPE_VALIDATION=1 STEP_LOG="$out/tests.txt" step 180 "the whole suite, validation on" $py -m pytest -q -p no:cacheprovider \
    -m "slow or not slow" "${par[@]}" -rfEs --tb=short \
    --ignore=tests/project/test_site.py --ignore=tests/project/test_install.py \
    --deselect tests/kernels/test_shaders.py::test_recompiling_gives_the_committed_spirv \
    --deselect tests/kernels/test_shaders.py::test_spirv_val \
    --deselect tests/kernels/test_denorm_preserve.py::test_the_edited_module_is_valid_and_asks_once_per_entry_point \
    tests/
  tail -n 40 "$out/tests.txt"
  [[ -n ${SUITE_ONLY:-} ]] && { echo "== SUITE_ONLY: no benchmarks"; exit 0; }
  export VKROPE_VALIDATION=0  # timings without the layer
  step 40 "bench --family (ONNX / ExecuTorch shapes)" $py -m vkrope bench --family --out "$out"
  step 40 "bench --nd (Flux / Wan)" $py -m vkrope bench --nd --out "$out"
  step 50 "bench --decode (loops, fused step, fp8, context shift)" $py -m vkrope bench --decode --out "$out"
  step 40 "bench --overhead (empty submission, tiny calls)" $py -m vkrope bench --overhead --out "$out"
  step 20 "wait probe (latency per fence poll window)" $py scripts/wait_probe.py --rounds 5 --out "$out/wait_probe.json"
  left=$((budget - 60 - SECONDS)); ((left > 90)) && left=90
  ((left > 0)) && step "$left" "bench --quick (up to 32 MiB, every dtype and storage)" \
    $py -m vkrope bench --quick --out "$out" --plot /tmp/vkrope-quick.png
  left=$((budget - 5 - SECONDS))
  ((left > 0)) && step "$left" "bench, 128 MiB to 1 GiB (buffer)" $py -m vkrope bench \
    --shapes 32x4096x256,64x4096x256,256x4096x256 --dtype float32 float16 --storage buffer --repeats 5 \
    --out "$out/big" --plot /tmp/vkrope-big.png
  echo "== done after ${SECONDS} s"
} 2>&1 | tee "$out/log.txt"
