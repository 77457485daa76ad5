#!/bin/sh
# tests/sim/scale.sh - the simulator at pod scale, measured as CPU time (user + sys) and peak RSS of
# the process (the test machine is shared: wall time is reported, not checked):
#  - the selected all-reduce over 8192 chips (v5p figures, 16x16x32, 1 GiB, torus) and the selected
#    all-to-all over 8192 chips (v7, 16x16x32, 1 GiB, direct) within 5 and 8 s (issue targets 30
#    and 60 s) and 512 MiB (target 4 GiB). Both run in the translation quotient (sim/sym.c: rank 0
#    stands for every rank, checked to be their translate); the test asserts that it engaged.
#    Measured 1.2-1.4 s and 1.9-2.1 s, 48 MiB (2026-12-02, load average above 100).
#  - the pairwise all-to-all, whose peers follow rank numbers (no translation symmetry: every rank
#    is simulated), over 2048 chips (8x16x16, 64 MiB) within 60 s and 8 GiB (measured 17-19 s);
#    4096 chips (16x16x16, 256 MiB) within 240 s with TD_FULL=1 (measured 114-124 s). Memory
#    follows the steps in flight: fewer steps held than the plans have, at most 4 KiB of peak RSS
#    per held step.
# Run from the top of the tree.
set -u
SIM=${SIM:-tools/tpudist-sim}
fail=0

# run NAME LIMIT_S LIMIT_KB SYMMETRIC(0|1) ARGS...
run() {
  name=$1 lim=$2 limkb=$3 sym=$4
  shift 4
  out=$(/usr/bin/time -f "cpu %U %S rss %M wall %e" "$SIM" "$@" 2>&1)
  rc=$?
  echo "$out" | sed "s/^/  [$name] /"
  [ $rc -eq 0 ] || { echo "FAIL $name: exit $rc"; fail=1; return; }
  set -- $(echo "$out" | sed -n 's/^cpu \([0-9.]*\) \([0-9.]*\) rss \([0-9]*\) wall.*/\1 \2 \3/p')
  cpu=$(echo "$1 + $2" | bc)
  rss=$3
  held=$(echo "$out" | sed -n 's/.*steps held max \([0-9]*\).*/\1/p')
  msgs=$(echo "$out" | sed -n 's/.*messages \([0-9]*\).*/\1/p')
  echo "  [$name] cpu ${cpu} s (limit $lim), rss ${rss} KB (limit $limkb), steps held $held, messages $msgs"
  [ "$(echo "$cpu < $lim" | bc)" = 1 ] || { echo "FAIL $name: ${cpu} s"; fail=1; }
  [ "$rss" -lt "$limkb" ] || { echo "FAIL $name: ${rss} KB"; fail=1; }
  # windows, not plans: fewer steps held than the plans have (at most two per message)
  [ "$held" -lt $((2 * msgs)) ] || { echo "FAIL $name: held $held steps of $msgs messages"; fail=1; }
  if [ "$sym" = 1 ]; then
    echo "$out" | grep -q '^  symmetric: 1 ranks stood for all' ||
      { echo "FAIL $name: not simulated as rank 0's translates"; fail=1; }
  else
    [ $((rss * 1024 / (held + 1))) -lt 4096 ] || { echo "FAIL $name: $rss KB for $held steps"; fail=1; }
  fi
}

MIB512=$((512 * 1024))
GIB8=$((8 * 1024 * 1024))
run allreduce-8192 ${LIMIT_S_AR:-5} $MIB512 1 --preset v5p --topology 16x16x32 --coll allreduce \
  --bytes 1G --algo auto --dma 2
run alltoall-8192 ${LIMIT_S_A2A:-8} $MIB512 1 --preset v7 --topology 16x16x32 --coll alltoall \
  --bytes 1G --algo auto
run alltoall-pairwise-2048 ${LIMIT_S_PW:-60} $GIB8 0 --preset v5p --topology 8x16x16 \
  --coll alltoall --bytes 64M --algo pairwise --window 1024
[ "${TD_FULL:-0}" = 1 ] && run alltoall-pairwise-4096 ${LIMIT_S_FULL:-240} $GIB8 0 --preset v5p \
  --topology 16x16x16 --coll alltoall --bytes 256M --algo pairwise --window 2048
[ $fail -eq 0 ] && echo "sim-scale: ok"
exit $fail
