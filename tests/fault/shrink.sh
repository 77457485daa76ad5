#!/usr/bin/env bash
# tests/fault/shrink.sh - survivors shrink and carry on (tests/fault/shrink_job): jobs launched with
# TPU_DIST_COMM_ID (no mpirun) where ranks kill themselves (SIGKILL) mid all-reduce and the
# survivors call tpudistCommShrink, with the agreed failed set (no list) and with an explicit list,
# over shm and over TCP, on the world, on a split communicator and on tori (2x4 losing a half keeps
# a 2x2 torus, 2x2 losing a rank becomes flat); plus revoke. Each job's victims must die by SIGKILL,
# every survivor must exit 0, and no /dev/shm segment may remain.
# Runs in a private mount namespace with its own /dev/shm, so other jobs do not interfere.
# `tests/fault/shrink.sh dies N` runs only the case "rank 0 dies in its own shrink", N times (to loop
# it under load), and says how many runs failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/mpi/launch.sh
private_shm 1g "$@"
export TPU_DIST_TIMEOUT_MS=${TPU_DIST_TIMEOUT_MS:-5000}
rc=0

# job NAME N VICTIMS ENV... -- ARGS...: runs shrink_job ARGS on N ranks with ENV (@R in a value:
# the rank); VICTIMS (comma list, or -) must die by SIGKILL, the rest exit 0.
job() {
  local name=$1 n=$2 victims=",$3," envs=() pids=() st
  shift 3
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  echo "== $name ($n ranks)"
  export TPU_DIST_COMM_ID=127.0.0.1:$(td_port)
  for ((r = 0; r < n; r++)); do
    env "${envs[@]//@R/$r}" RANK=$r WORLD_SIZE=$n timeout 60 "${TD_BUILDDIR:-.}"/tests/fault/shrink_job "$@" \
      > >(sed "s/^/[rank $r] /" | grep -v 'flight recorder\|tpu_dist [0-9]* ERROR') 2>&1 &
    pids+=($!)
  done
  for ((r = 0; r < n; r++)); do
    wait "${pids[$r]}" 2>/dev/null; st=$?
    if [[ $victims == *",$r,"* ]]; then
      [ $st -eq 137 ] || { echo "victim rank $r: exit status $st, not SIGKILL"; rc=1; }
    elif [ $st -ne 0 ]; then
      echo "FAILED: $name: survivor rank $r exit status $st"; rc=1
    fi
  done
  sleep 0.2
  if shm_left; then rm -f /dev/shm/*; rc=1; fi
}

dies_only=0
if [ "${1:-}" = dies ]; then
  dies_only=1
  [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 dies N (N runs, N >= 1)"; exit 2; }
fi

if [ $dies_only = 0 ]; then
job "agreed set, middle rank killed, shm" 4 2 -- kill 2
job "agreed set, rank 0 (bootstrap root, first coordinator) killed" 4 0 -- kill 0
job "explicit exclude list" 4 3 -- kill 3 list
job "two ranks killed" 4 1,2 -- kill 1,2
job "agreed set over TCP" 4 1 TPU_DIST_TRANSPORTS=socket -- kill 1
# every rank on its own host (no process probe): the dead rank is known by its refusing agreement
# listener, not after 2 x TPU_DIST_AGREE_TIMEOUT_MS of silence
job "agreed set over TCP, each rank its own host" 4 1 TPU_DIST_TRANSPORTS=socket TPU_DIST_HOSTID=host@R \
  TPU_DIST_AGREE_TIMEOUT_MS=5000 TD_MAX_SHRINK_MS=2500 -- kill 1
job "split communicator (reversed order)" 4 1 -- split 1
job "torus 2x4, a half killed: 2x2 torus" 8 4,5,6,7 TPU_DIST_TOPOLOGY=2x4 TD_EXPECT_TOPO=2x2 -- kill 4,5,6,7
job "torus 2x2, one rank killed: flat" 4 1 TPU_DIST_TOPOLOGY=2x2 TD_EXPECT_TOPO=flat -- kill 1
job "8 ranks, agreed set" 8 5 -- kill 5
job "a survivor too late is excluded" 4 1 TPU_DIST_AGREE_TIMEOUT_MS=500 -- late 1 3
job "a survivor dies in the agreement or rendezvous" 5 3,1 TPU_DIST_AGREE_TIMEOUT_MS=1000 -- dieinshrink 3 1
fi
# rank 0 coordinates and is the new rank 0: dying in the peer exchange, it leaves some survivors
# with the new communicator and the others agreeing again; the former shrink it once more and all
# end with one membership (docs/reliability.md, "Lineage"). Repeated under --full.
reps=3
[ "${TD_FULL:-0}" = 1 ] && reps=20
[ $dies_only = 1 ] && reps=$2
failed_runs=0
for ((k = 0; k < reps; k++)); do
  before=$rc
  rc=0
  job "rank 0 (coordinator, new rank 0) dies in the shrink, run $((k + 1))" 5 3,0 TPU_DIST_AGREE_TIMEOUT_MS=1000 -- dieinshrink 3 0
  failed_runs=$((failed_runs + rc))
  rc=$((before | rc))
done
if [ $dies_only = 1 ]; then
  echo "rank 0 dies in its own shrink: $failed_runs of $reps runs failed"
  exit $rc
fi
job "revoke" 4 - -- revoke
[ $rc -eq 0 ] && echo "shrink: ok"
exit $rc
