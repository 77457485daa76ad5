#!/usr/bin/env bash
# tests/mpi/bind.sh - TPU_DIST_BIND on the real cores (docs/host.md): the ranks of TPU_DIST_COMM_ID
# jobs and of mpirun run `tpudist-info --host`, which prints each rank's sched_getaffinity (and
# whether every thread of the process has the same). Checked: none leaves every rank where it was;
# core puts local rank r of L on core r*C/L (the cores read from /sys, in package and unit order),
# also with more ranks than cores; a launcher's binding (taskset, mpirun --bind-to core) is left
# alone and said so at INFO; mpirun --bind-to none with core binds; numa on a host of one node
# binds to it; a synthetic topology (not this machine) binds nothing; a bad value is refused;
# TPU_DIST_SPIN_US stays on under the library's own binding and is ignored when a launcher put more
# ranks than units together.
# Run it unbound (its own affinity is what "where it was" means). Needs 2 cores.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/mpi/launch.sh
info=tools/tpudist-info
fail() { echo "bind: $*"; exit 1; }
mine=$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status)
# the allowed cores, each as its units' list, ordered by package then first unit
mapfile -t cores < <(for c in $(seq 0 $(($(nproc --all) - 1))); do
  taskset -c "$c" true 2>/dev/null || continue
  t=/sys/devices/system/cpu/cpu$c/topology
  echo "$(cat $t/physical_package_id) $(cat $t/thread_siblings_list)"
done | sort -n -k1,1 -k2,2 -u | awk '{print $2}' | awk '!seen[$0]++')
C=${#cores[@]}
[ "$C" -ge 2 ] || { echo "bind: needs 2 cores, this host has $C"; exit 1; }
echo "bind: $C cores (${cores[*]}), this shell on $mine"
# job N BIND [launcher...]: every rank's line "rank R local l/L ... pus X ... apart A: why"
job() {
  local n=$1 bind=$2
  shift 2
  launch "$n" env TPU_DIST_BIND="$bind" TPU_DIST_DEBUG=INFO TPU_DIST_DEBUG_SUBSYS=INIT "$@" \
    $info --host >/tmp/td_bind_$$.out 2>&1 || { cat /tmp/td_bind_$$.out; fail "job failed"; }
}
pus_of() { sed -n "s/^\[rank 0\] rank $1 local .* pus \([^ ]*\) .*/\1/p" /tmp/td_bind_$$.out; }
why_of() { sed -n "s/^\[rank 0\] rank $1 local .* apart [0-9]*: //p" /tmp/td_bind_$$.out; }
expect() { # expect N BIND: rank r on core r*C/N, every thread alike
  for ((r = 0; r < $1; r++)); do
    want=${cores[$((r * C / $1))]}
    [ "$(pus_of $r)" = "$want" ] || { cat /tmp/td_bind_$$.out; fail "$2: rank $r on $(pus_of $r), want $want"; }
  done
  grep -q "apart [1-9]" /tmp/td_bind_$$.out && { cat /tmp/td_bind_$$.out; fail "$2: threads bound apart"; }
  return 0
}
job 2 none
for r in 0 1; do [ "$(pus_of $r)" = "$mine" ] || fail "none: rank $r moved to $(pus_of $r)"; done
job 2 core
expect 2 core
grep -q "TPU_DIST_BIND=core: local rank 1 of 2 on core $((C / 2)) of $C; runs on PUs ${cores[$((C / 2))]};" \
  /tmp/td_bind_$$.out || { cat /tmp/td_bind_$$.out; fail "core: no INFO line for rank 1"; }
job 4 core # more ranks than cores on a 2-core host: cores shared evenly
expect 4 core-4
# spinning (TPU_DIST_SPIN_US, on by default) counts the units the ranks had before the library
# bound them
spin() { grep -c "TPU_DIST_SPIN_US ignored" /tmp/td_bind_$$.out; }
job $C core env TPU_DIST_DEBUG_SUBSYS=INIT,EXEC
[ "$(spin)" = 0 ] || fail "core, $C ranks: spinning turned off by the library's own binding"
job $((C + 1)) core env TPU_DIST_DEBUG_SUBSYS=INIT,EXEC
[ "$(spin)" = $((C + 1)) ] || fail "core, $((C + 1)) ranks: the default spin kept with more ranks than units"
last=${cores[$((C - 1))]}
job 2 core taskset -c "$last"
for r in 0 1; do
  [ "$(pus_of $r)" = "$last" ] || fail "taskset: rank $r moved to $(pus_of $r)"
  why_of $r | grep -q "already bound by its launcher: left alone" || fail "taskset: rank $r: $(why_of $r)"
done
grep -q "TPU_DIST_BIND=core: already bound by its launcher: left alone; runs on PUs $last;" \
  /tmp/td_bind_$$.out || fail "taskset: the INFO line does not say so"
job 2 core env TPU_DIST_SPIN_US=50 TPU_DIST_DEBUG_SUBSYS=INIT,EXEC taskset -c "$last"
[ "$(spin)" = 2 ] || fail "taskset: 2 ranks on one unit kept spinning"
job 2 numa # one NUMA node: bound to all of it (unchanged); several: r*N/L
nodes=$(env -u TPU_DIST_COMM_ID $info --host | sed -n 's/^packages .* numa \([0-9]*\) .*/\1/p')
if [ "$nodes" = 1 ]; then
  for r in 0 1; do [ "$(pus_of $r)" = "$mine" ] || fail "numa: rank $r on $(pus_of $r)"; done
fi
job 2 core env HWLOC_SYNTHETIC="pack:2 numa:2 core:16 pu:1"
for r in 0 1; do
  [ "$(pus_of $r)" = "$mine" ] || fail "synthetic: rank $r moved to $(pus_of $r)"
  why_of $r | grep -q "not this machine: not bound" || fail "synthetic: rank $r: $(why_of $r)"
done
out=$(launch 1 env TPU_DIST_BIND=socket $info --host 2>&1) && fail "TPU_DIST_BIND=socket accepted"
grep -q "TPU_DIST_BIND=socket: not none, core, numa or auto" <<<"$out" || fail "bad value: $out"
if command -v mpirun >/dev/null; then
  for b in core none; do
    TPU_DIST_COMM_ID=127.0.0.1:$(td_port) timeout 120 mpirun -np 2 --bind-to $b -x TPU_DIST_BIND=core \
      -x TPU_DIST_COMM_ID $info --host >/tmp/td_bind_$$.out 2>&1 || { cat /tmp/td_bind_$$.out; fail "mpirun --bind-to $b"; }
    sed -i 's/^/[rank 0] /' /tmp/td_bind_$$.out
    if [ $b = none ]; then
      expect 2 "mpirun --bind-to none"
    else
      for r in 0 1; do why_of $r | grep -q "launcher" || fail "mpirun --bind-to core: rank $r: $(why_of $r)"; done
    fi
  done
fi
rm -f /tmp/td_bind_$$.out
echo "bind: ok"
