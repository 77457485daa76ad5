#!/usr/bin/env bash
# tests/cluster/ofi.sh - the ofi transport across hosts (suite cluster-ofi): 4 hosts of
# scripts/cluster (network namespaces, links shaped to 2 Gbit/s), mpirun with a hostfile and
# tests/mpi/test_mpi exact on 2 hosts x 2 ranks with every pair over ofi (libfabric's tcp;ofi_rxm,
# on the hosts' own interface: the socket transport's choice), then the same job over sockets,
# then over ofi on 4 hosts x 1 rank; the INFO log must show ofi across hosts.
# Needs root (network namespaces). TD_CLUSTER_NET picks the subnet (default auto: the first free).
set -uo pipefail
cd "$(dirname "$0")/../.."
B=${TD_BUILDDIR:-.}
export TD_CLUSTER_NAME=${TD_CLUSTER_NAME:-tdo$$} TD_CLUSTER_NET=${TD_CLUSTER_NET:-auto}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
C=scripts/cluster
tmp=$(mktemp -d)
trap '$C down; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
$C up 4 --rate 2gbit || exit 1
TD_CLUSTER_NET=$($C net 1)
rc=0
fail() { echo "FAIL: $*"; rc=1; }
for job in ofi:2 socket:2 ofi:4; do
  tp=${job%:*} hosts=${job#*:}
  $C hostfile $((4 / hosts)) >"$tmp/hostfile"
  echo "== mpirun: test_mpi on $hosts hosts x $((4 / hosts)) ranks over $tp"
  out=$(TPU_DIST_DEBUG=INFO TPU_DIST_TRANSPORTS=$tp TPU_DIST_OFI_PROVIDER='tcp;ofi_rxm' \
    timeout 300 mpirun --hostfile "$tmp/hostfile" -np 4 --mca plm_rsh_agent "$PWD/$C rsh" \
    --mca oob_tcp_if_include "$TD_CLUSTER_NET.0/24" --mca btl_tcp_if_include "$TD_CLUSTER_NET.0/24" \
    --mca btl self,vader,tcp --mca mpi_yield_when_idle 1 -x TPU_DIST_TIMEOUT_MS=60000 \
    -x TPU_DIST_DEBUG -x TPU_DIST_TRANSPORTS -x TPU_DIST_OFI_PROVIDER "$B/tests/mpi/test_mpi" 2>&1)
  st=$?
  grep -E '^test_mpi|FAIL' <<<"$out" | head -20
  [ $st -eq 0 ] || fail "test_mpi over $tp: status $st"
  grep -q "test_mpi np 4: [0-9]* checks, 0 failures" <<<"$out" || fail "$tp: no clean summary"
  grep -q ": rank 0 reaches rank 2 with $tp" <<<"$out" || fail "$tp: rank 0 does not reach rank 2 (another host) with $tp"
done
if [ $rc -eq 0 ]; then echo "cluster-ofi: ok"; fi
exit $rc
