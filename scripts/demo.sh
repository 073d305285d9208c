#!/usr/bin/env bash
# The main job: set up everything missing, then run the EdgeTAM walk-through
# on the Vulkan device (device, max error against the float64 reference,
# time against numpy).
#   scripts/demo.sh        (usage: no arguments; installs what is missing first)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/setup_env.sh"
setup_env run
exec .venv/bin/python -m vkrope demo "$@"
