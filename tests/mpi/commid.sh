#!/usr/bin/env bash
# tests/mpi/commid.sh - jobs launched without mpirun, bootstrapped through TPU_DIST_COMM_ID with
# RANK/WORLD_SIZE: 2 and 3 ranks run every collective (tools/main_job, results checked); a bad
# configuration value makes init fail with a message naming it.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/mpi/launch.sh
set -o pipefail
for n in 2 3; do
  echo "== commid: $n ranks"
  # RANK/WORLD_SIZE; OMPI_COMM_WORLD_* would win only without them
  launch "$n" env -u OMPI_COMM_WORLD_RANK -u OMPI_COMM_WORLD_SIZE tools/main_job --small || exit 1
done
# a configuration value that does not parse: the communicator refuses to start, naming it
out=$(launch 1 env -u OMPI_COMM_WORLD_RANK -u OMPI_COMM_WORLD_SIZE TPU_DIST_CHUNK_BYTES=64k \
  tools/main_job --small 2>&1) && { echo "$out"; echo "commid: TPU_DIST_CHUNK_BYTES=64k accepted"; exit 1; }
grep -q 'TPU_DIST_CHUNK_BYTES=64k: not an integer' <<<"$out" ||
  { echo "$out"; echo "commid: the bad value is not named"; exit 1; }
echo "commid: ok"
