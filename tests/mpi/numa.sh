#!/usr/bin/env bash
# tests/mpi/numa.sh - suite mpi-numa: the two-level form inside a host of several NUMA nodes. Every
# rank reads the synthetic host "pack:2 numa:2 core:4 pu:1" (HWLOC_SYNTHETIC: 2 packages x 2 NUMA
# nodes x 4 cores; nothing is bound on a host that is not this machine) and places itself with
# TPU_DIST_BIND=core, so 8 ranks are 2 to a node and 16 ranks 4 to a node; each must log that NUMA
# level and the topology it gives (flat(N):hosts=N:numa=M). The hier all-reduce, all-gather,
# reduce-scatter, broadcast and reduce, forced by name (TPU_DIST_ALGO), run the small part of
# test_mpi (every dtype x op at counts {0, 1, 7, 1000}, in and out of place, on the world and its
# splits) at 8 and 16 ranks oversubscribed, checked exactly against the local reference; the world
# communicator must report hier.
set -uo pipefail
cd "$(dirname "$0")/../.."
export TD_MPI_ONLY=small TPU_DIST_TIMEOUT_MS=${TPU_DIST_TIMEOUT_MS:-120000}
algos=allreduce=hier,allgather=hier,reducescatter=hier,broadcast=hier,reduce=hier
fail=0
for np in 8 16; do
  per=$((np / 4)) log=tests/out/numa-np$np.log t0=$(date +%s)
  if mpirun -np "$np" --oversubscribe --mca mpi_yield_when_idle 1 \
    env HWLOC_SYNTHETIC="pack:2 numa:2 core:4 pu:1" TPU_DIST_BIND=core TPU_DIST_ALGO=$algos \
    TPU_DIST_DEBUG=INFO TPU_DIST_DEBUG_SUBSYS=INIT tests/mpi/test_mpi --expect-algo "$algos" \
    --expect-from 0 </dev/null >"$log" 2>&1; then
    levels=$(grep -c "NUMA level: $per ranks per node, 4 nodes (TPU_DIST_BIND=core)" "$log")
    topos=$(grep -c "topology flat($np):hosts=$np:numa=$per," "$log")
    if [ "$levels" -ge "$np" ] && [ "$topos" -ge "$np" ]; then
      echo "numa np $np: ok ($(($(date +%s) - t0)) s) $(grep -o 'test_mpi np.*' "$log")"
    else
      echo "numa np $np: FAILED: $levels ranks logged the NUMA level, $topos the topology ($log)"
      fail=1
    fi
  else
    echo "numa np $np: FAILED ($log)"
    grep -v ERROR "$log" | head -5
    fail=1
  fi
done
exit $fail
