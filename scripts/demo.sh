#!/usr/bin/env bash
# The main job: set up everything missing, then run the EdgeTAM walk-through
# on the Vulkan device (device, max error against the float64 reference,
# time against numpy).
#   scripts/demo.sh        (usage: no arguments; installs what is missing first)
set -euo pipefail
if [ $# -ne 0 ]; then  # (before the setup: an argument is a mistake, not something to install for)
    echo "usage: scripts/demo.sh (no arguments; vkrope demo --help for the command itself)" >&2
    exit 1
fi
unset CDPATH  # (an exported CDPATH would send cd to another tree)
here=$(cd -- "$(dirname -- "$0")" && pwd)
source "$here/setup_env.sh"
setup_env run
exec .venv/bin/python -m vkrope demo
