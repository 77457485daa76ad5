#!/usr/bin/env bash
# tests/mpi/valgrind.sh - memcheck over 2 ranks launched without mpirun, every collective at a small
# size (tools/main_job --small); any memcheck error or definite leak fails. tests/valgrind.supp
# holds suppressions for third-party noise only.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/mpi/launch.sh
export TPU_DIST_TIMEOUT_MS=120000
launch 2 ./libtool --mode=execute valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite \
  --suppressions=tests/valgrind.supp tools/main_job --small || exit 1
echo "valgrind: ok"
