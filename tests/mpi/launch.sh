# tests/mpi/launch.sh - sourced by the suites that start ranks without mpirun:
#   launch N CMD...         starts N processes with RANK, WORLD_SIZE and one TPU_DIST_COMM_ID, waits
#                           for all, returns non-zero if any failed (each rank's output prefixed).
#   launch_some K N CMD...  the same for ranks 0..K-1 of an N-rank job (the others never arrive).
#   private_shm SIZE ARGS...
#                           called first, with the script's own arguments: re-runs the script in a
#                           private mount namespace (unshare -m) on its own SIZE tmpfs /dev/shm, so
#                           other jobs on the machine do not interfere (exits when it cannot).
#   shm_left                true, after listing them, when segments remain in /dev/shm.
# Below the kernel's ephemeral range (32768+), so no rank's own listener can take the port first.
td_port() { echo $((20000 + (RANDOM * 7 + $$) % 12000)); }
launch_some() {
  local k=$1 n=$2 pids=() r rc=0
  shift 2
  export TPU_DIST_COMM_ID=${TPU_DIST_COMM_ID_FIXED:-127.0.0.1:$(td_port)}
  for ((r = 0; r < k; r++)); do
    RANK=$r WORLD_SIZE=$n "$@" 2>&1 | sed "s/^/[rank $r] /" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  return $rc
}
launch() {
  local n=$1
  shift
  launch_some "$n" "$n" "$@"
}
private_shm() {
  local size=$1
  shift
  if [ "${TD_PRIVATE_SHM_INNER:-0}" != 1 ]; then
    exec unshare -m env TD_PRIVATE_SHM_INNER=1 bash "$0" "$@"
  fi
  mount -t tmpfs -o size="$size" tmpfs /dev/shm || { echo "cannot mount a private /dev/shm"; exit 1; }
}
shm_left() {
  [ -n "$(ls -A /dev/shm)" ] || return 1
  echo "left in /dev/shm:"
  ls -l /dev/shm
}
