#!/usr/bin/env bash
# tests/fault/kill.sh - kill -9 of one rank mid-collective in 2-, 4- and 8-rank jobs launched with
# TPU_DIST_COMM_ID (no mpirun). Every survivor must return tpudistRemoteError within
# TPU_DIST_TIMEOUT_MS + 2 s, destroy the communicator, bootstrap a new one among the survivors and
# complete an all-reduce (tests/fault/fault_job kill). Each survivor logs its flight record.
# Afterwards no /dev/shm segment may remain.
# Runs in a private mount namespace with its own /dev/shm, so other jobs do not interfere.
#   kill.sh [SIZES...]    default: 2 4 8
# TPU_DIST_TRANSPORTS set outside replaces each variant's transports (the victims stay), e.g.
#   TPU_DIST_TRANSPORTS=ofi TPU_DIST_OFI_PROVIDER='tcp;ofi_rxm' tests/fault/kill.sh 2 4
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/mpi/launch.sh
private_shm 1g "$@"
export TPU_DIST_TIMEOUT_MS=${TPU_DIST_TIMEOUT_MS:-5000}
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(2 4 8)
rc=0
outer_tp=${TPU_DIST_TRANSPORTS:-}
for n in "${sizes[@]}"; do
  # the middle rank over shm, rank 0 (the bootstrap root) over socket, both at a random moment;
  # then the last rank right at the start, before most pairs have connected
  for variant in shm,socket:mid socket:root shm,socket:start; do
    tp=${outer_tp:-${variant%%:*}}
    case $variant in
      *:mid) victim=$((n / 2)); unset TD_FAULT_KILL_MS ;;
      *:root) victim=0; unset TD_FAULT_KILL_MS ;;
      *) victim=$((n - 1)); export TD_FAULT_KILL_MS=0 ;;
    esac
    echo "== $n ranks over $tp, rank $victim killed (${variant#*:})"
    export TPU_DIST_COMM_ID=127.0.0.1:$(td_port)
    # at 8 ranks the survivors keep their broken communicator past the timeout before destroying
    # it: nobody may depend on another survivor's destroy to learn of the failure
    if [ "$n" -ge 8 ]; then export TD_FAULT_HOLD_MS=$((TPU_DIST_TIMEOUT_MS + 1000)); else unset TD_FAULT_HOLD_MS; fi
    pids=()
    out=$(mktemp)
    for ((r = 0; r < n; r++)); do
      RANK=$r WORLD_SIZE=$n TPU_DIST_TRANSPORTS=$tp "${TD_BUILDDIR:-.}"/tests/fault/fault_job kill "$victim" \
        > >(sed "s/^/[rank $r] /" | tee -a "$out") 2>&1 &
      pids+=($!)
    done
    for ((r = 0; r < n; r++)); do
      wait "${pids[$r]}"; st=$?
      if [ "$r" -eq "$victim" ]; then
        [ $st -eq 137 ] || { echo "victim rank $r: exit status $st, not SIGKILL"; rc=1; }
      elif [ $st -ne 0 ]; then
        echo "survivor rank $r failed (status $st)"; rc=1
      fi
    done
    sleep 0.2
    # every survivor logged its flight record, the failed all-reduce in it
    fr=$(grep -c 'flight recorder: .* the last' "$out")
    [ "$fr" -ge $((n - 1)) ] || { echo "only $fr of $((n - 1)) survivors logged a flight record"; rc=1; }
    grep -q 'flight recorder: .*allreduce seq .*: running' "$out" || { echo "no running all-reduce in the flight records"; rc=1; }
    rm -f "$out"
    shm_left && rc=1
  done
done
[ $rc -eq 0 ] && echo "kill: ok"
exit $rc
