#!/bin/sh
# tests/sim/scale.sh - the simulator at pod scale: the selected algorithm's all-reduce over 8192
# chips (v5p-style 16x16x32, 1 GiB) and the pairwise all-to-all over 2048 chips (8x16x16, 64 MiB;
# 4096 chips, 16x16x16, 256 MiB with TD_FULL=1) must each simulate within a bound of CPU time and
# 8 GiB of memory (peak RSS), with memory following the steps in flight (the tool reports the most
# steps held at once; it must stay below the total the plans have; at most 4 KiB of peak RSS per
# held step). CPU time rather than wall time: the test machine is shared. The bounds (120, 60 and
# 240 s) are two to three times what this machine measured (2026-12-01, the other core busy): all-reduce-8192 54 s,
# all-to-all-2048 17-19 s, all-to-all-4096 114 s before this round's changes and 124 s after (the
# same simulator: the machine, not the code, moved since the 60 s bound was set).
# Run from the top of the tree.
set -u
SIM=${SIM:-tools/tpudist-sim}
LIMIT_S=${LIMIT_S:-120}
LIMIT_KB=$((8 * 1024 * 1024))
fail=0

run() {
  name=$1
  shift
  out=$(/usr/bin/time -f "cpu %U %S rss %M wall %e" "$SIM" "$@" 2>&1)
  rc=$?
  echo "$out" | sed "s/^/  [$name] /"
  [ $rc -eq 0 ] || { echo "FAIL $name: exit $rc"; fail=1; return; }
  set -- $(echo "$out" | sed -n 's/^cpu \([0-9.]*\) \([0-9.]*\) rss \([0-9]*\) wall.*/\1 \2 \3/p')
  cpu=$(echo "$1 + $2" | bc)
  rss=$3
  held=$(echo "$out" | sed -n 's/.*steps held max \([0-9]*\).*/\1/p')
  msgs=$(echo "$out" | sed -n 's/.*messages \([0-9]*\).*/\1/p')
  echo "  [$name] cpu ${cpu} s (limit $LIMIT_S), rss ${rss} KB (limit $LIMIT_KB), steps held $held, messages $msgs"
  [ "$(echo "$cpu < $LIMIT_S" | bc)" = 1 ] || { echo "FAIL $name: ${cpu} s"; fail=1; }
  [ "$rss" -lt "$LIMIT_KB" ] || { echo "FAIL $name: ${rss} KB"; fail=1; }
  # windows, not plans: fewer steps held than the plans have (at most two per message), and a
  # bounded footprint per held step
  [ "$held" -lt $((2 * msgs)) ] || { echo "FAIL $name: held $held steps of $msgs messages"; fail=1; }
  [ $((rss * 1024 / (held + 1))) -lt 4096 ] || { echo "FAIL $name: $rss KB for $held steps"; fail=1; }
}

run allreduce-8192 --preset v5p --topology 16x16x32 --coll allreduce --bytes 1G --algo auto \
  --dma 2
# pairwise named: selection, which costs all-to-all at pod scale now, picks direct here, whose
# 16.7 M messages all in flight at once the flow model cannot re-level within the budget
LIMIT_S=${LIMIT_S_A2A:-60} run alltoall-2048 --preset v5p --topology 8x16x16 --coll alltoall \
  --bytes 64M --algo pairwise --window 1024
[ "${TD_FULL:-0}" = 1 ] && LIMIT_S=${LIMIT_S_FULL:-240} run alltoall-4096 --preset v5p \
  --topology 16x16x16 --coll alltoall --bytes 256M --algo pairwise --window 2048
[ $fail -eq 0 ] && echo "sim-scale: ok"
exit $fail
