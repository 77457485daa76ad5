#!/usr/bin/env bash
# tests/mpi/soak.sh - 10,000 back-to-back small all-reduces at 2 ranks; results exact, RSS flat.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/mpi/launch.sh
launch 2 tests/mpi/soak "${SOAK_ITERS:-10000}" || exit 1
echo "soak: ok"
