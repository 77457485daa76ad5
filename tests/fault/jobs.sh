#!/usr/bin/env bash
# tests/fault/jobs.sh MODE - the fault_job acceptance jobs other than kill (see fault_job.c),
# launched with TPU_DIST_COMM_ID, RANK and WORLD_SIZE (no mpirun):
#   abort      2 ranks: CommAbort from another thread releases a blocked call within 100 ms
#   flight     1 rank: a timeout writes the flight record (last operations and their state)
#   badargs    2 and 3 ranks: the invalid-argument table, a correct call after each row
#   mismatch   3 ranks, TPU_DIST_CHECK=1: a different count / root on one rank is reported on all
#              (and with TPU_DIST_MODE=debug, which runs the same check)
#   debug      3 ranks: a debug-mode communicator (config.mode) completes collectives at the call
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/mpi/launch.sh
export TPU_DIST_TIMEOUT_MS=${TPU_DIST_TIMEOUT_MS:-20000}
job=${TD_BUILDDIR:-.}/tests/fault/fault_job
case "${1:-}" in
  abort) launch 2 $job abort ;;
  flight) launch 1 $job flight ;;
  badargs) launch 2 $job badargs && launch 3 env TPU_DIST_TRANSPORTS=socket $job badargs ;;
  mismatch)
    launch 3 env TPU_DIST_CHECK=1 $job mismatch &&
      launch 4 env TPU_DIST_CHECK=1 TPU_DIST_TRANSPORTS=socket $job mismatch &&
      launch 3 env TPU_DIST_MODE=debug $job mismatch ;;
  debug) launch 3 $job debug && launch 2 env TPU_DIST_TRANSPORTS=socket $job debug ;;
  *) sed -n '2,10p' "$0"; exit 2 ;;
esac
