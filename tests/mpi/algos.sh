#!/usr/bin/env bash
# tests/mpi/algos.sh - every registered algorithm through the real runtime: for each collective and
# algorithm of `tpudist-info -a`, the small part of test_mpi runs with TPU_DIST_ALGO forcing it
# (torus algorithms on a 2x2 torus at 4 ranks; hierarchical ones on one host emulating an outer
# level: 2 hosts of 2 ranks, 2 slices of a 2x2 torus, 3 slices of 2 ranks; the others flat at 3
# ranks), with tiny pipeline
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
    case "$algo" in
      torus) shapes="4:2x2" ;;
      hier) shapes="4:flat(4):hosts=2 8:2x2:slices=2 6:flat(2):slices=3" ;;
      *) shapes="3:" ;;
    esac
    for shape in $shapes; do
      np=${shape%%:*} topo=${shape#*:}
      log="tests/out/algos-$coll-$algo${topo:+-${topo//[:(),=]/_}}.log"
      t0=$(date +%s)
      if TPU_DIST_ALGO=$coll=$algo TPU_DIST_TOPOLOGY=$topo mpirun -np $np tests/mpi/test_mpi \
        --expect-algo "$coll=$algo" --expect-from 0 </dev/null >"$log" 2>&1; then
        echo "$coll=$algo np $np ${topo:-flat}: ok ($(($(date +%s) - t0)) s)"
      else
        echo "$coll=$algo np $np ${topo:-flat}: FAILED ($log)"
        grep -v ERROR "$log" | head -5
        fail=1
      fi
    done
  done
done < <(tools/tpudist-info -a)
exit $fail
