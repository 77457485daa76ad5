#!/usr/bin/env bash
# python/build_ext.sh - builds the torch plugin in place (python/tpu_dist/_C*.so) against the torch
# of PYTHON (default python3) and a libtpu_dist found with pkg-config: this build tree's
# (tpu_dist-uninstalled.pc at its top) without PREFIX, else the install tree PREFIX (its
# tpu_dist.pc, relocated with pkg-config --define-prefix: a tree installed on another machine and
# copied here). TD_WERROR=1 turns warnings into errors (python/setup.py). setup.py's output goes to
# stdout and stderr; the exit status is its own, or 1 when PREFIX holds no tpu_dist.pc.
#
#   python/build_ext.sh [PREFIX]
set -uo pipefail
PY=${PYTHON:-python3}
if [ $# -eq 0 ]; then
  cd "$(dirname "$0")" || exit 1
  PKG_CONFIG_PATH="$PWD/.." exec $PY setup.py build_ext --inplace
fi
pc=$(find "$1" -name tpu_dist.pc -path '*pkgconfig*' | head -n 1)
[ -n "$pc" ] || { echo "no tpu_dist.pc under $1" >&2; exit 1; }
pc=$(cd "$(dirname "$pc")" && pwd)
cd "$(dirname "$0")" || exit 1
PKG_CONFIG="pkg-config --define-prefix" PKG_CONFIG_PATH="$pc" \
  exec $PY setup.py build_ext --inplace
