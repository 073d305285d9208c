#!/usr/bin/env bash
# The test command: set up everything missing, then run the whole suite (both
# tiers) on the Vulkan device with the Khronos validation layer on (any
# message fails).
#   scripts/test.sh [pytest args]   (run from the repository root: paths in them are read from there)
set -euo pipefail
unset CDPATH  # (an exported CDPATH would send cd to another tree)
here=$(cd -- "$(dirname -- "$0")" && pwd)
source "$here/setup_env.sh"
setup_env test
export VKROPE_VALIDATION=1
# both tiers (plain pytest runs only the fast one: setup.cfg); a later -m in "$@" still wins
exec .venv/bin/python -m pytest -p no:cacheprovider -m "slow or not slow" "$@"
