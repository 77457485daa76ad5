#!/usr/bin/env bash
# tests/torch2/pip_host.sh - the torch suites against a pip-installed torch on a host without apt
# (e.g. a many-core machine with torch 2.11 from pip): builds the plugin against that torch with
# -Werror from an installed libtpu_dist, then runs tests/torch and tests/torch2 (every rank's exit
# code checked), logging everything under OUT.
#
#   tests/torch2/pip_host.sh PREFIX OUT [PYTEST ARGS...]
#
# PREFIX: a libtpu_dist install tree (`make install DESTDIR=...` or `./configure --prefix=DIR &&
# make install`, built on any Debian 12 machine and copied here; pkg-config relocates it).
# PYTHON (default python3) is the interpreter with torch; pytest must be importable by it (pip's,
# or Debian's python3-pytest copied next to the tree: put its folder in TD_PYTEST_PATH).
set -uo pipefail
cd "$(dirname "$0")/../.."
prefix=$(cd "${1:?usage: pip_host.sh PREFIX OUT [PYTEST ARGS...]}" && pwd)
out=${2:?usage: pip_host.sh PREFIX OUT [PYTEST ARGS...]}
shift 2
mkdir -p "$out"
PY=${PYTHON:-python3}
export PYTHONPATH="$PWD/python${TD_PYTEST_PATH:+:$TD_PYTEST_PATH}${PYTHONPATH:+:$PYTHONPATH}"
export MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
t0=$(date +%s)
{
  date -u
  uname -a
  nproc
  $PY -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)'
} >"$out/host.txt" 2>&1
TD_WERROR=1 PYTHON=$PY python/build_ext.sh "$prefix" >"$out/build.log" 2>&1 ||
  { tail -n 40 "$out/build.log"; echo "the plugin did not build: $out/build.log"; exit 1; }
echo "plugin built in $(($(date +%s) - t0)) s" | tee -a "$out/host.txt"
$PY -m pytest -q -p no:cacheprovider -rfEs --junitxml="$out/junit.xml" tests/torch tests/torch2 \
  "$@" >"$out/pytest.log" 2>&1
rc=$?
tail -n 30 "$out/pytest.log"
echo "torch suites: pytest rc $rc after $(($(date +%s) - t0)) s" | tee -a "$out/host.txt"
exit $rc
