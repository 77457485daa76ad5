#!/usr/bin/env bash
# tests/fault/ofi.sh - the fault scripts over the ofi transport alone (libfabric's tcp;ofi_rxm on
# loopback): kill -9 of a rank at 2 and 4 ranks with survivors rebuilding (kill.sh), CommAbort
# releasing blocked calls (jobs.sh abort), and survivors shrinking (shrink.sh; its cases that name
# TCP keep the socket transport). Each survivor's error names the dead rank.
set -uo pipefail
cd "$(dirname "$0")/../.."
export TPU_DIST_TRANSPORTS=ofi TPU_DIST_OFI_PROVIDER='tcp;ofi_rxm' FI_TCP_IFACE=lo TPU_DIST_SOCKET_IFNAME=lo
rc=0
out=$(mktemp)
tests/fault/kill.sh 2 4 2>&1 | tee "$out" | grep -E '^== |kill: ok|failed|FAIL' || true
grep -q 'kill: ok' "$out" || rc=1
# the survivors learned of the death through ofi, naming the rank
grep -q 'transport failure: ofi: rank [0-9]' "$out" || { echo "no survivor named the dead rank over ofi"; rc=1; }
tests/fault/jobs.sh abort || rc=1
tests/fault/shrink.sh > "$out" 2>&1 || { cat "$out"; rc=1; }
grep -q 'ofi: rank [0-9]' "$out" || { echo "shrink: no failure seen over ofi"; rc=1; }
rm -f "$out"
[ $rc -eq 0 ] && echo "fault-ofi: ok"
exit $rc
