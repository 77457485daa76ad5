#!/usr/bin/env bash
# tests/torch/run.sh - builds the torch extension in-tree against this build tree's libtpu_dist
# and runs the torch suites with Debian's python (which has torch).
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=/usr/bin/python3
TD_WERROR=1 PYTHON=$PY python/build_ext.sh >/dev/null
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
exec $PY -m pytest -q -rs -p no:cacheprovider tests/torch "$@"
