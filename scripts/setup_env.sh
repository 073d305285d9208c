#!/usr/bin/env bash
# Shared set-up for scripts/demo.sh and scripts/test.sh (source it):
#   setup_env [test]
# Installs the Debian packages vkrope needs when they are missing (as root;
# otherwise prints the exact command and exits 1), makes .venv and installs
# vkrope into it (with the test extras for "test"). Idempotent.

setup_env() {
  local mode=${1:-run}
  local root
  root=$(CDPATH='' cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
  cd "$root" || exit 1

  local pkgs=(libvulkan1 mesa-vulkan-drivers)
  # (Debian's own python3 makes no venv without python3-venv; a python with ensurepip needs nothing)
  "${PYTHON:-python3}" -c "import ensurepip" 2>/dev/null || pkgs+=(python3-venv)
  [ "$mode" = test ] && pkgs+=(vulkan-validationlayers glslc spirv-tools chromium)  # (chromium: the site's browser test)
  local missing=()
  for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    if [ "$(id -u)" -ne 0 ]; then
      echo "vkrope needs these Debian packages: ${missing[*]}" >&2
      echo "run: sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
      exit 1
    fi
    echo "installing ${missing[*]} with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq "${missing[@]}" >/dev/null
  fi

  local py=${PYTHON:-python3}
  if [ ! -x .venv/bin/python ]; then
    "$py" -m venv .venv || { echo "could not create .venv with $py (apt-get install python3-venv?)" >&2; exit 1; }
  fi
  local extras=""
  [ "$mode" = test ] && extras="[test]"
  # setuptools/wheel in the venv so the editable install needs no isolated build.
  # (The grep drops a pip warning about an unused local index on some hosts.)
  .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade "setuptools>=61" wheel \
    2> >(grep -v "is neither a file nor a directory" >&2) >/dev/null
  .venv/bin/python -m pip install -q --disable-pip-version-check --no-build-isolation -e ".${extras}" \
    2> >(grep -v "is neither a file nor a directory" >&2)
}
