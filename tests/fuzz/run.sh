#!/usr/bin/env bash
# tests/fuzz/run.sh - builds the libFuzzer targets with clang (-fsanitize=fuzzer,address,undefined)
# in an out-of-tree build of a clean copy of the tracked sources, and runs each for
# TD_FUZZ_SECONDS (default 40) from its committed corpus (tests/fuzz/corpus/TARGET). A crash, a
# sanitizer report or a leak fails the run and leaves the input in WORKDIR/TARGET-artifacts/.
# New interesting inputs go to WORKDIR/TARGET-new/ (merge them into the corpus by hand with
# -merge=1 when they are worth keeping).
#   tests/fuzz/run.sh [WORKDIR]      default: $TMPDIR/tpu_dist-fuzz
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
work=${1:-${TMPDIR:-/tmp}/tpu_dist-fuzz}
secs=${TD_FUZZ_SECONDS:-40}
command -v clang >/dev/null || { echo "fuzz: clang is not installed"; exit 1; }
src=$work/src
source "$top/tests/tree_copy.sh"
treeCopy "$top" "$src" || exit 1
cd "$src" || exit 1
mkdir -p build-fuzz && cd build-fuzz || exit 1
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
# the portable kernels: clang does not know every cpu feature name gcc's dispatch asks for
cflags="-g -O1 -fsanitize=fuzzer-no-link $san -DTD_KERNELS_PORTABLE"
../configure -q CC=clang CFLAGS="$cflags" >configure.log 2>&1 || { tail -20 configure.log; exit 1; }
make -j"${TD_MAKE_JOBS:-2}" libtdrt.la libtdpure.la >make.log 2>&1 ||
  { grep -E "error" make.log | head -20; exit 1; }
inc="-I../include -I../base -I../topology -I../kernels -I../src/rt -I../src/bootstrap"
for d in ir validate algos algos/common cost drive select; do inc+=" -I../collectives/$d"; done
inc+=" -I../src/transport -I../src/transport/shm -I../src/transport/socket -I../src/exec"
inc+=" -I../src/core -D_GNU_SOURCE"
libs=".libs/libtdrt.a .libs/libtdpure.a -lssl -lcrypto $(pkg-config --libs hwloc) -ldl -lm -pthread"
rc=0
for t in bootstrap socket sched topo config env; do
  clang -g -O1 -fsanitize=fuzzer $san $inc ../tests/fuzz/fuzz_$t.c $libs -o fuzz_$t ||
    { echo "fuzz: cannot build fuzz_$t"; exit 1; }
  mkdir -p "$work/$t-new" "$work/$t-artifacts"
  echo "== fuzz_$t: ${secs}s"
  ./fuzz_$t -max_total_time="$secs" -max_len=4096 -timeout=10 -rss_limit_mb=1024 \
    -artifact_prefix="$work/$t-artifacts/" -print_final_stats=1 \
    "$work/$t-new" "$top/tests/fuzz/corpus/$t" >"$work/$t.log" 2>&1
  st=$?
  grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb|Done)|cov:" "$work/$t.log" | tail -3
  if [ $st -ne 0 ]; then
    echo "fuzz_$t FAILED (status $st), inputs in $work/$t-artifacts:"
    grep -E -A15 "ERROR|runtime error|deadly signal" "$work/$t.log" | head -40
    rc=1
  fi
done
[ $rc -eq 0 ] && echo "fuzz: clean"
exit $rc
