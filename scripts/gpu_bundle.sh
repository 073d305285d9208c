#!/usr/bin/env bash
# Usage: scripts/gpu_bundle.sh [DEST]   (default .offline; run here, in the project root, once a session)
# What the offline GPU machine needs to run scripts/gpu_bench.sh, gathered here: the shared bundle
# (../shared/gpu/prepare-offline-bundle.sh: the Vulkan loader, the validation layer, the vulkan /
# cffi wheels) plus what the first H200 run (#35) found missing:
#   - the glvnd libraries (libGLX / libEGL dispatch): without them NVIDIA's ICD loads but answers
#     vkCreateInstance with VK_ERROR_INCOMPATIBLE_DRIVER ("Could not get 'vkCreateInstance' via
#     'vk_icdGetInstanceProcAddr'");
#   - the test extras that machine lacks (gguf, dask and partd, mypy), at the versions of this
#     machine's .venv.
# Then, with the device tool: run(carry=[".offline"], command="source .offline/activate.sh &&
#   bash scripts/gpu_bench.sh $OUT").
set -euo pipefail
dest=${1:-.offline}
cd "$(dirname "$0")/.."
grep -qx "/${dest#./}/" .git/info/exclude 2>/dev/null || echo "/${dest#./}/" >> .git/info/exclude
../shared/gpu/prepare-offline-bundle.sh "$dest"
lists=$(mktemp -d); mkdir -p "$lists/partial"
o="-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=$lists"
apt-get $o update -qq
(cd "$dest/deb" && apt-get $o download -qq libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 2>/dev/null)
py=.venv/bin/python
pins=$($py -m pip freeze 2>/dev/null | grep -iE '^(gguf|dask|partd|locket|importlib_metadata|mypy|ast_serialize|librt)==' || true)
[[ -n $pins ]] || { echo "gpu_bundle: no .venv with the test extras here: run scripts/test.sh once first" >&2; exit 1; }
# shellcheck disable=SC2086
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  --platform manylinux_2_27_x86_64 --platform manylinux1_x86_64 -d "$dest/whl" $pins
ls "$dest/deb" "$dest/whl"
du -sh "$dest"
