#!/usr/bin/env bash
# tests/bench/smoke.sh - every *_perf tool at tiny sizes with -c 1 (exact checks) at 2 and 3
# ranks, both implementations, plus skewed and MoE-shaped all-to-all-v. Fails on any #wrong,
# any error, or a missing "Avg bus bandwidth" line; also the copy bound with 3 processes at once.
set -u
cd "$(dirname "$0")/../.."
fails=0 runs=0
run() {
  local np=$1; shift
  runs=$((runs+1))
  out=$(timeout 120 mpirun -np "$np" --bind-to none "$@" 2>&1); rc=$?
  if [ $rc -ne 0 ] || ! grep -q "Avg bus bandwidth" <<<"$out" || ! grep -q "Out of bounds values : 0 OK" <<<"$out"; then
    fails=$((fails+1)); echo "FAIL (rc $rc): np $np $*"; echo "$out" | tail -8
  else
    echo "ok: np $np $*"
  fi
}
for np in 2 3; do
  for t in all_reduce all_gather reduce_scatter alltoall alltoallv broadcast reduce sendrecv; do
    run $np bench/${t}_perf -b 8 -e 64K -f 8 -n 2 -w 1 -c 1
    run $np bench/${t}_perf -b 8 -e 64K -f 8 -n 2 -w 1 -c 1 -I mpi
  done
  run $np bench/all_reduce_perf -b 1K -e 4K -f 4 -n 2 -c 1 -d bfloat16 -o max
  run $np bench/all_reduce_perf -b 1K -e 4K -f 4 -n 2 -c 1 -d int8 -o prod -A ring
  run $np bench/all_reduce_perf -b 1K -e 4K -f 4 -n 2 -c 1 -d half -o avg -A tree
  run $np bench/reduce_perf -b 1K -e 4K -f 4 -n 2 -c 1 -r $((np-1)) -d double -o min
  run $np bench/alltoallv_perf -b 1K -e 16K -f 4 -n 2 -c 1 -k 0.9
  run $np bench/alltoallv_perf -n 2 -c 1 -T 64 -H 32 -K 2 -k 1.2 -d bfloat16
done
# bench/paired and bench/plantime (one A/A round of this tree against itself) and bench/callcost
# (valgrind)
tmp=$(mktemp -d)
runs=$((runs+1))
if out=$(timeout 120 bench/paired --rounds 1 --tools all_reduce_perf:8:64 --out "$tmp/p.csv" . . 2>&1) &&
   grep -q "^all_reduce_perf  *64 " <<<"$out"; then echo "ok: bench/paired"
else fails=$((fails+1)); echo "FAIL: bench/paired"; echo "$out" | tail -8; fi
runs=$((runs+1))
if out=$(timeout 120 bench/plantime --rounds 1 --cases select-64 . . 2>&1) &&
   grep -q "^select-64  *[0-9.]*  *[0-9.]*  *[0-9.]*$" <<<"$out"; then echo "ok: bench/plantime"
else fails=$((fails+1)); echo "FAIL: bench/plantime"; echo "$out" | tail -8; fi
runs=$((runs+1))
if out=$(timeout 300 bench/callcost all_reduce_perf . 2>&1) && grep -q "instructions/call" <<<"$out"; then
  echo "ok: bench/callcost: $out"
else fails=$((fails+1)); echo "FAIL: bench/callcost"; echo "$out" | tail -8; fi
runs=$((runs+1))
# the copy bound: 1 and 3 processes copying at once, one "bytes GB/s" line per size
if out=$(timeout 60 bench/memcpy_bw 65536 262144 3 3 2>&1) &&
   [ "$(awk 'NF == 2 && $2 > 0 {n++} END {print n}' <<<"$out")" = 3 ]; then echo "ok: bench/memcpy_bw 3 procs"
else fails=$((fails+1)); echo "FAIL: bench/memcpy_bw"; echo "$out" | tail -8; fi
rm -rf "$tmp"
echo "$((runs-fails)) passed, $fails failed"
[ $fails -eq 0 ]
