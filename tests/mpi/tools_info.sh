#!/usr/bin/env bash
# tests/mpi/tools_info.sh - tpudist-info: docs/env.md is what `-c --markdown` generates (no drift
# from the configuration table); -a lists every collective; -d dumps a schedule in the text format
# and --summary accounts its bytes; -s prints the selection table; --host prints the host (this one
# and a synthetic one) and the NUMA level and factor the library would take (a recorded host with
# a SLIT and a synthetic one without, alone and as a job); bad arguments exit non-zero.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/mpi/launch.sh
info=tools/tpudist-info
fail() { echo "tools-info: $*"; exit 1; }
diff <($info -c --markdown) docs/env.md || fail "docs/env.md is stale: run $info -c --markdown > docs/env.md"
$info -c | grep '^TPU_DIST_TIMEOUT_MS' >/dev/null || fail "-c lacks TPU_DIST_TIMEOUT_MS"
for c in allreduce broadcast reduce allgather reducescatter alltoall alltoallv sendrecv; do
  $info -a | grep "^$c " >/dev/null || fail "-a lacks $c"
done
$info -d --coll allreduce --algo ring --nranks 4 --rank 1 >/tmp/td_info_$$.sched || fail "-d failed"
head -1 /tmp/td_info_$$.sched | grep '^tpu_dist-schedule 1$' >/dev/null || fail "-d: bad header"
tail -1 /tmp/td_info_$$.sched | grep '^end$' >/dev/null || fail "-d: no end line"
rm -f /tmp/td_info_$$.sched
# ring all-reduce of 4 Mi 4-byte elements on 4 ranks: each rank sends 2*(n-1)/n of 16 MiB
$info -d --coll allreduce --algo ring --nranks 4 --rank 0 --count 4194304 --summary |
  grep '^total: sends 25165824 bytes, receives 25165824 bytes$' >/dev/null || fail "--summary bytes"
$info -s --topology 2x2 | grep '^select allreduce bytes=1048576 best=' >/dev/null || fail "-s"
$info -d --coll nosuch --nranks 2 --rank 0 2>/dev/null && fail "bad --coll accepted"
$info -s --topology 3x3 --nranks 4 2>/dev/null && fail "rank count mismatch accepted"
# the tool sees what the library sees: TPU_DIST_TOPOLOGY without --topology, TPU_DIST_ALGO
TPU_DIST_TOPOLOGY=2x2 $info -s 2>/dev/null | grep '^# selection table: topology 2x2 nranks 4' >/dev/null ||
  fail "-s ignores TPU_DIST_TOPOLOGY"
TPU_DIST_ALGO=allreduce=ring $info -s --nranks 4 | grep '^select allreduce bytes=1 best=ring ' >/dev/null ||
  fail "-s ignores TPU_DIST_ALGO"
# a value that does not parse is refused with its name, not read as something else
out=$(TPU_DIST_TIMEOUT_MS=12ms $info -c 2>&1 >/dev/null) && fail "TPU_DIST_TIMEOUT_MS=12ms accepted"
echo "$out" | grep 'TPU_DIST_TIMEOUT_MS=12ms: not an integer' >/dev/null || fail "bad value message: $out"
out=$(TPU_DIST_SHM_CMA=2 $info -c 2>&1 >/dev/null) && fail "TPU_DIST_SHM_CMA=2 accepted"
echo "$out" | grep 'TPU_DIST_SHM_CMA=2: out of range \[0, 1\]' >/dev/null || fail "range message: $out"
# --host: what the library reads with hwloc; a synthetic machine (HWLOC_SYNTHETIC) in full
out=$(env -u TPU_DIST_COMM_ID $info --host) || fail "--host failed"
grep -q '^host: this host$' <<<"$out" || fail "--host: $out"
grep -q "^packages [0-9]* numa [0-9]* cores [0-9]* pus $(nproc)\$" <<<"$out" || fail "--host pus: $out"
grep -q "^this process host .* pid [0-9]* pus $(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status) " \
  <<<"$out" || fail "--host: this process: $out"
out=$(env -u TPU_DIST_COMM_ID HWLOC_SYNTHETIC="pack:2 numa:2 l3:1(size=32MiB) core:16 l2:1(size=2MiB) pu:1" \
  $info --host) || fail "--host (synthetic) failed"
for want in '^packages 2 numa 4 cores 64 pus 64$' '^caches: L1d=none L2=2MiB L3=32MiB/16cores$' \
  '^chunk from caches: 262144 bytes$' '^numa 2 (os 2): 1024 MiB, cores 16, pus 16: 32-47$'; do
  grep -q "$want" <<<"$out" || fail "--host (synthetic) lacks $want: $out"
done
# --host --nranks N: the NUMA level N ranks of the host would form under TPU_DIST_BIND and the cost
# of a copy across nodes with its source. The recorded host's SLIT (tests/host/make_xml.sh): 10 in
# a node, 12 to the package's other node, 21 across packages; 8 ranks use every node (mean remote
# 18: 180%), 2 ranks nodes 0 and 2 (210%); a synthetic host has no matrix (the default, 200%);
# TPU_DIST_NUMA_FACTOR_PCT wins over both. As a job, rank 0 prints the communicator's level.
hostnuma() { # hostnuma N VAR=VALUE...
  local n=$1
  shift
  env -u TPU_DIST_COMM_ID "$@" $info --host --nranks "$n" || fail "--host --nranks $n $*: failed"
}
has() { # has OUT LINE...: each LINE is a whole line of OUT
  local out=$1 w
  shift
  for w in "$@"; do grep -qxF "$w" <<<"$out" || fail "--host lacks '$w': $out"; done
}
xml=HWLOC_XMLFILE=tests/host/numa-2x2-slit.xml
has "$(hostnuma 8 $xml TPU_DIST_BIND=core)" 'host: xml: (HWLOC_XMLFILE)' \
  'numa 3 distances: 21 21 12 10' 'TPU_DIST_BIND=core, 8 ranks' \
  'numa level: 8 ranks on nodes 0-3, 2 ranks per node' 'numa factor: 180% (hwloc distances)'
has "$(hostnuma 2 $xml TPU_DIST_BIND=core)" 'numa level: 2 ranks on nodes 0,2, 1 ranks per node' \
  'numa factor: 210% (hwloc distances)'
has "$(hostnuma 8 $xml TPU_DIST_BIND=core TPU_DIST_NUMA_FACTOR_PCT=150)" \
  'numa factor: 150% (TPU_DIST_NUMA_FACTOR_PCT)'
has "$(hostnuma 8 $xml TPU_DIST_BIND=none)" 'numa level: none for 8 ranks'
has "$(hostnuma 16 HWLOC_SYNTHETIC="pack:2 numa:2 core:4 pu:1" TPU_DIST_BIND=core)" \
  'numa level: 16 ranks on nodes 0-3, 4 ranks per node' 'numa factor: 200% (default)'
out=$(launch 8 env $xml TPU_DIST_BIND=core $info --host) || fail "--host as a job: $out"
has "$out" '[rank 0] numa level: 8 ranks on nodes 0-3, 2 ranks per node' \
  '[rank 0] numa factor: 180% (hwloc distances)'
echo "tools-info: ok"
