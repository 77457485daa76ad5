# tests/mpi/launch.sh - sourced by the suites that start ranks without mpirun:
#   launch N CMD...   starts N processes with RANK, WORLD_SIZE and one TPU_DIST_COMM_ID, waits for
#                     all, returns non-zero if any failed (each rank's output prefixed).
# Below the kernel's ephemeral range (32768+), so no rank's own listener can take the port first.
td_port() { echo $((20000 + (RANDOM * 7 + $$) % 12000)); }
launch() {
  local n=$1 pids=() rc=0
  shift
  export TPU_DIST_COMM_ID=${TPU_DIST_COMM_ID_FIXED:-127.0.0.1:$(td_port)}
  for ((r = 0; r < n; r++)); do
    RANK=$r WORLD_SIZE=$n "$@" 2>&1 | sed "s/^/[rank $r] /" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  return $rc
}
