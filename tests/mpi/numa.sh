#!/usr/bin/env bash
# tests/mpi/numa.sh - suite mpi-numa: the two-level form inside a host of several NUMA nodes. Every
# rank reads the synthetic host "pack:2 numa:2 core:4 pu:1" (HWLOC_SYNTHETIC: 2 packages x 2 NUMA
# nodes x 4 cores; nothing is bound on a host that is not this machine) and places itself with
# TPU_DIST_BIND=core, so 8 ranks are 2 to a node and 16 ranks 4 to a node; each must log that NUMA
# level and the topology it gives (flat(N):hosts=N:numa=M). The hier all-reduce, all-gather,
# reduce-scatter, broadcast and reduce, forced by name (TPU_DIST_ALGO), run the small part of
# test_mpi (every dtype x op at counts {0, 1, 7, 1000}, in and out of place, on the world and its
# splits) at 8 and 16 ranks oversubscribed, checked exactly against the local reference. Each split
# takes its level from its own members' nodes: halves (2 of the 4 nodes, M as the world's),
# reversed (the world's nodes backwards), odd-even (M halved: 1 rank a node at 8 ranks) and blocks
# of one node's ranks (one node: no level, and hier is refused there); every communicator with a
# level of more than one rank a node must report hier.
set -uo pipefail
cd "$(dirname "$0")/../.."
export TD_MPI_ONLY=small TPU_DIST_TIMEOUT_MS=${TPU_DIST_TIMEOUT_MS:-120000}
algos=allreduce=hier,allgather=hier,reducescatter=hier,broadcast=hier,reduce=hier
fail=0
# each communicator's topology, logged once by each of its ranks: np lines for each name in all
# (the world is the only communicator named comm-* that spans hosts=np)
topos() { # np per
  local np=$1 per=$2 half=$(($1 / 2))
  echo "comm-[0-9a-f]*:flat($np):hosts=$np:numa=$per halves:flat($half):numa=$per"
  echo "reversed:flat($np):numa=$per odd-even:flat($half):numa=$((per / 2)) blocks:flat($per)"
}
for np in 8 16; do
  per=$((np / 4)) log=tests/out/numa-np$np.log t0=$(date +%s) on=world,halves,reversed
  [ "$per" -gt 2 ] && on=$on,odd-even
  if mpirun -np "$np" --oversubscribe --mca mpi_yield_when_idle 1 \
    env HWLOC_SYNTHETIC="pack:2 numa:2 core:4 pu:1" TPU_DIST_BIND=core TPU_DIST_ALGO=$algos \
    TPU_DIST_DEBUG=INFO TPU_DIST_DEBUG_SUBSYS=INIT tests/mpi/test_mpi --expect-algo "$algos" \
    --expect-from 0 --expect-on "$on" --split-every "$per" </dev/null >"$log" 2>&1; then
    level="NUMA level: $per ranks per node, 4 nodes (TPU_DIST_BIND=core): nodes 0-3"
    levels=$(grep -c "$level, a copy across them costs 200% (default)" "$log")
    bad=""
    for nt in $(topos "$np" "$per"); do
      n=$(grep -c "${nt%%:*}: rank [0-9]* of [0-9]*, topology ${nt#*:}," "$log")
      [ "$n" -eq "$np" ] || bad="$bad ${nt%%:*}: $n of $np ranks logged ${nt#*:};"
    done
    if [ "$levels" -ge "$np" ] && [ -z "$bad" ]; then
      echo "numa np $np: ok ($(($(date +%s) - t0)) s) $(grep -o 'test_mpi np.*' "$log")"
    else
      echo "numa np $np: FAILED: $levels ranks logged the NUMA level;$bad ($log)"
      fail=1
    fi
  else
    echo "numa np $np: FAILED ($log)"
    grep -v ERROR "$log" | head -5
    fail=1
  fi
done
exit $fail
