# tests/mpi/tls_certs.sh - sourced by the TLS tests (tests/mpi/tls.sh, tests/fault/hostile.sh):
#   tls_certs DIR CA_NAME NAME...   makes DIR/ca.pem (a new P-256 CA, its key DIR/ca.key) and for
#                                   each NAME DIR/NAME.pem and DIR/NAME.key, signed by that CA,
#                                   with the openssl command; valid two days.
tls_certs() {
  local d=$1 ca=$2 n
  shift 2
  mkdir -p "$d"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=$ca" \
    -keyout "$d/ca.key" -out "$d/ca.pem" 2>/dev/null || return 1
  for n in "$@"; do
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$n" \
      -keyout "$d/$n.key" -out "$d/$n.csr" 2>/dev/null &&
      openssl x509 -req -in "$d/$n.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial -days 2 \
        -out "$d/$n.pem" 2>/dev/null || return 1
  done
}
