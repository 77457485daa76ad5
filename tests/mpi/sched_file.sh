#!/usr/bin/env bash
# tests/mpi/sched_file.sh - schedules as files: a 2-rank job with TPU_DIST_SCHED_DUMP_DIR dumps
# every schedule it generates (<coll>-<algo>-n2-r<rank>.sched); the two all-reduce dumps, joined
# in rank order, then run as TPU_DIST_SCHED_FILE: the job's all-reduce reports the algorithm
# "file" and every result still checks out. Then a hand-written plan (two streams, a dependency,
# local copy/reduce, scratch) runs the same way. TPU_DIST_SMALL_BYTES=0: the small calls of the
# job would otherwise take the slot path, which has no schedule to dump.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/mpi/launch.sh
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
unset OMPI_COMM_WORLD_RANK OMPI_COMM_WORLD_SIZE
TPU_DIST_SMALL_BYTES=0 TPU_DIST_SCHED_DUMP_DIR=$dir launch 2 tools/main_job --small >"$dir/run1.log" || { cat "$dir/run1.log"; exit 1; }
ls "$dir"
r0=$(ls "$dir"/allreduce-*-n2-r0.sched | head -1)
r1=${r0%-r0.sched}-r1.sched
[ -f "$r0" ] && [ -f "$r1" ] || { echo "no all-reduce dumps"; exit 1; }
head -1 "$r0" | grep -q '^tpu_dist-schedule 1$' || { echo "bad dump header"; exit 1; }
cat "$r0" "$r1" >"$dir/allreduce.sched"
TPU_DIST_SCHED_FILE=$dir/allreduce.sched launch 2 tools/main_job --small >"$dir/run2.log" || { cat "$dir/run2.log"; exit 1; }
grep -E '^\[rank 0\] allreduce .* file .* ok$' "$dir/run2.log" || { cat "$dir/run2.log"; exit 1; }
grep -q 'all results correct' "$dir/run2.log" || exit 1

# A hand-written plan: two streams, a cross-stream dependency, local copy and reduce steps, a
# scratch buffer, and (for the one-element calls) empty chunks.
for r in 0 1; do
  p=$((1 - r))
  cat <<PLAN
tpu_dist-schedule 1
coll allreduce algo ring nranks 2 rank $r root 0 inplace 0 count 0
layout input 1 2
layout output 1 2
layout scratch 1 2
stream 0 4
step copy src input 0 1 dst output 0 1
step send peer $p src input 0 1
step recv peer $p dst scratch 0 1
step reduce src scratch 0 1 dst output 0 1
stream 1 2
step recv_reduce peer $p src input 1 1 dst output 1 1
step send peer $p src input 1 1 dep 0:1
end
PLAN
done >"$dir/hand.sched"
TPU_DIST_SCHED_FILE=$dir/hand.sched launch 2 tools/main_job --small >"$dir/run3.log" || { cat "$dir/run3.log"; exit 1; }
grep -E '^\[rank 0\] allreduce .* file .* ok$' "$dir/run3.log" || { cat "$dir/run3.log"; exit 1; }
echo "sched-file: ok"
