#!/usr/bin/env bash
# tests/fault/reconf.sh - communicators over any set of processes through reconfiguration handles
# (tests/fault/reconf_job, tpudistCommReconfigure): 3 ranks launched with TPU_DIST_COMM_ID (no
# mpirun), over shm and over TCP; every rank must exit 0 and no /dev/shm segment may remain.
# Runs in a private mount namespace with its own /dev/shm, so other jobs do not interfere.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/mpi/launch.sh
private_shm 256m "$@"
export TPU_DIST_TIMEOUT_MS=${TPU_DIST_TIMEOUT_MS:-10000}
rc=0
for transports in "" socket; do
  echo "== reconfigurations${transports:+ over $transports}"
  export TPU_DIST_COMM_ID=127.0.0.1:$(td_port)
  pids=()
  for r in 0 1 2; do
    env ${transports:+TPU_DIST_TRANSPORTS=$transports} RANK=$r WORLD_SIZE=3 timeout 120 \
      "${TD_BUILDDIR:-.}"/tests/fault/reconf_job > >(sed "s/^/[rank $r] /" | grep -v 'tpu_dist [0-9]* ERROR') 2>&1 &
    pids+=($!)
  done
  for r in 0 1 2; do
    wait "${pids[$r]}"; st=$?
    [ $st -eq 0 ] || { echo "FAILED: rank $r exit status $st"; rc=1; }
  done
  sleep 0.2
  if shm_left; then rm -f /dev/shm/*; rc=1; fi
done
exit $rc
