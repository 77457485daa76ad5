#!/usr/bin/env bash
# bench/host16/pack.sh - what bench/host16/run.sh needs on a host that cannot build the library
# (no autotools, no -dev packages, no network): built here, copied there as one folder.
#
#   bench/host16/pack.sh [DIR]      (default build-host16, which git ignores)
#
# DIR/inst  the library installed (`make install DESTDIR`): headers, libtpu_dist, tpu_dist.pc, for
#           python/build_ext.sh DIR/inst to build the torch plugin against the host's own torch
# DIR/bin   the benchmark programs run.sh uses (they hold the library; they need the host's Open
#           MPI, libmpi.so.40, at run time) and tools/tpudist-info
# DIR/lib   the shared libraries those programs and libtpu_dist need that a bare Ubuntu or Debian
#           userland may lack (hwloc); run.sh puts DIR/lib on LD_LIBRARY_PATH only for a library
#           the host does not have itself
# Builds the tree first where it is not built. Prints the folder's size (the device tool carries at
# most 64 MiB).
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${1:-build-host16}
[ -f Makefile ] || { [ -x configure ] || autoreconf -fi; ./configure; }
make -j"$(nproc)" >/dev/null
make -j"$(nproc)" check TESTS= >/dev/null
rm -rf "$dir"
mkdir -p "$dir/bin" "$dir/lib"
dir=$(cd "$dir" && pwd)
make install DESTDIR="$dir/inst" >/dev/null 2>&1
# the plugin links the shared library: the static one and the installed programs only take room
rm -rf "$dir"/inst/usr/local/bin "$dir"/inst/usr/local/lib/libtpu_dist.a "$dir"/inst/usr/local/lib/libtpu_dist.la
progs=(bench/memcpy_bw tools/tpudist-info)
for c in all_reduce all_gather reduce_scatter alltoall broadcast; do progs+=("bench/${c}_perf"); done
cp "${progs[@]}" "$dir/bin/"
# Libraries outside glibc and the base system that the programs or the library link; Open MPI's
# come from the host (a libmpi without its own mpirun is of no use).
for so in $(ldd "${progs[@]}" "$dir"/inst/usr/local/lib/libtpu_dist.so.* 2>/dev/null |
  awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u); do
  case $(basename "$so") in
  libhwloc.so.*) cp -L "$so" "$dir/lib/" ;;
  esac
done
echo "pack: $dir, $(du -sh "$dir" | cut -f1): $(cd "$dir" && find . -type f | sort | tr '\n' ' ')"
