#!/usr/bin/env bash
# bench/host16/run.sh - the many-core host's figures in one run, from a copy of this source tree
# (docs/host.md, docs/performance.md). Writes under OUT (default $OUT, else
# bench/results/host16-DATE):
#   host.txt        tpudist-info --host, lscpu, numactl -H, mpirun and torch versions, the command
#   copy.txt        the copy bound: bench/memcpy_bw with 1 process and with P copying at once
#   select_npP.txt  the table selection picks from at P ranks on this host (tpudist-info -s)
#   c_npP.csv       C benchmarks at P ranks, tpu_dist and Open MPI's collectives (the same tools,
#                   -I mpi) in turn each round, 8 B-MAX; ranks bound by mpirun --bind-to core
#                   (--bind-to none and --oversubscribe beyond the cores)
#   algos_npP.csv   tpu_dist's plans forced by name (-A) in turn each round, 8 B-MAX by 4x: the
#                   direct (one-shot) all-reduce, all-gather, reduce-scatter and broadcast against
#                   the ring (chain and tree for broadcast) and selection's own pick (algo column)
#   torch_npP.csv   torch all_reduce through tpu_dist and through gloo at P ranks (torch imports)
#   percall_npP.txt what a blocking torch all_reduce adds over the C API at P ranks, 8 B-64 KiB
#                   (bench/torch_perf.py --percall; torch imports)
#   log.txt         everything the steps printed, and each step's start and length
# Rows: coll,impl,nranks,bytes,time_us,algbw,busbw,wrong,algo (medians per call).
#
# Order: the headline first, so a run cut short still has it. Round 1 of the all-reduce (C against
# Open MPI), of torch against gloo and of the per-call cost at every P; then round 1 of the other
# collectives; then the forced plans; then rounds 2..ROUNDS of the C and torch tables.
#
# Knobs: PY=python3 (the one torch imports in) NPS="16 8 4" ROUNDS=3 MAX=64M
# COLLS="all_reduce all_gather reduce_scatter alltoall broadcast"
# BUDGET_S=0: when more than 0, no step starts once BUDGET_S seconds have passed, and a step still
#   running then is stopped (its CSV keeps the rows it wrote); sized for a lent machine's time
# PACK=DIR: the folder bench/host16/pack.sh made on a machine that builds the library; its programs
#   serve instead of the tree's, the torch plugin is built against DIR/inst, and DIR/lib serves the libraries
#   the host lacks. Without PACK the tree is built here when it is not built.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-${1:-bench/results/host16-$(date -u +%Y%m%dT%H%M)}}
NPS=${NPS:-16 8 4} ROUNDS=${ROUNDS:-3} MAX=${MAX:-64M} PY=${PY:-python3} BUDGET_S=${BUDGET_S:-0}
COLLS=${COLLS:-all_reduce all_gather reduce_scatter alltoall broadcast}
export MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
t0=$(date +%s)
max=$(numfmt --from=iec "$MAX") cores=$(nproc)
echo "# $(date -u) $0 NPS='$NPS' ROUNDS=$ROUNDS MAX=$MAX BUDGET_S=$BUDGET_S PACK=${PACK:-} on $(hostname)"
BIN=$PWD/bench INFO=tools/tpudist-info
if [ -n "${PACK:-}" ]; then
  PACK=$(cd "$PACK" && pwd)
  BIN=$PACK/bin INFO=$PACK/bin/tpudist-info
  missing=$(ldd "$BIN/all_reduce_perf" "$INFO" "$PACK"/inst/usr/local/lib/libtpu_dist.so |
    grep 'not found' | sort -u || true)
  if [ -n "$missing" ]; then
    echo "host16: not on this host, served from $PACK/lib: $(echo "$missing" | awk '{print $1}' | tr '\n' ' ')"
    export LD_LIBRARY_PATH="$PACK/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
elif [ ! -x bench/all_reduce_perf ]; then
  [ -x configure ] || autoreconf -fi
  [ -f Makefile ] || ./configure
  make -j"$cores"
  make -j"$cores" check TESTS=
fi
export TD_BENCH_BIN=$BIN
torch=0
if $PY -c "import torch" 2>/dev/null; then
  if PYTHON=$PY python/build_ext.sh ${PACK:+"$PACK/inst"} >"$OUT/plugin_build.txt" 2>&1; then
    torch=1
  else
    echo "host16: the torch plugin did not build (plugin_build.txt); no torch steps"
  fi
fi
echo "host16: ready after $(($(date +%s) - t0)) s (torch steps: $torch)"

left() { # seconds left of BUDGET_S (a large number without a budget)
  if [ "$BUDGET_S" -gt 0 ]; then echo $((BUDGET_S - ($(date +%s) - t0))); else echo 999999; fi
}
step() { # NAME CMD...: runs CMD unless the budget is spent, stopped when it runs out
  local name=$1 s rc=0 how=
  shift
  if [ "$(left)" -le 0 ]; then
    echo "host16: skipped (budget spent): $name"
    return 0
  fi
  s=$(date +%s)
  timeout -k 10 "$(left)" "$@" || rc=$?
  [ $rc = 0 ] || how=", rc $rc$([ $rc = 124 ] && echo ': stopped at the budget')"
  echo "host16: $name: $(($(date +%s) - s)) s$how (at $(($(date +%s) - t0)) s)"
  return 0
}
mpi() { # mpirun for P ranks, bound to cores when they fit
  if [ "$1" -le "$cores" ]; then echo "mpirun -np $1 --bind-to core --mca btl self,vader"
  else echo "mpirun -np $1 --bind-to none --oversubscribe --mca mpi_yield_when_idle 1 --mca btl self,vader"; fi
}
c_round() { # P COLL: one round of COLL at P ranks, tpu_dist and Open MPI in turn
  local p=$1 coll=$2 impl
  for impl in tpu_dist mpi; do
    $(mpi "$p") -x MALLOC_MMAP_THRESHOLD_ -x MALLOC_TRIM_THRESHOLD_ "$TD_BENCH_BIN/${coll}_perf" \
      -b 8 -e 65536 -f 2 -n 1000 -w 10 -c 1 -I $impl -C "$OUT/c_np$p.csv" >/dev/null
    $(mpi "$p") -x MALLOC_MMAP_THRESHOLD_ -x MALLOC_TRIM_THRESHOLD_ "$TD_BENCH_BIN/${coll}_perf" \
      -b 131072 -e "$max" -f 2 -n 10 -w 3 -c 1 -I $impl -C "$OUT/c_np$p.csv" >/dev/null
  done
}
algos_round() { # P: tpu_dist's plans forced by name, and selection's pick
  local p=$1 coll algo algos force
  for coll in all_reduce all_gather reduce_scatter broadcast; do
    algos="ring direct selected"
    [ $coll = broadcast ] && algos="chain tree direct selected"
    for algo in $algos; do
      force=(-A "$algo")
      [ $algo = selected ] && force=()
      $(mpi "$p") -x MALLOC_MMAP_THRESHOLD_ -x MALLOC_TRIM_THRESHOLD_ "$TD_BENCH_BIN/${coll}_perf" \
        -b 8 -e "$max" -f 4 -n 50 -w 5 -c 1 "${force[@]}" -C "$OUT/algos_np$p.csv" >/dev/null
    done
  done
}
torch_round() { # P: torch's all_reduce through tpu_dist, then gloo
  local p=$1 backend
  for backend in tpu_dist gloo; do
    $PY bench/torch_perf.py --backend $backend --np "$p" --colls allreduce --min 1024 \
      --max "$max" --factor 4 --iters 20 --csv "$OUT/torch_np$p.csv" >/dev/null
  done
}
percall() { # P: what a blocking torch all_reduce adds per call, one round appended per call
  $PY bench/torch_perf.py --percall --np "$1" --rounds 1 --sizes 8,1K,8K,64K >>"$OUT/percall_np$1.txt"
}

{
  "$INFO" --host
  lscpu
  numactl -H 2>/dev/null || true
  mpirun --version | head -1
  [ $torch = 0 ] || $PY -c 'import torch; print("torch", torch.__version__)'
} >"$OUT/host.txt" 2>&1 || echo "host16: host.txt is incomplete"
for p in $NPS; do # what selection picks here, from the cost model as this host scales it
  "$INFO" -s --nranks "$p" >"$OUT/select_np$p.txt" 2>&1 || echo "host16: no selection table at $p ranks"
done
step "copy bound" bash -c "echo '# procs bytes GB/s (all processes together)' >'$OUT/copy.txt'
  for p in 1 $NPS; do \"\$TD_BENCH_BIN/memcpy_bw\" 65536 $max 5 \$p | sed \"s/^/\$p /\"; done >>'$OUT/copy.txt'"
for p in $NPS; do rm -f "$OUT/c_np$p.csv" "$OUT/algos_np$p.csv" "$OUT/torch_np$p.csv" "$OUT/percall_np$p.txt"; done
export -f c_round algos_round torch_round percall mpi
export OUT PY max cores
for p in $NPS; do
  step "all_reduce at $p ranks, round 1" bash -c "c_round $p all_reduce"
  [ $torch = 0 ] || step "torch at $p ranks, round 1" bash -c "torch_round $p"
  [ $torch = 0 ] || step "torch per call at $p ranks, round 1" bash -c "percall $p"
done
for p in $NPS; do
  for coll in $COLLS; do
    [ $coll = all_reduce ] || step "$coll at $p ranks, round 1" bash -c "c_round $p $coll"
  done
done
for p in $NPS; do step "forced plans at $p ranks" bash -c "algos_round $p"; done
for ((r = 2; r <= ROUNDS; r++)); do
  for p in $NPS; do
    for coll in $COLLS; do step "$coll at $p ranks, round $r" bash -c "c_round $p $coll"; done
    [ $torch = 0 ] || step "torch at $p ranks, round $r" bash -c "torch_round $p"
    [ $torch = 0 ] || step "torch per call at $p ranks, round $r" bash -c "percall $p"
  done
done
for f in "$OUT"/*.csv; do [ -f "$f" ] && echo "host16: $(basename "$f"): $(wc -l <"$f") rows"; done
for p in $NPS; do
  [ -f "$OUT/percall_np$p.txt" ] || continue
  echo "host16: torch's cost per call at $p ranks (bytes, C, torch 1 rank, torch $p ranks, excess, ratio):"
  grep -E '^ +[0-9]+ ' "$OUT/percall_np$p.txt" | awk '{print "  " $1, $2, $3, $4, $5, $6}'
done
echo "host16: done after $(($(date +%s) - t0)) s, results in $OUT"
