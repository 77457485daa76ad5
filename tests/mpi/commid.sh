#!/usr/bin/env bash
# tests/mpi/commid.sh - jobs launched without mpirun, bootstrapped through TPU_DIST_COMM_ID with
# RANK/WORLD_SIZE: 2 and 3 ranks run every collective (tools/main_job, results checked).
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/mpi/launch.sh
set -o pipefail
for n in 2 3; do
  echo "== commid: $n ranks"
  # main_job reads OMPI_COMM_WORLD_* only under mpirun; here RANK/WORLD_SIZE
  launch "$n" env -u OMPI_COMM_WORLD_RANK -u OMPI_COMM_WORLD_SIZE tools/main_job --small || exit 1
done
echo "commid: ok"
