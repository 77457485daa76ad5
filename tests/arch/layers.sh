#!/usr/bin/env bash
# tests/arch/layers.sh - the include-direction check (layers.py) on this tree, then on a copy with
# one wrong-way include planted (src/exec including src/core's comm.h), which it must refuse.
set -uo pipefail
cd "$(dirname "$0")/../.."
/usr/bin/python3 tests/arch/layers.py || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src"
cp -r base topology collectives sim "$tmp/" && cp -r src/rt src/bootstrap src/transport src/exec src/core "$tmp/src/"
find "$tmp" -type f ! -name '*.[ch]' -delete
sed -i '0,/#include "exec.h"/s//#include "exec.h"\n#include "comm.h"/' "$tmp/src/exec/exec.c"
if /usr/bin/python3 tests/arch/layers.py "$tmp" >"$tmp/out" 2>&1; then
  echo "FAIL: a planted include from src/exec to src/core was not reported"; exit 1
fi
grep -q 'src/exec/exec.c:.*runs from src/exec up to src/core' "$tmp/out" || {
  cat "$tmp/out"; echo "FAIL: the planted include was reported without its place"; exit 1; }
echo "planted wrong-way include reported: $(grep 'up to src/core' "$tmp/out")"
