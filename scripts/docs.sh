#!/usr/bin/env bash
# Build the documentation site into site/ (or OUTDIR), strict: a broken link,
# a page missing from mkdocs.yml's navigation or a docstring that does not
# render fails the build.
#
# The Python it builds with: the project's .venv when there is one (made by
# scripts/test.sh or scripts/demo.sh; the `docs` extra is installed into it
# when missing). Without a .venv: $PYTHON, or else python3, as it is (nothing
# is installed into it); it must import mkdocs, mkdocstrings and vkrope with
# its dependencies, as `pip install '.[docs]'` gives it.
#
# OUTDIR (default: site/ in the repository) is read from the folder you run it
# in; mkdocs empties it first, so a folder that exists, holds anything and is
# not a site it built before is refused.
#
# Usage: scripts/docs.sh [OUTDIR]      (PYTHON=... scripts/docs.sh [OUTDIR])
set -euo pipefail
unset CDPATH  # (an exported CDPATH would send cd to another tree)
if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  echo "Usage: scripts/docs.sh [OUTDIR]   (Python: .venv, else \$PYTHON or python3 with mkdocs, mkdocstrings and vkrope)"
  exit 0
fi
root=$(cd -- "$(dirname -- "$0")/.." && pwd)
out="${1:-$root/site}"
[[ "$out" == /* ]] || out="$PWD/$out"  # (from where it was run, before the cd below)
if [[ -d "$out" && -n "$(ls -A -- "$out")" && ! -f "$out/sitemap.xml.gz" ]]; then
  echo "scripts/docs.sh: $out exists, is not empty and holds no site built before (no sitemap.xml.gz):" >&2
  echo "  mkdocs would empty it; name a new or empty folder" >&2
  exit 1
fi
cd "$root"
needs="import mkdocs, mkdocstrings, mkdocstrings_handlers.python, vkrope"
if [[ -x .venv/bin/python ]]; then
  py=.venv/bin/python
  "$py" -c "$needs" 2>/dev/null || "$py" -m pip install -q --no-build-isolation -e ".[docs]"
else
  py="${PYTHON:-python3}"
  if ! err=$("$py" -c "$needs" 2>&1); then
    echo "scripts/docs.sh: no .venv here, and $py cannot import mkdocs, mkdocstrings and vkrope" >&2
    echo "  ($(tail -n 1 <<<"$err"));" >&2
    echo "  pip install '.[docs]' into it (or set PYTHON to a Python that has them)," >&2
    echo "  or run scripts/test.sh (or scripts/demo.sh) to make .venv" >&2
    exit 1
  fi
fi
"$py" -m mkdocs build --strict -d "$out"
echo "site: $out/index.html"
