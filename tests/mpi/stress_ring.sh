#!/usr/bin/env bash
# tests/mpi/stress_ring.sh - back-to-back ring all-reduces (bf16, 1, 4 and 16 MiB, 22 iterations
# each) at 4 ranks over shm, STRESS_RUNS times (default 3), every result checked by the bench. Each
# pair carries thousands of 128 KiB pieces per run, so the shm ring and the single-copy
# acknowledgement slots wrap many times while ranks run at different speeds (a lost or mismatched
# message shows as a timeout naming the step, the piece and the peer). Extra arguments are
# environment settings for the ranks (e.g. TPU_DIST_SHM_CMA=0).
set -uo pipefail
cd "$(dirname "$0")/../.."
runs=${STRESS_RUNS:-3}
for ((i = 1; i <= runs; i++)); do
  if ! env "$@" TPU_DIST_TIMEOUT_MS=${TPU_DIST_TIMEOUT_MS:-20000} timeout 150 \
    mpirun -np 4 --bind-to none bench/all_reduce_perf -b 1M -e 16M -f 4 -d bfloat16 -n 20 -w 2 \
    -c 1 -A ring; then
    echo "stress-ring: run $i of $runs failed ($*)"
    exit 1
  fi
done
echo "stress-ring: $runs runs ok ($*)"
