#!/usr/bin/env bash
# bench/host16/run.sh - the many-core host's figures in one run, from a copy of this source tree
# (docs/host.md, docs/performance.md). Builds the tree if it is not built (and the torch plugin when
# torch imports), then writes under OUT (default $OUT, else bench/results/host16-DATE):
#   host.txt        tpudist-info --host, lscpu, numactl -H, mpirun and torch versions, the command
#   copy.txt        the copy bound: bench/memcpy_bw with 1 process and with P copying at once
#   c_npP.csv       C benchmarks at P ranks, tpu_dist and Open MPI's collectives (the same tools,
#                   -I mpi) in turn each round, 8 B-64 MiB; ranks bound by mpirun --bind-to core
#                   (--bind-to none and --oversubscribe beyond the cores)
#   algos_npP.csv   tpu_dist's plans forced by name (-A) in turn each round, 8 B-MAX by 4x: the
#                   direct (one-shot) all-reduce, all-gather, reduce-scatter and broadcast against
#                   the ring (chain and tree for broadcast) and selection's own pick (algo column)
#   torch_npP.csv   torch all_reduce through tpu_dist and through gloo at P ranks (torch imports)
#   percall_npP.txt what a blocking torch all_reduce adds over the C API at P ranks, 8 B-64 KiB
#                   (bench/torch_perf.py --percall; torch imports)
#   log.txt         everything the steps printed
# Knobs: PY=python3 (the one torch imports in) NPS="4 8 16" ROUNDS=3 MAX=64M COLLS="all_reduce all_gather reduce_scatter alltoall
# broadcast". Rows: coll,impl,nranks,bytes,time_us,algbw,busbw,wrong,algo (medians per call).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-${1:-bench/results/host16-$(date -u +%Y%m%dT%H%M)}}
NPS=${NPS:-4 8 16} ROUNDS=${ROUNDS:-3} MAX=${MAX:-64M} PY=${PY:-python3}
COLLS=${COLLS:-all_reduce all_gather reduce_scatter alltoall broadcast}
export MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
bytes() { numfmt --from=iec "$1"; }
max=$(bytes "$MAX") cores=$(nproc)
if [ ! -x bench/all_reduce_perf ]; then
  [ -x configure ] || autoreconf -fi
  [ -f Makefile ] || ./configure
  make -j"$cores"
  make -j"$cores" check TESTS=
fi
torch=0
if $PY -c "import torch" 2>/dev/null; then
  torch=1
  PYTHON=$PY python/build_ext.sh >/dev/null
fi
{
  echo "# $(date -u) $0 NPS='$NPS' ROUNDS=$ROUNDS MAX=$MAX on $(hostname), $(git rev-parse HEAD 2>/dev/null)"
  env -u TPU_DIST_COMM_ID tools/tpudist-info --host
  lscpu
  numactl -H 2>/dev/null || true
  mpirun --version | head -1
  if [ $torch = 1 ]; then $PY -c 'import torch; print("torch", torch.__version__)'; fi
} >"$OUT/host.txt"
mpi() { # mpirun for P ranks, bound to cores when they fit
  if [ "$1" -le "$cores" ]; then echo "mpirun -np $1 --bind-to core --mca btl self,vader"
  else echo "mpirun -np $1 --bind-to none --oversubscribe --mca mpi_yield_when_idle 1 --mca btl self,vader"; fi
}
{
  echo "# procs bytes GB/s (all processes together)"
  for p in 1 $NPS; do bench/memcpy_bw 65536 "$max" 5 "$p" | sed "s/^/$p /"; done
} >"$OUT/copy.txt"
for p in $NPS; do
  csv=$OUT/c_np$p.csv
  rm -f "$csv"
  for ((r = 1; r <= ROUNDS; r++)); do
    for coll in $COLLS; do
      for impl in tpu_dist mpi; do
        $(mpi "$p") -x MALLOC_MMAP_THRESHOLD_ -x MALLOC_TRIM_THRESHOLD_ bench/${coll}_perf \
          -b 8 -e 65536 -f 2 -n 1000 -w 10 -c 1 -I $impl -C "$csv" >/dev/null
        $(mpi "$p") -x MALLOC_MMAP_THRESHOLD_ -x MALLOC_TRIM_THRESHOLD_ bench/${coll}_perf \
          -b 131072 -e "$max" -f 2 -n 10 -w 3 -c 1 -I $impl -C "$csv" >/dev/null
      done
    done
  done
  echo "host16: C at $p ranks: $(wc -l <"$csv") rows"
  csv=$OUT/algos_np$p.csv
  rm -f "$csv"
  for ((r = 1; r <= ROUNDS; r++)); do
    for coll in all_reduce all_gather reduce_scatter broadcast; do
      algos="ring direct selected"
      [ $coll = broadcast ] && algos="chain tree direct selected"
      for algo in $algos; do
        force=(-A "$algo")
        [ $algo = selected ] && force=()
        $(mpi "$p") -x MALLOC_MMAP_THRESHOLD_ -x MALLOC_TRIM_THRESHOLD_ bench/${coll}_perf \
          -b 8 -e "$max" -f 4 -n 50 -w 5 -c 1 "${force[@]}" -C "$csv" >/dev/null
      done
    done
  done
  echo "host16: algorithms at $p ranks: $(wc -l <"$csv") rows"
  [ $torch = 1 ] || continue
  csv=$OUT/torch_np$p.csv
  rm -f "$csv"
  for ((r = 1; r <= ROUNDS; r++)); do
    for backend in tpu_dist gloo; do
      $PY bench/torch_perf.py --backend $backend --np "$p" --colls allreduce --min 1024 \
        --max "$max" --factor 4 --iters 20 --csv "$csv" >/dev/null
    done
  done
  echo "host16: torch at $p ranks: $(wc -l <"$csv") rows"
  $PY bench/torch_perf.py --percall --np "$p" --rounds "$ROUNDS" --sizes 8,1K,8K,64K \
    >"$OUT/percall_np$p.txt"
  echo "host16: torch's cost per call at $p ranks: $(tail -n 4 "$OUT/percall_np$p.txt" | tr -s ' ' | tr '\n' ';')"
done
echo "host16: done, results in $OUT"
