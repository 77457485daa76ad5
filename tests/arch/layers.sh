#!/usr/bin/env bash
# tests/arch/layers.sh - the include-direction check (layers.py) on this tree, then on a copy with
# wrong-way includes planted, each of which it must refuse with its place: src/exec including
# src/core's comm.h, the cost model including the algorithm table, one collective's folder
# including another's, and a source file in a folder of collectives/ outside the order; and two
# file circles planted in src/rt (two headers including each other, two files calling each
# other) and in src/core (defer mode asking the group again, which flushes it), which it must
# report as not allowed.
set -uo pipefail
cd "$(dirname "$0")/../.."
/usr/bin/python3 tests/arch/layers.py || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src"
cp -r base kernels topology collectives sim "$tmp/" &&
  cp -r src/rt src/bootstrap src/transport src/exec src/core "$tmp/src/"
find "$tmp" -type f ! -name '*.[ch]' -delete
plant() { # file, the include it has, the include to add after it
  sed -i "0,/#include \"$2\"/s//#include \"$2\"\n#include \"$3\"/" "$tmp/$1"
  grep -q "#include \"$3\"" "$tmp/$1" || { echo "FAIL: could not plant $3 in $1"; exit 1; }
}
plant src/exec/exec.c exec.h comm.h
plant collectives/cost/cost_eval.c cost_int.h algos.h
plant collectives/algos/broadcast/broadcast_tree.c broadcast.h reduce.h
mkdir "$tmp/collectives/misc" && echo '#include "sched_ir.h"' >"$tmp/collectives/misc/stray.c"
plant src/rt/rt_subsys.h td_base.h rt_log.h
printf '\nint plantedCircle(void) {\n  return configGet() != 0;\n}\n' >>"$tmp/src/rt/rt_subsys.c"
printf '\nint plantedCircle(void) {\n  return groupActive();\n}\n' >>"$tmp/src/core/defer.c"
if /usr/bin/python3 tests/arch/layers.py "$tmp" >"$tmp/out" 2>&1; then
  cat "$tmp/out"; echo "FAIL: the planted wrong-way includes were not reported"; exit 1
fi
for want in 'src/exec/exec.c:[0-9]*: .*runs from src/exec to src/core,' \
  'collectives/cost/cost_eval.c:[0-9]*: .*runs from collectives/cost to collectives/algos,' \
  'broadcast_tree.c:[0-9]*: .*runs from collectives/algos/broadcast to collectives/algos/reduce,' \
  'collectives/misc/stray.c lies in no layer' \
  'include circle in src/rt not in the allow-list: src/rt/rt_log.h src/rt/rt_subsys.h$' \
  'call circle in src/rt not in the allow-list: src/rt/rt_config.c src/rt/rt_subsys.c$' \
  'call circle in src/core not in the allow-list: src/core/defer.c src/core/group.c$'; do
  grep -q "$want" "$tmp/out" || { cat "$tmp/out"; echo "FAIL: not reported: $want"; exit 1; }
done
echo "planted wrong-way includes and circles reported:"
grep 'LAYERS:' "$tmp/out"
