#!/usr/bin/env bash
# tests/fault/chaos.sh - seeded chaos trials (tests/fault/chaos_job): launches of 8 and 4 ranks
# (TPU_DIST_COMM_ID, no mpirun), alternately over shm+TCP and over TCP only; in each, trials back
# to back: a random mix of collectives, a random rank (or two) killed at a random point, the
# survivors shrink and check a fixed set of collectives exactly, and carry on with the shrunk
# communicator. Counts and prints: trials, hangs (a launch or a trial phase not finished within
# TPU_DIST_TIMEOUT_MS + 5 s), wrong results, failed recoveries, leaked /dev/shm segments and
# threads, abnormal exits (e.g. a sanitizer's), and the median time from the error to a usable shrunk
# communicator (the slowest survivor of each trial) at 8 ranks. Fails unless all counts are 0.
#   chaos.sh [TRIALS]   default 100, 1000 with TD_FULL=1; TD_CHAOS_SEED=S reruns a seed (the plans
#                       are the same; when a rank dies within an operation is up to the machine)
# TD_CHAOS_TRANSPORTS: the transport lists the launches take in turn (default "shm,socket socket";
# "ofi" runs every trial over the ofi transport, with TPU_DIST_OFI_PROVIDER set by the caller).
# Runs in a private mount namespace with its own /dev/shm, so other jobs do not interfere.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/mpi/launch.sh
private_shm 2g "$@"
export TPU_DIST_TIMEOUT_MS=${TPU_DIST_TIMEOUT_MS:-5000}
export TPU_DIST_AGREE_TIMEOUT_MS=${TPU_DIST_AGREE_TIMEOUT_MS:-3000}
target=${1:-$([ "${TD_FULL:-0}" = 1 ] && echo 1000 || echo 100)}
seed=${TD_CHAOS_SEED:-$(( ($(date +%s%N) / 1000) % 1000000007 ))}
echo "chaos: seed $seed (rerun: TD_CHAOS_SEED=$seed tests/fault/chaos.sh $target), $target trials"
log=$(mktemp)
trials=0 hangs=0 shm_leaks=0 thread_leaks=0 launch=0 bad_exits=0
while [ $trials -lt "$target" ]; do
  if [ $((launch % 2)) = 0 ]; then n=8 per=5 min=4; else n=4 per=2 min=3; fi
  tps=(${TD_CHAOS_TRANSPORTS:-shm,socket socket})
  tp=${tps[$((launch / 2 % ${#tps[@]}))]}
  left=$((target - trials)); [ $per -gt $left ] && per=$left
  export TPU_DIST_COMM_ID=127.0.0.1:$(td_port)
  out=$(mktemp)
  limit=$(( (per + 1) * (TPU_DIST_TIMEOUT_MS / 1000 + 15) ))
  pids=()
  for ((r = 0; r < n; r++)); do
    RANK=$r WORLD_SIZE=$n TPU_DIST_TRANSPORTS=$tp timeout -s KILL $limit \
      "${TD_BUILDDIR:-.}"/tests/fault/chaos_job "$seed" $((trials)) $per $min >>"$out" \
      2> >(grep -v 'flight recorder\|tpu_dist [0-9]* ERROR' | sed "s/^/  rank $r: /" >>"$out.err") &
    pids+=($!)
  done
  bad_exit=0
  for p in "${pids[@]}"; do
    wait "$p" 2>/dev/null; st=$?
    # 137: a victim (or a launch killed at its limit: then no THREADS line shows it below); 3: a
    # watchdog's HANG; 4: a failed trial (its line says so); anything else (a sanitizer) counts
    case $st in 0 | 3 | 4 | 137) ;; *) bad_exit=$((bad_exit + 1)) ;; esac
  done
  bad_exits=$((bad_exits + bad_exit))
  done_here=$(grep '^TRIAL' "$out" | awk '{print $2}' | sort -u | wc -l)
  h=$(grep -c '^HANG' "$out")
  survivors=$(grep -c '^THREADS' "$out")
  if [ "$survivors" -eq 0 ] || [ "$done_here" -eq 0 ]; then h=$((h + 1)); echo "launch $launch: no survivor finished (limit ${limit}s)"; fi
  hangs=$((hangs + h))
  thread_leaks=$((thread_leaks + $(awk '/^THREADS/ && $2 > 0' "$out" | wc -l)))
  sleep 0.1
  nshm=$(ls -A /dev/shm | wc -l)
  if [ "$nshm" -gt 0 ]; then echo "launch $launch: left in /dev/shm:"; ls /dev/shm | head; shm_leaks=$((shm_leaks + nshm)); rm -f /dev/shm/*; fi
  sed "s/^/$n $tp /" "$out" >>"$log"
  if grep -qE 'result=(wrong|fail)|^HANG' "$out" || [ "$survivors" -eq 0 ] || [ $bad_exit -gt 0 ]; then
    grep -E 'result=(wrong|fail)|^HANG' "$out" | sed "s/^/launch $launch ($n ranks, $tp): /"
    head -20 "$out.err"
  fi
  rm -f "$out" "$out.err"
  [ "$done_here" -gt 0 ] || done_here=1
  trials=$((trials + done_here))
  launch=$((launch + 1))
done
wrong=$(awk '$3 == "TRIAL" && /result=wrong/ {print $4}' "$log" | sort -u | wc -l)
failed=$(awk '$3 == "TRIAL" && /result=fail/ {print $4}' "$log" | sort -u | wc -l)
# per trial at 8 ranks: the slowest survivor's error-to-usable time; then the median
med8=$(awk '$3 == "TRIAL" && $5 == "n=8" {split($9, a, "="); id=$4; if (a[2] > m[id]) m[id] = a[2]} END {for (i in m) print m[i]}' "$log" | sort -n | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)], NR; else print "n/a", 0}')
medall=$(awk '$3 == "TRIAL" {split($9, a, "="); id=$4; if (a[2] > m[id]) m[id] = a[2]} END {for (i in m) print m[i]}' "$log" | sort -n | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "n/a"}')
rm -f "$log"
echo "chaos: seed $seed: $trials trials in $launch launches, $hangs hangs, $wrong wrong, $failed failed recoveries, $shm_leaks leaked /dev/shm segments, $thread_leaks leaked threads, $bad_exits abnormal exits"
echo "chaos: error to usable shrunk communicator, median of the slowest survivor per trial: ${med8% *} ms at 8 ranks (${med8#* } trials), $medall ms over all sizes (machine shared with other jobs)"
[ $hangs -eq 0 ] && [ "$wrong" -eq 0 ] && [ "$failed" -eq 0 ] && [ $shm_leaks -eq 0 ] &&
  [ $thread_leaks -eq 0 ] && [ $bad_exits -eq 0 ]
