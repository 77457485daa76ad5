#!/usr/bin/env bash
# tests/mpi/algos.sh - every registered algorithm through the real runtime: for each collective and
# algorithm of `tpudist-info -a`, the small part of test_mpi runs with TPU_DIST_ALGO forcing it
# (torus algorithms on a 2x2 torus at 4 ranks, the others flat at 3 ranks), with tiny pipeline
# pieces (TPU_DIST_CHUNK_BYTES=64) so that piece slicing and fused forwarding are exercised; the
# world communicator must report that algorithm (tpudistLastAlgorithm) at every size.
set -uo pipefail
cd "$(dirname "$0")/../.."
export TD_MPI_ONLY=small TPU_DIST_CHUNK_BYTES=${TPU_DIST_CHUNK_BYTES:-64} TPU_DIST_MAX_PIECES=0 TPU_DIST_TIMEOUT_MS=60000
fail=0
while read -r coll algos; do
  [ "$coll" = sendrecv ] && continue
  for algo in $algos; do
    case "$algo" in *"(not built)") continue ;; esac
    if [ "$algo" = torus ]; then np=4 topo=2x2; else np=3 topo=; fi
    t0=$(date +%s)
    if TPU_DIST_ALGO=$coll=$algo TPU_DIST_TOPOLOGY=$topo mpirun -np $np tests/mpi/test_mpi \
      --expect-algo "$coll=$algo" --expect-from 0 \
      </dev/null >"tests/out/algos-$coll-$algo.log" 2>&1; then
      echo "$coll=$algo np $np: ok ($(($(date +%s) - t0)) s)"
    else
      echo "$coll=$algo np $np: FAILED (tests/out/algos-$coll-$algo.log)"
      grep -v ERROR "tests/out/algos-$coll-$algo.log" | head -5
      fail=1
    fi
  done
done < <(tools/tpudist-info -a)
exit $fail
