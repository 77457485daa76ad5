#!/usr/bin/env bash
# tests/bench/host16.sh - the many-core host's script works end to end at 2 ranks here, in a copy
# of the source tree with a pack (bench/host16/pack.sh), as a host without a build takes it: every table written, results
# exact (the wrong column 0), the torch tables where /usr/bin/python3 imports torch; then a run
# with BUDGET_S=1 stops or skips its steps and still exits 0 with its log. tests/torch2/pip_host.sh
# runs the teardown cases against the pack's library the same way.
set -u
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
bench/host16/pack.sh "$tmp/pack" | tail -n 1 || fail "pack.sh failed"
for f in bin/all_reduce_perf bin/memcpy_bw bin/tpudist-info inst/usr/local/include/tpu_dist.h; do
  [ -e "$tmp/pack/$f" ] || fail "the pack has no $f"
done
find "$tmp/pack" -name tpu_dist.pc | grep -q . || fail "the pack has no tpu_dist.pc"
PY=/usr/bin/python3
torch=0
$PY -c 'import torch' 2>/dev/null && torch=1
# the script runs in a copy of the source tree (tracked and untracked files git does not ignore), as
# on a lent machine: it builds the torch plugin in place, which must not touch this tree's
mkdir -p "$tmp/tree"
git ls-files -z -co --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$tmp/tree"
out=$tmp/out
PACK=$tmp/pack NPS=2 ROUNDS=2 MAX=256K COLLS="all_reduce alltoall" PY=$PY \
  timeout 600 "$tmp/tree/bench/host16/run.sh" "$out" >"$tmp/run.log" 2>&1 || { fail "run.sh: rc $?"; tail -n 20 "$tmp/run.log"; }
grep -q 'packages' "$out/host.txt" || fail "host.txt lacks tpudist-info --host"
grep -q '^select allreduce bytes=8 best=' "$out/select_np2.txt" || fail "select_np2.txt has no table"
[ "$(awk 'NF == 3 && $3 > 0' "$out/copy.txt" | wc -l)" -ge 4 ] || fail "copy.txt: $(cat "$out/copy.txt")"
for f in c_np2.csv algos_np2.csv; do
  [ -s "$out/$f" ] || { fail "no $f"; continue; }
  bad=$(awk -F, '$8 != 0' "$out/$f" | head -n 3)
  [ -z "$bad" ] || fail "$f has wrong results: $bad"
done
for impl in tpu_dist mpi; do
  for coll in all_reduce alltoall; do
    n=$(grep -c "^$coll,$impl,2," "$out/c_np2.csv")
    [ "$n" -ge 30 ] || fail "c_np2.csv: $n rows of $coll with $impl (2 rounds of 8 B-256 KiB want 30)"
  done
done
grep -q '^all_reduce,tpu_dist,2,.*,direct$' "$out/algos_np2.csv" || fail "algos_np2.csv has no forced direct row"
if [ $torch = 1 ]; then
  for b in tpu_dist gloo; do grep -q "$b" "$out/torch_np2.csv" || fail "torch_np2.csv has no $b rows"; done
  [ "$(grep -cE '^ +65536 ' "$out/percall_np2.txt")" = 2 ] || fail "percall_np2.txt: not 2 rounds"
else
  echo "no torch in $PY: the torch tables are not checked"
fi
grep -q 'host16: done after' "$out/log.txt" || fail "log.txt has no end line"
# the torch suites against the pack's library, as on a host with a pip torch (the teardown cases)
if [ $torch = 1 ]; then
  PYTHON=$PY timeout 300 "$tmp/tree/tests/torch2/pip_host.sh" "$tmp/pack/inst" "$tmp/pip" -k teardown \
    >"$tmp/pip.log" 2>&1 || { fail "pip_host.sh: rc $?"; tail -n 15 "$tmp/pip.log"; }
  grep -qE '^[0-9]+ passed' "$tmp/pip/pytest.log" || fail "pip_host.sh ran no test"
fi
# a spent budget: the step running then is stopped, the later ones skipped, the run ends well
PACK=$tmp/pack NPS=2 MAX=256K BUDGET_S=1 PY=/bin/false timeout 120 "$tmp/tree/bench/host16/run.sh" "$tmp/out2" \
  >"$tmp/run2.log" 2>&1 || fail "run.sh with BUDGET_S=1: rc $?"
grep -q 'skipped (budget spent): forced plans at 2 ranks' "$tmp/out2/log.txt" &&
  grep -q 'host16: done after' "$tmp/out2/log.txt" ||
  fail "BUDGET_S=1 did not skip the steps: $(tail -n 5 "$tmp/out2/log.txt")"
echo "$((fails == 0 ? 1 : 0)) passed, $((fails > 0 ? 1 : 0)) failed"
[ $fails = 0 ]
