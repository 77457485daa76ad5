#!/usr/bin/env bash
# tests/torch/run.sh - builds the torch extension in-tree against this build tree's libtpu_dist
# and runs the torch suites with Debian's python (which has torch).
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=/usr/bin/python3
(cd python && TD_WERROR=1 PKG_CONFIG_PATH="$PWD/.." $PY setup.py -q build_ext --inplace >/dev/null)
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
exec $PY -m pytest -q -p no:cacheprovider tests/torch "$@"
