#!/usr/bin/env bash
# The test command: set up everything missing, then run the whole suite (both
# tiers) on the Vulkan device with the Khronos validation layer on (any
# message fails).
#   scripts/test.sh [pytest args]   (run from the repository root: paths in them are read from there)
# The suite runs in shards side by side, one per CPU (at most 4), whole test
# files each (tests/shards.py); VKROPE_SHARDS=1 runs one pytest (for --pdb,
# -x or --durations over the whole suite). Every shard gets the same args.
set -euo pipefail
unset CDPATH  # (an exported CDPATH would send cd to another tree)
here=$(cd -- "$(dirname -- "$0")" && pwd)
cpus=$(nproc 2>/dev/null || echo 1)
shards=${VKROPE_SHARDS:-$(( cpus < 4 ? cpus : 4 ))}
[[ $shards =~ ^[1-9][0-9]?$ ]] || { echo "scripts/test.sh: VKROPE_SHARDS must be 1 to 99, got '$shards'" >&2; exit 2; }
source "$here/setup_env.sh"
setup_env test
export VKROPE_VALIDATION=1
# both tiers (plain pytest runs only the fast one: setup.cfg); a later -m in "$@" still wins
pytest=(.venv/bin/python -m pytest -p no:cacheprovider -m "slow or not slow")
(( shards > 1 )) || exec "${pytest[@]}" "$@"

logs=$(mktemp -d)
pids=()
# (background jobs of a script ignore Ctrl-C: the shards behind the first are ended here)
trap 'kill "${pids[@]}" 2>/dev/null || true; wait; rm -rf "$logs"' EXIT
trap 'exit 130' INT TERM
for ((i = 1; i < shards; i++)); do
  VKROPE_SHARD=$i/$shards "${pytest[@]}" "$@" >"$logs/$i" 2>&1 &
  pids+=($!)
done
rcs=(0)
VKROPE_SHARD=0/$shards "${pytest[@]}" "$@" || rcs[0]=$?
for ((i = 1; i < shards; i++)); do
  rc=0; wait "${pids[i-1]}" || rc=$?
  rcs+=("$rc")
  echo "--- shard $i/$shards (exit $rc) ---"
  cat "$logs/$i"
done
pids=()
# pytest's 5 is "no test collected": fine for a shard while another ran tests
worst=5
for rc in "${rcs[@]}"; do
  if (( rc != 0 && rc != 5 )); then worst=$rc; break; fi
  (( rc == 0 )) && worst=0
done
echo "scripts/test.sh: $shards shards side by side, exits ${rcs[*]}"
exit "$worst"
