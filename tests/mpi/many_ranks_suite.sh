#!/usr/bin/env bash
# tests/mpi/many_ranks_suite.sh - suite many-ranks: 64 ranks on this host (flat), every collective
# once with exact results, the large all-to-all and the all-to-all-v direct (every pair talks),
# then again with the direct all-reduce, all-gather, reduce-scatter and broadcast forced,
# /dev/shm at most 1.5 GiB (1 MiB rings in both directions of every pair would be 4 GiB); then 512
# ranks on an emulated 8x8x8 torus (all-to-all-v on the torus plan: direct would open a segment
# for each of the 130,816 pairs), /dev/shm at most 2 GiB. Each job is bounded in time; here, shared
# with other work, they took 5-10 s and 70 s.
set -uo pipefail
cd "$(dirname "$0")/../.."
# job N TOPOLOGY MAX_SHM_MIB TIMEOUT_S ARGS...: runs it, then checks its /dev/shm use
job() {
  local n=$1 topo=$2 max_mib=$3 limit=$4 out
  shift 4
  echo "== many-ranks: $n ranks ($topo)"
  out=$(nice timeout "$limit" tests/mpi/many_ranks.sh "$n" "$topo" "$@" 2>&1)
  local rc=$?
  echo "$out" | grep -v '^\[rank' | tail -20
  [ $rc -eq 0 ] || { echo "$out" | grep '^\[rank' | head -20; echo "many-ranks: $n ranks failed ($rc)"; return 1; }
  local kib
  kib=$(echo "$out" | sed -n 's/.*shm_used_kib \([0-9]*\).*/\1/p')
  [ -n "$kib" ] && [ "$kib" -le $((max_mib * 1024)) ] ||
    { echo "many-ranks: $n ranks used ${kib:-?} KiB of /dev/shm, more than $max_mib MiB"; return 1; }
}
job 64 flat 1536 240 --expect alltoall-large=direct --expect alltoallv=direct || exit 1
direct=allreduce=direct,allgather=direct,reducescatter=direct,broadcast=direct
TPU_DIST_ALGO=$direct job 64 flat 1536 240 --expect allreduce=direct --expect allgather=direct \
  --expect reducescatter=direct --expect broadcast=direct || exit 1
TPU_DIST_ALGO=alltoallv=torus job 512 8x8x8 2048 900 --a2a-bytes 65536 --expect alltoallv=torus ||
  exit 1
echo "many-ranks: ok"
