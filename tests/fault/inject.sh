#!/usr/bin/env bash
# tests/fault/inject.sh - jobs driven by the fault-injection transport (TPU_DIST_FAULT), launched
# with TPU_DIST_COMM_ID (no mpirun):
#   delay    every send held 2 ms (shm and socket): every collective of tools/main_job still exact
#   drop     one rank's connection drops mid-job: every rank fails within the timeout + 2 s, then
#            all form a new communicator and complete all-reduces (fault_job inject)
#   corrupt  one message goes out one byte short: the receiver reports the length mismatch, every
#            rank fails, none hangs; then a new communicator works
#   badspec  a malformed TPU_DIST_FAULT fails init with a message naming it
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/mpi/launch.sh
export TPU_DIST_TIMEOUT_MS=${TPU_DIST_TIMEOUT_MS:-5000}
job=${TD_BUILDDIR:-.}/tests/fault/fault_job
run() { echo "== $*"; launch "$@" || { echo "FAILED: $*"; exit 1; }; }
noomp="env -u OMPI_COMM_WORLD_RANK -u OMPI_COMM_WORLD_SIZE"
run 3 $noomp TPU_DIST_FAULT=delay=2 "${TD_BUILDDIR:-.}"/tools/main_job --small
run 2 $noomp TPU_DIST_FAULT=delay=1 TPU_DIST_TRANSPORTS=socket "${TD_BUILDDIR:-.}"/tools/main_job --small
run 4 env TPU_DIST_FAULT=drop=300,rank=1 $job inject
run 3 env TPU_DIST_FAULT=drop=100,rank=0 TPU_DIST_TRANSPORTS=socket $job inject
run 4 env TPU_DIST_FAULT=corrupt=200,rank=2 $job inject
run 3 env TPU_DIST_FAULT=corrupt=120,rank=1 TPU_DIST_TRANSPORTS=socket $job inject
run 2 env TPU_DIST_FAULT=delay=1,explode=3 $job initfail
echo "inject: ok"
