#!/usr/bin/env bash
# The test command: set up everything missing, then run the whole suite (both
# tiers) on the Vulkan device with the Khronos validation layer on (any
# message fails).
#   scripts/test.sh [pytest args]   (run from the repository root: paths in them are read from there)
# The suite runs in shards side by side, one per CPU (at most 4), whole test
# files each (tests/shards.py); VKROPE_SHARDS=1 runs one pytest (for --pdb,
# -x or --durations over the whole suite). Every shard gets the same args.
# VKROPE_SKIP_SETUP=1 skips the set-up (a test of this script, run beside shards using .venv).
set -euo pipefail
unset CDPATH  # (an exported CDPATH would send cd to another tree)
unset VKROPE_SHARD  # (one inherited would cut the run to a shard of it)
here=$(cd -- "$(dirname -- "$0")" && pwd)
# (the CPUs this process may run on: nproc without OMP_NUM_THREADS, which nproc would print instead)
cpus=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc 2>/dev/null || echo 1)
shards=${VKROPE_SHARDS:-$(( cpus < 4 ? cpus : 4 ))}
[[ $shards =~ ^[1-9][0-9]?$ ]] || { echo "scripts/test.sh: VKROPE_SHARDS must be 1 to 99, got '$shards'" >&2; exit 2; }
if [[ ${VKROPE_SKIP_SETUP:-} != 1 ]]; then
  source "$here/setup_env.sh"
  setup_env test
fi
export VKROPE_VALIDATION=1
# both tiers (plain pytest runs only the fast one: setup.cfg); a later -m in "$@" still wins
pytest=(.venv/bin/python -m pytest -p no:cacheprovider -m "slow or not slow")
(( shards > 1 )) || exec "${pytest[@]}" "$@"

logs=$(mktemp -d)
pids=()
stop() {  # each shard is a process group of its own (setsid): its tests' processes end with it
  for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap 'stop; rm -rf "$logs"' EXIT
trap 'stop; for ((i = 1; i < shards; i++)); do echo "--- shard $i/$shards (stopped) ---"; cat "$logs/$i"; done; exit 130' INT
trap 'stop; exit 143' TERM
# (shard 0 shows its output as it runs; the others' is shown when they end. All run in the background, so a
# signal to this script is handled at once, not after shard 0 ends)
for ((i = 0; i < shards; i++)); do
  if (( i == 0 )); then
    VKROPE_SHARD=$i/$shards setsid "${pytest[@]}" "$@" &
  else
    VKROPE_SHARD=$i/$shards setsid "${pytest[@]}" "$@" >"$logs/$i" 2>&1 &
  fi
  pids+=($!)
done
rcs=()
for ((i = 0; i < shards; i++)); do
  rc=0; wait "${pids[i]}" || rc=$?
  rcs+=("$rc")
  if (( i > 0 )); then
    echo "--- shard $i/$shards (exit $rc) ---"
    cat "$logs/$i"
  fi
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
