#!/usr/bin/env bash
# tests/fault/async.sh [PART...] - non-blocking creation, the JSON flight record and the health
# query (tests/fault/async_job.c), launched with TPU_DIST_COMM_ID (no mpirun), in a private mount
# namespace with its own /dev/shm, which must be empty after every job:
#   init        non-blocking init, split and NOCOLOR split at 2, 3 and 4 ranks: exact results
#   abort       abort in the middle of a creation waiting for a rank that never arrives (3 of 4,
#               and 1 of 2 ranks started): within 100 ms, no thread, socket or segment left
#   timeout     the same without abort: the creation ends in tpudistTimeout
#   splitabort  a pending split aborted, then its parent aborted while a split is pending
#   store       non-blocking CommInitStore (a store in files): exact results at 3 ranks; abort
#               within 100 ms while the only started rank waits for rank 0's key
#   shrink      non-blocking CommShrink after a death (4 ranks; config blocking = 0, or inherited):
#               tpudistInProgress at once, then exact results; abort of a pending shrink (as the
#               coordinator and as a participant) within 100 ms, nothing left
#   frdump      a forced timeout writes the JSON flight record; python3's json parses it and the
#               entries are checked (sequence ids, names, sizes, dtypes, states)
#   status      4 ranks, rank 3 stalls before an all-reduce: tpudist-info --status names the
#               all-reduce, its sequence number, the rank waited for and rank 3 as behind;
#               --dump has every rank write its JSON record (checked); a wrong secret gets no
#               answer
# Default: every part.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/mpi/launch.sh
private_shm 512m "$@"
export TPU_DIST_TIMEOUT_MS=${TPU_DIST_TIMEOUT_MS:-20000}
bd=${TD_BUILDDIR:-.}
job=$bd/tests/fault/async_job
info=$bd/tools/tpudist-info
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rc=0
fail() { echo "FAIL: $*"; rc=1; }
shm_empty() { [ -z "$(ls -A /dev/shm)" ] || { fail "left in /dev/shm after $1: $(ls -A /dev/shm)"; rm -f /dev/shm/*; }; }
part_init() {
  for n in 2 3 4; do
    echo "== non-blocking init and split, $n ranks"
    launch "$n" "$job" init || fail "init at $n ranks"
    shm_empty "init at $n ranks"
  done
  echo "== non-blocking init and split, 3 ranks over socket"
  launch 3 env TPU_DIST_TRANSPORTS=socket "$job" init || fail "init over socket"
}
part_abort() {
  echo "== abort during creation: 3 of 4 ranks started"
  launch_some 3 4 "$job" abort || fail "abort, 3 of 4"
  echo "== abort during creation: 1 of 2 ranks started"
  launch_some 1 2 "$job" abort || fail "abort, 1 of 2"
  shm_empty abort
}
part_timeout() {
  echo "== creation timeout: 2 of 3 ranks started"
  launch_some 2 3 "$job" timeout || fail "timeout"
  shm_empty timeout
}
part_splitabort() {
  echo "== pending split aborted, parent aborted with a split pending"
  launch 2 "$job" splitabort || fail splitabort
  shm_empty splitabort
}
part_store() {
  echo "== non-blocking CommInitStore, 3 ranks; abort while waiting for the store"
  mkdir -p "$work/store" "$work/store2"
  TD_STORE_DIR=$work/store launch 3 "$job" store || fail "store init"
  TD_STORE_DIR=$work/store2 TD_STORE_ALONE=1 RANK=1 WORLD_SIZE=2 "$job" store || fail "store abort"
  shm_empty store
}
part_shrink() {
  echo "== non-blocking shrink after a death, 4 ranks"
  launch 4 "$job" shrink 2>&1 | grep -v "flight recorder\|ERROR"
  [ "${PIPESTATUS[0]}" -eq 0 ] || fail "non-blocking shrink"
  for s in 0 1; do
    echo "== abort of a pending non-blocking shrink, rank $s shrinking"
    TD_SHRINKER=$s launch 3 "$job" shrinkabort 2>&1 | grep -v "flight recorder\|ERROR"
    [ "${PIPESTATUS[0]}" -eq 0 ] || fail "abort of a pending shrink (rank $s)"
  done
  shm_empty shrink
}
part_frdump() {
  echo "== JSON flight record after a forced timeout"
  local dir=$work/fr
  mkdir -p "$dir"
  TPU_DIST_FR_DUMP_DIR=$dir launch 1 "$job" frdump || fail "frdump job"
  /usr/bin/python3 - "$dir" <<'PY' || fail "the JSON flight record"
import glob, json, sys
files = glob.glob(sys.argv[1] + "/tpu_dist_fr_*_rank0.json")
assert len(files) == 1, files
assert files[0].endswith("tpu_dist_fr_fr_test_rank0.json"), files[0]
d = json.load(open(files[0]))
assert d["rank"] == 0 and d["world_size"] == 1 and d["version"], d
assert d["pg_config"] == {'fr"test': {"name": 'fr"test', "desc": "tpu_dist", "ranks": "[0]"}}, d["pg_config"]
assert d["reason"] == "timeout", d["reason"]
e = d["entries"]
# torch's flight recorder entry fields (its analyzer reads these); ours may add more
torch_fields = {"record_id", "pg_id", "process_group", "collective_seq_id", "p2p_seq_id", "op_id",
                "profiling_name", "time_created_ns", "input_sizes", "input_dtypes", "output_sizes",
                "output_dtypes", "state", "time_discovered_started_ns",
                "time_discovered_completed_ns", "retired", "timeout_ms", "is_p2p", "duration_ms",
                "frames"}
for x in e:
    assert torch_fields <= set(x), sorted(torch_fields - set(x))
assert {"version", "pg_config", "entries"} <= set(d), sorted(d)
assert [x["profiling_name"] for x in e] == ["tpu_dist:all_reduce", "tpu_dist:broadcast", "tpu_dist:recv 0<-0"], e
assert [x["record_id"] for x in e] == [0, 1, 2]
assert [x["state"] for x in e] == ["completed", "completed", "started"], [x["state"] for x in e]
assert e[0]["input_sizes"] == [[256]] and e[0]["output_sizes"] == [[256]] and e[0]["input_dtypes"] == ["Float"]
assert e[1]["input_sizes"] == [[100]] and e[1]["root"] == 0
assert e[2]["is_p2p"] is True and e[2]["p2p_seq_id"] == 1 and e[2]["input_dtypes"] == ["Int"]
assert e[2]["error"] == "timeout" and e[2]["retired"] is False and e[0]["retired"] is True
assert e[0]["collective_seq_id"] < e[1]["collective_seq_id"], e
assert e[0]["time_created_ns"] <= e[1]["time_created_ns"] <= e[2]["time_created_ns"]
assert all(x["timeout_ms"] == 300 and x["process_group"] == ['fr"test', "tpu_dist"] for x in e)
print("frdump: %s: %d entries, states %s" % (files[0].split("/")[-1], len(e), [x["state"] for x in e]))
PY
}
part_status() {
  echo "== health query of a 4-rank job with a stalled rank"
  export TPU_DIST_COMM_SECRET=async-status-test TPU_DIST_ALGO=allreduce=ring
  export TPU_DIST_COMM_ID=127.0.0.1:$(td_port)
  local pids=() r out=$work/status.txt
  mkdir -p "$work/frs"
  for r in 0 1 2 3; do
    RANK=$r WORLD_SIZE=4 TPU_DIST_FR_DUMP_DIR=$work/frs "$job" stall 4000 >"$work/stall$r.log" 2>&1 &
    pids+=($!)
  done
  for _ in $(seq 200); do grep -q stalling "$work/stall3.log" 2>/dev/null && break; sleep 0.1; done
  sleep 1
  local t0 t1
  t0=$(date +%s%N)
  "$info" --status "$TPU_DIST_COMM_ID" >"$out" 2>&1 || fail "tpudist-info --status: $(cat "$out")"
  t1=$(date +%s%N)
  "$info" --status "$TPU_DIST_COMM_ID" --dump >"$work/dump.txt" 2>&1 || fail "--dump: $(cat "$work/dump.txt")"
  TPU_DIST_COMM_SECRET=wrong "$info" --status "$TPU_DIST_COMM_ID" --timeout 3000 >"$work/wrong.txt" 2>&1 &&
    fail "a query with the wrong secret was answered: $(cat "$work/wrong.txt")"
  for p in "${pids[@]}"; do wait "$p" || fail "stall job"; done
  sed 's/^/  /' "$out"
  echo "  (answered in $(((t1 - t0) / 1000000)) ms; with a wrong secret: $(cat "$work/wrong.txt"))"
  grep -q "^rank 0 (pid [0-9]*): allreduce seq [0-9]* running for [0-9]* ms, waits for rank 3 " "$out" ||
    fail "rank 0 is not reported waiting for rank 3 in the all-reduce"
  grep -q "^rank 1 (pid [0-9]*): allreduce seq [0-9]* running .*waits for rank 0" "$out" ||
    fail "rank 1 is not reported waiting for rank 0"
  grep -q "^rank 3 (pid [0-9]*): idle, last operation allreduce seq" "$out" || fail "rank 3 is not idle"
  grep -q "^summary: waiting in allreduce seq [0-9]*; behind: rank 3 (at allreduce seq [0-9]*, idle)$" "$out" ||
    fail "the summary does not name rank 3"
  local s0 s3
  s0=$(sed -n 's/^rank 0 .*allreduce seq \([0-9]*\) running.*/\1/p' "$out")
  s3=$(sed -n 's/^rank 3 .*allreduce seq \([0-9]*\) .*/\1/p' "$out")
  [ -n "$s0" ] && [ -n "$s3" ] && [ "$s0" -eq $((s3 + 1)) ] || fail "sequence numbers: in flight $s0, rank 3 at $s3"
  grep -q "did not prove\|no answer\|closed\|refused\|timed out\|time" "$work/wrong.txt" ||
    fail "wrong secret: $(cat "$work/wrong.txt")"
  [ "$(grep -c "flight record: $work/frs/tpu_dist_fr_comm-[0-9a-f]*_rank[0-3].json" "$work/dump.txt")" -eq 4 ] ||
    fail "--dump: not every rank wrote its record: $(cat "$work/dump.txt")"
  /usr/bin/python3 - "$work/frs" "$s0" <<'PY' || fail "the records written on --dump"
import glob, json, sys
seq = int(sys.argv[2])
d = {json.load(open(f))["rank"]: json.load(open(f)) for f in glob.glob(sys.argv[1] + "/*.json")}
assert sorted(d) == [0, 1, 2, 3], sorted(d)
for r in range(3):  # the waiting ranks: the all-reduce in flight, started, not retired
    e = d[r]["entries"][-1]
    assert e["profiling_name"] == "tpu_dist:all_reduce" and e["collective_seq_id"] == seq, e
    assert e["state"] == "started" and not e["retired"] and e["input_sizes"] == [[65536]], e
    assert e["algorithm"] == "ring" and "error" not in e, e
e = d[3]["entries"]
assert all(x["state"] == "completed" for x in e) and e[-1]["collective_seq_id"] == seq - 1, e
print("--dump: 4 records; ranks 0-2 in all_reduce seq %d (started), rank 3 at seq %d" % (seq, seq - 1))
PY
  unset TPU_DIST_COMM_SECRET TPU_DIST_ALGO
  shm_empty status
}
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(init abort timeout splitabort store shrink frdump status)
for p in "${parts[@]}"; do "part_$p"; done
[ $rc -eq 0 ] && echo "async: ok"
exit $rc
