#!/usr/bin/env bash
# tests/mpi/direct.sh - suite mpi-direct: the direct (one-shot) all-reduce, all-gather,
# reduce-scatter and broadcast forced by name (TPU_DIST_ALGO) at 16 and 32 ranks on this host,
# oversubscribed: the small part of test_mpi (every dtype x op at counts {0, 1, 7, 1000}, in and
# out of place, on the world and its splits) checked exactly against the local reference, and the
# world communicator must report `direct` at every size. TD_FULL=1 adds 64 ranks.
set -uo pipefail
cd "$(dirname "$0")/../.."
export TD_MPI_ONLY=small TPU_DIST_TIMEOUT_MS=${TPU_DIST_TIMEOUT_MS:-120000}
export TPU_DIST_ALGO=allreduce=direct,allgather=direct,reducescatter=direct,broadcast=direct
nps="16 32"
[ "${TD_FULL:-0}" = 1 ] && nps="$nps 64"
fail=0
for np in $nps; do
  log=tests/out/direct-np$np.log t0=$(date +%s)
  if mpirun -np "$np" --oversubscribe --mca mpi_yield_when_idle 1 tests/mpi/test_mpi \
    --expect-algo allreduce=direct,allgather=direct,reducescatter=direct,broadcast=direct \
    --expect-from 0 </dev/null >"$log" 2>&1; then
    echo "direct np $np: ok ($(($(date +%s) - t0)) s) $(grep -o 'test_mpi np.*' "$log")"
  else
    echo "direct np $np: FAILED ($log)"
    grep -v ERROR "$log" | head -5
    fail=1
  fi
done
exit $fail
