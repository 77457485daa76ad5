#!/usr/bin/env bash
# tests/torch2/run.sh - the torch 2.x suites: in a Debian root (tests/torch2/root.sh: trixie has
# torch 2.6, gcc 14, Open MPI 5.0; sid has torch 2.14, gcc 16, Open MPI 6.0), builds this tree's
# library and torch extension (both -Werror) from a copy of the source, then runs tests/torch (the
# cases the torch 1.13 suite runs) and tests/torch2 (the torch 2.x Backend features and
# backend-extension tests, FSDP, torchrun, torch's whole DistributedTest class).
#
#   tests/torch2/run.sh SUITE [PYTEST ARGS...]      SUITE: trixie or sid
#
# The copy lives under the root's /build and is removed on exit. Each phase prints its elapsed
# time.
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
  export USE_LIBUV=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296
  tests/torch/run.sh tests/torch2 $args
  echo \"== tests done after \$((\$(date +%s) - $t0))s\""
