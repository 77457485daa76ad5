#!/usr/bin/env bash
# tests/torch2/run.sh - the torch 2.x suites: in a Debian root (tests/torch2/root.sh: trixie has
# torch 2.6, gcc 14, Open MPI 5.0; sid has torch 2.14, gcc 16, Open MPI 6.0), builds this tree's
# library and torch extension (both -Werror) from a copy of the source, then runs tests/torch (the
# cases the torch 1.13 suite runs) and tests/torch2 (the torch 2.x Backend features and
# backend-extension tests, FSDP, torchrun, torch's whole DistributedTest class).
#
#   tests/torch2/run.sh SUITE [PYTEST ARGS...]      SUITE: trixie or sid
#
# On sid, torch's own reconfigure tests (test/distributed/test_c10d_fault_tolerance.py, which the
# binary package does not ship) come from Debian's source package of the root's torch
# (tests/torch2/root.sh sid torch-tests, fetched once and cached in the root), or from the torch
# source tree of the same release that TD_TORCH_SRC names; without either,
# tests/torch2/test_torch_ft.py is skipped with the reason.
#
# The copy lives under the root's /build and is removed on exit. Each phase prints its elapsed
# time. TD_TORCH2_BENCH (arguments of bench/torch_perf.py, e.g. "--percall --rounds 5") runs that
# benchmark in the root after the build, before the tests.
set -euo pipefail
cd "$(dirname "$0")/../.."
suite=${1:?usage: tests/torch2/run.sh trixie|sid [PYTEST ARGS...]}
shift
root=${TD_ROOT_DIR:-/var/cache/tpu_dist/$suite-root}
export TD_ROOT_DIR=$root
t0=$(date +%s)
tests/torch2/root.sh "$suite" ensure
echo "== root ready after $(($(date +%s) - t0))s"

# A copy of the source (tracked and untracked files git does not ignore: no build outputs).
mkdir -p "$root/build"
dir=$(mktemp -d "$root/build/tpu_dist.XXXXXX")
trap 'rm -rf "$dir"' EXIT
git ls-files -z -co --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$dir"
rel=/build/$(basename "$dir")

ft_env=
if [ "$suite" = sid ]; then
  if [ -n "${TD_TORCH_SRC:-}" ]; then
    [ -f "$TD_TORCH_SRC/test/distributed/test_c10d_fault_tolerance.py" ] ||
      { echo "TD_TORCH_SRC=$TD_TORCH_SRC has no test/distributed/test_c10d_fault_tolerance.py" >&2; exit 1; }
    mkdir -p "$dir/.torch-test" && cp "$TD_TORCH_SRC"/test/distributed/*.py "$dir/.torch-test/"
    ft=$rel/.torch-test
    ft_env="TD_TORCH_TEST_DIR=$ft"
  elif ft=$(tests/torch2/root.sh "$suite" torch-tests 2>"$dir/.torch-test.err"); then
    ft_env="TD_TORCH_TEST_DIR=$ft"
  else
    ft=$(grep -v '^ *$' "$dir/.torch-test.err" | tail -n 3 | tr '\n' ' ')
    ft_env="TD_TORCH_TEST_MISSING=$(printf %q "$ft")"
  fi
  echo "== torch's test/distributed: $ft"
fi

args=
for a in "$@"; do args="$args $(printf '%q' "$a")"; done
tests/torch2/root.sh "$suite" run "set -e
  cd $rel
  echo \"== \$(. /etc/os-release; echo \$PRETTY_NAME); \$(gcc --version | head -n 1); \$(mpirun --version | head -n 1)\"
  echo \"== torch \$(python3 -c 'import torch; print(torch.__version__)')\"
  autoreconf -fi >/dev/null 2>&1
  ./configure -q >/dev/null
  make -j2 >make.log 2>&1 || { tail -n 40 make.log; exit 1; }
  TD_WERROR=1 python/build_ext.sh >python/ext.log 2>&1 ||
    { grep -E 'error|Error' python/ext.log | head -n 40; exit 1; }
  echo \"== library (-Werror) and extension built after \$((\$(date +%s) - $t0))s\"
  export $ft_env USE_LIBUV=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296
  ${TD_TORCH2_BENCH:+python3 bench/torch_perf.py $TD_TORCH2_BENCH}
  tests/torch/run.sh tests/torch2 $args
  echo \"== tests done after \$((\$(date +%s) - $t0))s\""
