#!/usr/bin/env bash
# tests/fault/defer.sh MODE - TPU_DIST_MODE=defer against strict (tests/fault/defer_job.c), ranks
# launched with TPU_DIST_COMM_ID, RANK and WORLD_SIZE (no mpirun):
#   exact     2, 3 and 4 ranks: every collective, datatype and op bit-identical to strict,
#             mixed queues, in place, zero counts, a dependent pair, groups, splits, the timer;
#             over sockets; with 200-byte pieces (fused members cut within); with a 20 us timer and 3-operation windows (partial agreements)
#   diverge   3 ranks, TPU_DIST_CHECK=1: different flush points are reported on every rank
#   abort     2 ranks: CommAbort releases a wait on deferred requests within 100 ms
#   dead      3 ranks: a rank dies; every deferred request of the others fails within the timeout
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/mpi/launch.sh
export TPU_DIST_TIMEOUT_MS=${TPU_DIST_TIMEOUT_MS:-20000}
job=${TD_BUILDDIR:-.}/tests/fault/defer_job
case "${1:-}" in
  exact) launch 2 $job exact && launch 3 $job exact && launch 4 $job exact &&
    launch 3 env TPU_DIST_TRANSPORTS=socket $job exact &&
    launch 2 env TPU_DIST_CHUNK_BYTES=200 $job exact &&
    launch 3 env TPU_DIST_DEFER_US=20 TPU_DIST_DEFER_OPS=3 $job exact ;;
  diverge) launch 3 env TPU_DIST_CHECK=1 TPU_DIST_DEFER_US=0 $job diverge ;;
  abort) launch 2 $job abort ;;
  dead)
    # the last rank kills itself: only the survivors' status counts
    export TPU_DIST_TIMEOUT_MS=5000 TPU_DIST_COMM_ID=127.0.0.1:$(td_port)
    pids=()
    for r in 0 1 2; do
      RANK=$r WORLD_SIZE=3 $job dead 2>&1 | sed "s/^/[rank $r] /" &
      pids+=($!)
    done
    rc=0
    for p in "${pids[@]:0:2}"; do wait "$p" || rc=1; done
    wait "${pids[2]}"
    exit $rc ;;
  *) sed -n '2,9p' "$0"; exit 2 ;;
esac
