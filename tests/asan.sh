#!/usr/bin/env bash
# tests/asan.sh - the AddressSanitizer + UndefinedBehaviorSanitizer pass: configures a separate,
# out-of-tree build (build-asan, `../configure --enable-sanitizers`) from a clean copy of the
# tracked sources (a source tree configured in place cannot host an out-of-tree build), builds the
# library and the tests, and runs there the unit suites, the schedule suite (up to 16 ranks) and a small MPI
# (mpirun -np 2 / -np 3 tests/mpi/test_mpi, shm and socket), plus the fault jobs (tests/fault:
# invalid arguments, flight record, abort, mismatch, a hostile peer beside an 8-rank job, fault
# injection, killed ranks, non-blocking creation and its abort, defer mode against strict (fused
# hosts over their members' buffers), the JSON record, health queries, survivors shrinking, 20
# chaos trials).
# Any sanitizer report (leaks included, except under mpirun) fails the run.
#   tests/asan.sh [WORKDIR]     default: $TMPDIR/tpu_dist-asan (emptied first)
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-${TMPDIR:-/tmp}/tpu_dist-asan}
src=$work/src
source "$top/tests/tree_copy.sh"
treeCopy "$top" "$src" || exit 1
cd "$src" || exit 1
mkdir -p build-asan && cd build-asan || exit 1
../configure -q --enable-sanitizers >configure.log 2>&1 || { tail -20 configure.log; exit 1; }
jobs=${TD_MAKE_JOBS:-2}
make -j"$jobs" >make.log 2>&1 && make -j"$jobs" check TESTS= >>make.log 2>&1 ||
  { grep -E "error|Error" make.log | head -20; exit 1; }
echo "asan: built in $src/build-asan"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1:detect_odr_violation=0
export LSAN_OPTIONS=print_suppressions=0
[ -f "$src/tests/lsan.supp" ] && LSAN_OPTIONS+=:suppressions=$src/tests/lsan.supp
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1
export TPU_DIST_TIMEOUT_MS=60000
pass=0 fail=0 failed=()
run() {
  local name=$1; shift
  local log=$work/$name.log t0=$SECONDS
  "$@" >"$log" 2>&1
  local rc=$?
  if [ $rc -eq 0 ] && ! grep -qE "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:" "$log"; then
    pass=$((pass + 1)); printf 'asan %-22s PASS %5ss\n' "$name" $((SECONDS - t0))
  else
    fail=$((fail + 1)); failed+=("$name")
    printf 'asan %-22s FAIL %5ss (rc %d, log %s)\n' "$name" $((SECONDS - t0)) $rc "$log"
    grep -E -A12 "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:" "$log" | head -30
    tail -5 "$log"
  fi
}
# (unit-select is left out: its CPU-time bound on building a selection table does not hold at
# sanitizer speed)
for t in topology host kernels validate sched_io fuse cost bootstrap transport ofi exec_parts; do
  [ -x tests/unit/test_$t ] && run unit-$t tests/unit/test_$t
done
# every generator through the validator, flat shapes up to 16 ranks and the small tori
run sched env TD_SCHED_MAX_RANKS=16 tests/sched/test_sched
# MPI runs: LeakSanitizer is off there (Open MPI's own allocations); ASan/UBSan stay on
if [ -x tests/mpi/test_mpi ]; then
  run mpi-np2 env ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0 mpirun -np 2 tests/mpi/test_mpi
  run mpi-np3-socket env ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0 TPU_DIST_TRANSPORTS=socket \
    mpirun -np 3 tests/mpi/test_mpi
fi
# jobs without mpirun (leak checking on): invalid arguments, a killed rank, fault injection
cd "$src" || exit 1
export TD_BUILDDIR=$src/build-asan
for m in badargs flight abort mismatch; do run fault-$m tests/fault/jobs.sh $m; done
run fault-hostile tests/fault/hostile.sh
run fault-inject tests/fault/inject.sh
run fault-kill env TPU_DIST_TIMEOUT_MS=10000 tests/fault/kill.sh 2 4 8
run fault-async tests/fault/async.sh
run fault-defer tests/fault/defer.sh exact
run fault-shrink env TPU_DIST_TIMEOUT_MS=10000 tests/fault/shrink.sh
run fault-chaos env TPU_DIST_TIMEOUT_MS=10000 tests/fault/chaos.sh 20
echo
[ $fail -gt 0 ] && echo "asan failed: ${failed[*]}"
echo "asan: $pass passed, $fail failed"
[ $fail -eq 0 ]
