#!/usr/bin/env bash
# tests/mpi/tools_info.sh - tpudist-info: docs/env.md is what `-c --markdown` generates (no drift
# from the configuration table); -a lists every collective; -d dumps a schedule in the text format
# and --summary accounts its bytes; -s prints the selection table; bad arguments exit non-zero.
set -uo pipefail
cd "$(dirname "$0")/../.."
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
echo "tools-info: ok"
