#!/usr/bin/env bash
# tests/sim/diff.sh - differential test: for every collective and algorithm of the registry, the
# same schedule runs in the real runtime (tests/sim/diff_rt under mpirun, TPU_DIST_ALGO forcing
# the algorithm, tiny pipeline pieces so fused forwarding is exercised) and in the simulator's
# functional mode (tpudist-sim --functional --fractional --dump-outputs). Inputs carry fractions,
# so float32 sums depend on the order of reduction: the outputs must be identical byte for byte.
# Torus algorithms on a 2x2 torus at 4 ranks, hierarchical ones on 2 emulated hosts of 2 ranks, the
# others flat at 3 ranks (as tests/mpi/algos.sh).
set -uo pipefail
cd "$(dirname "$0")/../.."
export TPU_DIST_CHUNK_BYTES=${TPU_DIST_CHUNK_BYTES:-64} TPU_DIST_MAX_PIECES=0 TPU_DIST_TIMEOUT_MS=60000
out=tests/out/sim-diff
mkdir -p "$out"
fail=0 runs=0
COUNT=${COUNT:-301}
for entry in allreduce:ring allreduce:ring2 allreduce:tree allreduce:recdbl \
  allreduce:rabenseifner allreduce:torus allgather:ring allgather:recdbl allgather:torus \
  reducescatter:ring reducescatter:recdbl reducescatter:torus broadcast:chain broadcast:tree \
  reduce:chain reduce:tree alltoall:pairwise alltoall:direct alltoall:bruck alltoall:torus \
  allreduce:hier allgather:hier reducescatter:hier broadcast:hier reduce:hier alltoall:hier; do
  coll=${entry%%:*} algo=${entry##*:}
  case $algo in
    torus) np=4 topo=2x2 simtopo=2x2:wrap=0,0 ;;
    hier) np=4 topo="flat(4):hosts=2" simtopo="flat(4):hosts=2" ;; # 2 emulated hosts of 2 ranks
    *) np=3 topo= simtopo="flat(3)" ;;
  esac
  # the simulator's --bytes in NCCL terms for a per-block count of COUNT float32
  case $coll in allgather | reducescatter | alltoall) bytes=$((COUNT * 4 * np)) ;; *) bytes=$((COUNT * 4)) ;; esac
  rt="$out/$coll-$algo.rt" sim="$out/$coll-$algo.sim"
  if ! TPU_DIST_ALGO=$coll=$algo TPU_DIST_TOPOLOGY=$topo mpirun -np $np tests/sim/diff_rt \
    "$coll" "$COUNT" "$rt" </dev/null >"$out/$coll-$algo.log" 2>&1; then
    echo "$coll=$algo: runtime FAILED"; head -5 "$out/$coll-$algo.log"; fail=1; continue
  fi
  if ! grep -q "^diff_rt: $coll ran $algo\$" "$out/$coll-$algo.log"; then
    echo "$coll=$algo: the runtime ran another algorithm: $(grep '^diff_rt:' "$out/$coll-$algo.log")"; fail=1; continue
  fi
  if ! tools/tpudist-sim --quiet --topology "$simtopo" --coll "$coll" --algo "$algo" \
    --bytes "$bytes" --piece "$TPU_DIST_CHUNK_BYTES" --functional --fractional \
    --dump-outputs "$sim" >>"$out/$coll-$algo.log" 2>&1; then
    echo "$coll=$algo: simulator FAILED"; tail -3 "$out/$coll-$algo.log"; fail=1; continue
  fi
  runs=$((runs + 1))
  if cmp -s "$rt" "$sim"; then
    echo "$coll=$algo np $np: identical ($(stat -c %s "$rt") bytes)"
  else
    echo "$coll=$algo np $np: DIFFERENT"; cmp "$rt" "$sim" | head -2; fail=1
  fi
done
echo "sim-diff: $runs compared, $([ $fail = 0 ] && echo ok || echo FAILED)"
exit $fail
