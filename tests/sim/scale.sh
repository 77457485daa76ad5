#!/bin/sh
# tests/sim/scale.sh - the simulator at pod scale, within bounds on the peak RSS of the process
# (CPU and wall time are printed, never checked: bench/plantime times these against a baseline):
#  - over 8192 chips (16x16x32), in the translation quotient (sim/sym.c; the test asserts that it
#    engaged and how many ranks stood for all): the selected all-reduce (v5p figures, 1 GiB, torus,
#    one rank), the selected all-to-all (v7, 1 GiB, direct, one rank) and the pairwise all-to-all
#    (v7, 1 GiB, one z-plane of 256 ranks), each within 512 MiB;
#  - every rank simulated, on a shape that breaks translations (twisted 8x16x16, 2048 chips:
#    pairwise, 64 MiB) within 8 GiB; with TD_FULL=1 the 4096-chip pairwise all-to-all (16x16x16,
#    256 MiB) every rank (--every-rank). Memory follows the steps in flight: fewer steps held than
#    the plans have, at most 4 KiB of peak RSS per held step.
# Run from the top of the tree.
set -u
SIM=${SIM:-tools/tpudist-sim}
fail=0

# run NAME LIMIT_KB REPS ARGS...: REPS ranks must stand for all (0: every rank simulated)
run() {
  name=$1 limkb=$2 reps=$3
  shift 3
  out=$(/usr/bin/time -f "cpu %U %S rss %M wall %e" "$SIM" "$@" 2>&1)
  rc=$?
  echo "$out" | sed "s/^/  [$name] /"
  [ $rc -eq 0 ] || { echo "FAIL $name: exit $rc"; fail=1; return; }
  set -- $(echo "$out" | sed -n 's/^cpu \([0-9.]*\) \([0-9.]*\) rss \([0-9]*\) wall.*/\1 \2 \3/p')
  cpu=$(echo "$1 + $2" | bc)
  rss=$3
  held=$(echo "$out" | sed -n 's/.*steps held max \([0-9]*\).*/\1/p')
  msgs=$(echo "$out" | sed -n 's/.*messages \([0-9]*\).*/\1/p')
  echo "  [$name] cpu ${cpu} s, rss ${rss} KB (limit $limkb), steps held $held, messages $msgs"
  [ "$rss" -lt "$limkb" ] || { echo "FAIL $name: ${rss} KB"; fail=1; }
  # windows, not plans: fewer steps held than the plans have (at most two per message)
  [ "$held" -lt $((2 * msgs)) ] || { echo "FAIL $name: held $held steps of $msgs messages"; fail=1; }
  if [ "$reps" -gt 0 ]; then
    echo "$out" | grep -q "^  symmetric: $reps ranks stood for all" ||
      { echo "FAIL $name: not simulated as $reps ranks' translates"; fail=1; }
  else
    echo "$out" | grep -q '^  symmetric:' && { echo "FAIL $name: expected every rank"; fail=1; }
    [ $((rss * 1024 / (held + 1))) -lt 4096 ] || { echo "FAIL $name: $rss KB for $held steps"; fail=1; }
  fi
}

MIB512=$((512 * 1024))
GIB8=$((8 * 1024 * 1024))
run allreduce-8192 $MIB512 1 --preset v5p --topology 16x16x32 --coll allreduce \
  --bytes 1G --algo auto --dma 2
run alltoall-8192 $MIB512 1 --preset v7 --topology 16x16x32 --coll alltoall \
  --bytes 1G --algo auto
run alltoall-pairwise-8192 $MIB512 256 --preset v7 --topology 16x16x32 \
  --coll alltoall --bytes 1G --algo pairwise --window 4096
run alltoall-pairwise-2048-twisted $GIB8 0 --preset v5p --topology 8x16x16 \
  --twist --coll alltoall --bytes 64M --algo pairwise --window 1024
[ "${TD_FULL:-0}" = 1 ] && run alltoall-pairwise-4096 $GIB8 0 --preset v5p \
  --topology 16x16x16 --coll alltoall --bytes 256M --algo pairwise --window 2048 --every-rank
[ $fail -eq 0 ] && echo "sim-scale: ok"
exit $fail
