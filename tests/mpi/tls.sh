#!/usr/bin/env bash
# tests/mpi/tls.sh - TLS on the socket transport (TPU_DIST_TLS=1), certificates made here with the
# openssl command into a temporary directory (a CA, one certificate per rank, and a rogue CA with
# a certificate of its own):
#   1. certificate mode: the exact MPI suite at 3 ranks, 2 streams per pair, each rank its own
#      certificate;
#   2. PSK mode in a TPU_DIST_COMM_ID job (the key derived from TPU_DIST_COMM_SECRET): every
#      collective exact (tools/main_job), then the same under valgrind (no memcheck error, no
#      definite leak);
#   3. bad input, each refused with a clear error on both ranks and no hang: a rank without TLS, a
#      rank whose certificate comes from another CA (also under valgrind: the refusal leaks
#      nothing), then refused at init: a missing certificate file, a key that is not the
#      certificate's, only some of the three files, and PSK mode in a job without a secret.
# The attacks from outside the job (a peer without TLS, a wrong certificate, a different PSK, a
# truncated or tampered record) are in tests/fault/hostile.sh.
set -uo pipefail
cd "$(dirname "$0")/../.."
source tests/mpi/launch.sh
source tests/mpi/tls_certs.sh
bd=${TD_BUILDDIR:-.}
export TPU_DIST_TIMEOUT_MS=${TPU_DIST_TIMEOUT_MS:-60000} TPU_DIST_TRANSPORTS=socket TPU_DIST_SOCKET_IFNAME=lo
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "tls: FAIL: $*"
  exit 1
}

tls_certs "$tmp/job" "tpu_dist test CA" rank0 rank1 rank2 || fail "openssl could not make the certificates"
tls_certs "$tmp/rogue" "rogue CA" rogue || fail "openssl could not make the rogue certificate"
chmod 600 "$tmp"/*/*.key

echo "== certificate mode: the exact MPI suite, 3 ranks, 2 streams per pair"
out=$(TPU_DIST_TLS=1 TPU_DIST_SOCKET_NSTREAMS=2 mpirun -np 3 sh -c 'd=$1; shift
  export TPU_DIST_TLS_CERT=$d/rank$OMPI_COMM_WORLD_RANK.pem TPU_DIST_TLS_KEY=$d/rank$OMPI_COMM_WORLD_RANK.key TPU_DIST_TLS_CA=$d/ca.pem
  exec "$@"' sh "$tmp/job" $bd/tests/mpi/test_mpi 2>&1)
rc=$?
echo "$out" | tail -1
[ $rc -eq 0 ] && echo "$out" | grep -q "checks, 0 failures" || { echo "$out" | tail -20; fail "certificate mode"; }

echo "== PSK mode (TPU_DIST_COMM_ID job with a secret): every collective"
export TPU_DIST_COMM_SECRET=tls-test-secret
out=$(TPU_DIST_TLS=1 launch 2 $bd/tools/main_job 2>&1)
rc=$?
echo "$out" | grep "main_job:"
[ $rc -eq 0 ] && echo "$out" | grep -q "all results correct" || { echo "$out" | tail -20; fail "PSK mode"; }

vg() {
  ./libtool --mode=execute valgrind -q --error-exitcode=99 --leak-check=full \
    --errors-for-leak-kinds=definite --suppressions=tests/valgrind.supp "$@"
}
export -f vg
echo "== PSK mode under valgrind"
out=$(TPU_DIST_TLS=1 TPU_DIST_TIMEOUT_MS=120000 launch 2 bash -c 'vg "$@"' sh tools/main_job --small 2>&1)
rc=$?
[ $rc -eq 0 ] && echo "$out" | grep -q "all results correct" || { echo "$out" | tail -30; fail "PSK mode under valgrind"; }
echo "tls: valgrind clean"

# A 2-rank job expected to fail: both ranks must say why (pattern), within the timeout.
refused() {
  local what=$1 pat=$2
  shift 2
  local t0=$SECONDS
  out=$(TPU_DIST_TIMEOUT_MS=20000 "$@" 2>&1)
  local rc=$? r
  [ $rc -ne 0 ] || { echo "$out" | tail -20; fail "$what: not refused (rc $rc)"; }
  for r in 0 1; do
    echo "$out" | grep "^\[rank $r\]" | grep -q -E "$pat" || { echo "$out" | tail -20; fail "$what: rank $r does not say why"; }
  done
  echo "$out" | grep -q -E "^\[rank [01]\] ==[0-9]+==" && { echo "$out" | grep "==" | head; fail "$what: valgrind found errors"; }
  echo "tls: refused ($what) in $((SECONDS - t0)) s:"
  for r in 0 1; do echo "$out" | grep "^\[rank $r\]" | grep -m1 -o -E "rank $r: .*($pat).{0,100}"; done
}
# per-rank settings: RANK 1 gets the second set
perrank() {
  local a=$1 b=$2
  shift 2
  if [ "$RANK" = 1 ]; then eval "export $b"; else eval "export $a"; fi
  exec "$@"
}
export -f perrank
cert() { echo "TPU_DIST_TLS_CERT=$1.pem TPU_DIST_TLS_KEY=$1.key TPU_DIST_TLS_CA=$2"; }
good0=$(cert "$tmp/job/rank0" "$tmp/job/ca.pem")
rogue=$(cert "$tmp/rogue/rogue" "$tmp/rogue/ca.pem")

echo "== bad input"
refused "a rank without TLS" "uses no TLS|uses TLS with" \
  launch 2 bash -c 'perrank "$@"' sh "TPU_DIST_TLS=1" "TPU_DIST_TLS=0" $bd/tools/main_job --small
refused "a certificate from another CA" "TLS refused|TLS handshake" \
  launch 2 env TPU_DIST_TLS=1 bash -c 'perrank "$@"' sh "$good0" "$rogue" $bd/tools/main_job --small
refused "a certificate from another CA, under valgrind" "TLS refused|TLS handshake" \
  launch 2 env TPU_DIST_TLS=1 bash -c 'perrank "$@"' sh "$good0" "$rogue" \
  bash -c 'vg "$@"' sh tools/main_job --small
refused "a missing certificate file" "TPU_DIST_TLS_CERT=/nonexistent.pem refused" \
  launch 2 env TPU_DIST_TLS=1 TPU_DIST_TLS_CERT=/nonexistent.pem TPU_DIST_TLS_KEY="$tmp/job/rank0.key" \
  TPU_DIST_TLS_CA="$tmp/job/ca.pem" $bd/tools/main_job --small
refused "a key that is not the certificate's" "TPU_DIST_TLS_KEY=.* refused" \
  launch 2 env TPU_DIST_TLS=1 TPU_DIST_TLS_CERT="$tmp/job/rank0.pem" TPU_DIST_TLS_KEY="$tmp/job/rank1.key" \
  TPU_DIST_TLS_CA="$tmp/job/ca.pem" $bd/tools/main_job --small
refused "only some of the files" "go together" \
  launch 2 env TPU_DIST_TLS=1 TPU_DIST_TLS_CERT="$tmp/job/rank0.pem" $bd/tools/main_job --small
refused "PSK mode without a job secret" "this job has none" \
  launch 2 env -u TPU_DIST_COMM_SECRET TPU_DIST_TLS=1 $bd/tools/main_job --small
echo "tls: all cases passed"
