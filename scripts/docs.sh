#!/usr/bin/env bash
# Build the documentation site into site/ (or OUTDIR), strict: a broken link,
# a page missing from mkdocs.yml's navigation or a docstring that does not
# render fails the build. Installs the `docs` extra into .venv when missing.
#
# Usage: scripts/docs.sh [OUTDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  echo "Usage: scripts/docs.sh [OUTDIR]"
  exit 0
fi
out="${1:-site}"
if [[ ! -x .venv/bin/python ]]; then
  echo "scripts/docs.sh: no .venv; run scripts/test.sh (or scripts/demo.sh) first" >&2
  exit 1
fi
.venv/bin/python -c "import mkdocs, mkdocstrings" 2>/dev/null || .venv/bin/python -m pip install -q --no-build-isolation -e ".[docs]"
.venv/bin/python -m mkdocs build --strict -d "$out"
echo "site: $out/index.html"
