#!/usr/bin/env bash
# tests/mpi/many_ranks.sh - many ranks on this host, for real (tests/mpi/many_ranks.c): every
# collective once, each result checked exactly on every rank, launched without mpirun (one process
# per rank, bootstrapped through TPU_DIST_COMM_ID with RANK/WORLD_SIZE), oversubscribed.
#   many_ranks.sh N [TOPOLOGY] [many_ranks args...]   e.g. 64 flat --expect alltoall-large=direct
#                                                          512 8x8x8
# Runs in a private mount namespace with its own /dev/shm (unshare -m), so the job's /dev/shm use
# is measured alone and nothing of it can be left behind; checks that nothing is left after the
# job. The ranks wait until all have started, then create the communicator (its init time leaves
# the launch out). Prints rank 0's report, the wall time of the whole job, and every failing rank's output.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/mpi/launch.sh
private_shm 16g "$@"
n=${1:?usage: many_ranks.sh N [TOPOLOGY] [args...]}
topo=${2:-flat}
shift $(($# >= 2 ? 2 : 1))
out=$(mktemp -d /tmp/many_ranks.XXXXXX)
trap 'rm -rf "$out"' EXIT
export TPU_DIST_COMM_ID=127.0.0.1:$(td_port) WORLD_SIZE=$n
export TPU_DIST_TIMEOUT_MS=${TPU_DIST_TIMEOUT_MS:-180000}
unset OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE TPU_DIST_TOPOLOGY
[ "$topo" = flat ] || export TPU_DIST_TOPOLOGY=$topo
export TD_LAUNCH_T0_NS=$(date +%s%N) TD_START_FILE=$out/go
pids=()
for ((r = 0; r < n; r++)); do
  RANK=$r tests/mpi/many_ranks "$@" >"$out/$r" 2>&1 &
  pids+=($!)
done
started_ms=$((($(date +%s%N) - TD_LAUNCH_T0_NS) / 1000000))
touch "$TD_START_FILE" # all started: now they create the communicator
rc=0 failed=()
for r in "${!pids[@]}"; do wait "${pids[$r]}" || { rc=1; failed+=("$r"); }; done
wall_ms=$((($(date +%s%N) - TD_LAUNCH_T0_NS) / 1000000))
cat "$out/0"
for r in "${failed[@]:0:8}"; do
  [ "$r" = 0 ] && continue
  sed "s/^/[rank $r] /" "$out/$r"
done
[ ${#failed[@]} -eq 0 ] || echo "many_ranks: ${#failed[@]} ranks failed: ${failed[*]:0:32}"
echo "many_ranks: $n ranks ($topo): all started after ${started_ms} ms, wall_ms $wall_ms"
left=$(ls -A /dev/shm | wc -l)
[ "$left" -eq 0 ] || { echo "many_ranks: left in /dev/shm:"; ls -l /dev/shm | head; rc=1; }
exit $rc
