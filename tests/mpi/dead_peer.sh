#!/usr/bin/env bash
# tests/mpi/dead_peer.sh - a dead peer is an error on every survivor, never a hang: 3 ranks run
# back-to-back all-reduces (tests/mpi/soak), rank 2 is killed with SIGKILL, and ranks 0 and 1
# must fail (non-zero exit, an error naming a failure) well within the timeout.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/mpi/launch.sh
export TPU_DIST_TIMEOUT_MS=20000 TPU_DIST_COMM_ID=127.0.0.1:$(td_port)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
pids=()
for r in 0 1 2; do
  RANK=$r WORLD_SIZE=3 tests/mpi/soak 1000000000 >"$dir/r$r.log" 2>&1 &
  pids+=($!)
done
sleep 3
kill -9 "${pids[2]}"
t0=$(date +%s)
fail=0
for r in 0 1; do
  if wait "${pids[$r]}"; then
    echo "rank $r exited 0 after its peer died"
    fail=1
  fi
done
wait "${pids[2]}" 2>/dev/null
secs=$(($(date +%s) - t0))
cat "$dir/r0.log" "$dir/r1.log"
grep -q "soak rank 0 iteration" "$dir/r0.log" || { echo "rank 0 reported no error"; fail=1; }
[ "$secs" -le 30 ] || { echo "survivors took ${secs}s to fail"; fail=1; }
[ $fail -eq 0 ] && echo "dead-peer: survivors failed after ${secs}s: ok"
exit $fail
