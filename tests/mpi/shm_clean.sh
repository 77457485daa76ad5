#!/usr/bin/env bash
# tests/mpi/shm-clean.sh - no shared-memory segment is left in /dev/shm: after a clean job, and
# after a job whose ranks are killed (SIGKILL) while running. Runs in a private mount namespace
# with its own /dev/shm (unshare -m), so other jobs on the machine do not interfere.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/mpi/launch.sh
private_shm 512m "$@"
export TPU_DIST_TRANSPORTS=shm,socket
left() { ls -A /dev/shm | wc -l; }
echo "== clean job (3 ranks, every collective)"
launch 3 env -u OMPI_COMM_WORLD_RANK -u OMPI_COMM_WORLD_SIZE tools/main_job --small || exit 1
[ "$(left)" -eq 0 ] || { echo "left behind:"; ls -l /dev/shm; exit 1; }
echo "== killed job (2 ranks, SIGKILL during the soak)"
export TPU_DIST_COMM_ID=127.0.0.1:$(td_port)
pids=()
for r in 0 1; do RANK=$r WORLD_SIZE=2 tests/mpi/soak 100000000 >/dev/null 2>&1 & pids+=($!); done
sleep 3
kill -9 "${pids[@]}" 2>/dev/null
wait 2>/dev/null
[ "$(left)" -eq 0 ] || { echo "left behind after SIGKILL:"; ls -l /dev/shm; exit 1; }
echo "shm-clean: ok"
