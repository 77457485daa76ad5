#!/bin/sh
# tests/sim/podscale.sh - plans and selection at pod scale, within a bound on the peak RSS of the
# process (CPU time is printed, never checked: bench/plantime times these against a baseline):
#  - one rank's plan at 8192 ranks (16x16x32) from every generator, within 64 MiB;
#  - the selection table at 8192 (16x16x32) and 9216 (16x24x24) ranks within 64 MiB (the table's
#    own: the peak RSS less that of the same command on a 2x2 torus, the process' code and
#    libraries), with every
#    candidate costed (no "not costed" on the header line: symmetry, full evaluation or an
#    estimate of select_est.c) and a costed candidate for every collective (but send/recv) in
#    every size bucket;
#  - the simulator runs the torus all-to-all and the MoE layer (--moe).
# Run from the top of the tree.
set -u
INFO=${INFO:-tools/tpudist-info}
SIM=${SIM:-tools/tpudist-sim}
MIB64=65536
fail=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# measure NAME LIMIT_KB CMD...: runs CMD into $out; sets cpu and rss (less $BASE KB)
BASE=0
measure() {
  name=$1 limkb=$2
  shift 2
  /usr/bin/time -f "TIME %U %S %M" "$@" >"$out" 2>&1
  rc=$?
  set -- $(sed -n 's/^TIME \([0-9.]*\) \([0-9.]*\) \([0-9]*\)$/\1 \2 \3/p' "$out")
  cpu=$(echo "$1 + $2" | bc)
  rss=$(($3 - BASE))
  over=""
  [ "$BASE" -gt 0 ] && over=" more than the base's $BASE KB"
  echo "  [$name] cpu ${cpu} s, rss ${rss} KB$over (limit $limkb)"
  [ $rc -eq 0 ] || { echo "FAIL $name: exit $rc"; tail -3 "$out"; fail=1; return 1; }
  [ "$rss" -lt "$limkb" ] || { echo "FAIL $name: ${rss} KB"; fail=1; }
  return 0
}

echo "one rank's plan at 8192 ranks (16x16x32)"
for pair in allreduce/ring allreduce/ring2 allreduce/tree allreduce/recdbl \
  allreduce/rabenseifner allreduce/torus broadcast/tree broadcast/chain reduce/tree \
  reduce/chain allgather/ring allgather/recdbl allgather/torus reducescatter/ring \
  reducescatter/recdbl reducescatter/torus alltoall/pairwise alltoall/direct alltoall/bruck \
  alltoall/torus sendrecv/direct; do
  coll=${pair%/*} algo=${pair#*/}
  for rank in 0 4097; do
    measure "$pair rank $rank" $MIB64 $INFO -d --coll "$coll" --algo "$algo" --rank $rank \
      --summary --topology 16x16x32 || continue
    grep -q '^total: sends' "$out" || { echo "FAIL $pair: no summary"; fail=1; }
  done
done

measure "select 2x2 (the base)" $MIB64 $INFO -s --topology 2x2 && BASE=$rss
for shape in 16x16x32 16x24x24; do
  echo "selection table on $shape"
  measure "select $shape" $MIB64 $INFO -s --topology $shape || continue
  head -1 "$out"
  grep -q '^# selection table: .*symmetric' "$out" || { echo "FAIL select $shape: no header"; fail=1; }
  ! grep -q 'not costed' "$out" || { echo "FAIL select $shape: candidates not costed"; fail=1; }
  # and no candidate without its cost (NAME:T) in any bucket (send/recv has one, direct)
  fixed=$(grep '^select ' "$out" | grep -v '^select sendrecv' | sed 's/.*candidates=//' | tr ',' '\n' |
    grep -vc ':[0-9]')
  [ "$fixed" -eq 0 ] || { echo "FAIL select $shape: $fixed candidates in the fixed order"; fail=1; }
  # every collective but send/recv: some candidate costed (ALGO:T) in every bucket
  bad=$(grep '^select ' "$out" | grep -v '^select sendrecv' | grep -vc 'candidates=.*:[0-9]')
  [ "$bad" -eq 0 ] || { echo "FAIL select $shape: $bad buckets without a costed candidate"; fail=1; }
done

echo "simulator: torus all-to-all, MoE layer"
BASE=0
measure "sim alltoall torus 4x4x8" $((4 * 1024 * 1024)) $SIM --preset v7 --topology 4x4x8 \
  --coll alltoall --bytes 4M --algo torus && grep 'alltoall torus' "$out"
measure "sim moe 4x4x8" $((4 * 1024 * 1024)) $SIM --preset v7 --topology 4x4x8 --moe \
  --algos pairwise,torus && cat "$out" | grep -v '^TIME'
rows=$(grep -Ec '^(local|spread) +(uniform|zipf) +(pairwise|torus) +[0-9]' "$out")
[ "$rows" -eq 8 ] || { echo "FAIL moe: $rows of 8 rows"; fail=1; }
# the bound is a lower bound: no simulated layer may beat it
over=$(grep -E '^(local|spread) ' "$out" | awk '{ v = $NF; sub("%", "", v); if (v + 0 > 100.05) n++ } END { print n + 0 }')
[ "$over" -eq 0 ] || { echo "FAIL moe: $over rows faster than their bound"; fail=1; }
[ $fail -eq 0 ] && echo "pod-scale: ok"
exit $fail
