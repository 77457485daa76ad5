/*
 * tls_peer.c - an attacker at the socket-transport listeners of a job that runs TLS
 * (TPU_DIST_TLS=1), for tests/fault/hostile.sh. Every attack must be refused: the listener closes
 * the connection within the deadline having answered at most a TLS alert, never the transport's
 * challenge.
 *   tls_peer cert CA CERT KEY ROGUE_CERT ROGUE_KEY PORT
 *       the job authenticates with certificates from CA; CERT/KEY is a valid one (an insider that
 *       has a certificate but breaks the record layer), ROGUE_* one from another CA. At the
 * listener PORT (127.0.0.1): a peer without TLS (the transport's hello in clear), a client with the
 * rogue certificate, a client with no certificate, a ClientHello record cut short, then with the
 *       valid certificate a truncated record and a tampered record after the handshake.
 *   tls_peer psk PORT
 *       the job uses the PSK derived from its secret: a peer without TLS, a client with a different
 *       PSK, a ClientHello record cut short.
 * Prints one line per attack ("refused: ..." or "NOT REFUSED: ...") and exits 0 only if every
 * attack was refused.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define DEADLINE_MS 8000 /* the job's TPU_DIST_HANDSHAKE_MS is 2000 */

static int gFailed;
static int gPort;
static unsigned char gPsk[32];

static void verdict(int refused, const char *what, const char *how) {
  printf("tls_peer: %s: %s (%s)\n", refused ? "refused" : "NOT REFUSED", what, how);
  if (!refused) gFailed++;
}

static long nowMs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

static int dial(void) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)gPort)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0) return fd;
  perror("tls_peer: connect");
  if (fd >= 0) close(fd);
  return -1;
}

/* Reads raw bytes until the listener closes (returns the count, first byte in *first) or the
 * deadline (-1). */
static long readUntilClosed(int fd, int *first) {
  char buf[4096];
  long total = 0, end = nowMs() + DEADLINE_MS;
  *first = -1;
  while (nowMs() < end) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) return total;
    if (n < 0) continue;
    if (total == 0) *first = (unsigned char)buf[0];
    total += n;
  }
  return -1;
}

/* Raw bytes to the listener, then the half close; refused if it closes having answered nothing
 * but a TLS alert (record type 21) or, after a handshake, at most one short record. */
static void rawAttack(int fd, const void *bytes, size_t n, int after_handshake, const char *what) {
  char how[128];
  int first;
  if (send(fd, bytes, n, MSG_NOSIGNAL) != (ssize_t)n) perror("tls_peer: send");
  shutdown(fd, SHUT_WR);
  long got = readUntilClosed(fd, &first);
  int ok = got == 0 || (got > 0 && (first == 21 || (after_handshake && got < 40)));
  if (got < 0)
    snprintf(how, sizeof(how), "still open after %d ms", DEADLINE_MS);
  else
    snprintf(how, sizeof(how), "closed after %ld bytes of answer%s", got,
             got && first == 21 ? " (a TLS alert)" : "");
  verdict(ok, what, how);
  close(fd);
}

static void plainPeer(void) {
  unsigned char hello[64] = {0x70, 0x74, 0x64, 0x73, 0x6f, 0x63, 0x76, 0x32}; /* the magic */
  int fd = dial();
  if (fd >= 0) rawAttack(fd, hello, sizeof(hello), 0, "a peer without TLS (the hello in clear)");
}

static void cutClientHello(void) {
  unsigned char rec[5 + 100] = {22, 3, 1, 0x02, 0x00, 1, 0, 1, 0xfc, 3, 3}; /* announces 512 */
  int fd = dial();
  if (fd >= 0) rawAttack(fd, rec, sizeof(rec), 0, "a ClientHello record cut short");
}

/* A TLS client on a new connection; then a transport hello and a read: refused if the handshake
 * or the read fails (the listener's alert or close) instead of bringing the 32-byte challenge. */
static SSL *tlsDial(SSL_CTX *ctx, int *fd, char *why, size_t n) {
  *fd = dial();
  if (*fd < 0) return NULL;
  SSL *ssl = SSL_new(ctx);
  SSL_set_fd(ssl, *fd);
  if (SSL_connect(ssl) == 1) return ssl;
  ERR_error_string_n(ERR_peek_error(), why, n);
  ERR_clear_error();
  SSL_free(ssl);
  close(*fd);
  return NULL;
}

static void tlsClient(SSL_CTX *ctx, const char *what) {
  char why[256] = "closed";
  unsigned char hello[64] = {0}, chal[32];
  int fd;
  SSL *ssl = tlsDial(ctx, &fd, why, sizeof(why));
  if (!ssl) {
    verdict(1, what, why);
    return;
  }
  size_t got = 0;
  int ok = SSL_write(ssl, hello, sizeof(hello)) <= 0 || !SSL_read_ex(ssl, chal, sizeof(chal), &got);
  if (ok && ERR_peek_error()) ERR_error_string_n(ERR_peek_error(), why, sizeof(why));
  if (!ok) snprintf(why, sizeof(why), "answered %zu bytes in TLS", got);
  ERR_clear_error();
  verdict(ok, what, why);
  SSL_free(ssl);
  close(fd);
}

/* Completes a handshake with a valid certificate, then breaks the record layer with raw bytes. */
static void recordAttack(SSL_CTX *ctx, int truncated) {
  char why[256];
  const char *what = truncated ? "a truncated record after the handshake (a valid certificate)"
                               : "a tampered record after the handshake (a valid certificate)";
  unsigned char rec[5 + 64] = {23, 3, 3, 0, truncated ? 200 : 64};
  int fd;
  SSL *ssl = tlsDial(ctx, &fd, why, sizeof(why));
  if (!ssl) {
    verdict(0, what, why); /* the valid certificate must get through */
    return;
  }
  RAND_bytes(rec + 5, 64);
  rawAttack(fd, rec, truncated ? 5 + 40 : sizeof(rec), 1, what); /* closes fd */
  SSL_free(ssl);
}

static SSL_CTX *ctxNew(void) {
  SSL_CTX *ctx = SSL_CTX_new(TLS_method());
  SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
  return ctx;
}

static SSL_CTX *certCtx(const char *ca, const char *cert, const char *key) {
  SSL_CTX *ctx = ctxNew();
  SSL_CTX_load_verify_locations(ctx, ca, NULL);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
  if (cert && (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1 ||
               SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1)) {
    fprintf(stderr, "tls_peer: cannot load %s\n", cert);
    exit(2);
  }
  return ctx;
}

static int pskUse(SSL *ssl, const EVP_MD *md, const unsigned char **id, size_t *idlen,
                  SSL_SESSION **sess) {
  static const unsigned char suite[2] = {0x13, 0x01};
  (void)md;
  *sess = SSL_SESSION_new();
  SSL_SESSION_set1_master_key(*sess, gPsk, sizeof(gPsk));
  SSL_SESSION_set_cipher(*sess, SSL_CIPHER_find(ssl, suite));
  SSL_SESSION_set_protocol_version(*sess, TLS1_3_VERSION);
  *id = (const unsigned char *)"tpu_dist";
  *idlen = 8;
  return 1;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  int cert = argc >= 8 && !strcmp(argv[1], "cert"), psk = argc >= 3 && !strcmp(argv[1], "psk");
  if (!cert && !psk) {
    fprintf(stderr, "usage: tls_peer cert CA CERT KEY ROGUE_CERT ROGUE_KEY PORT | psk PORT...\n");
    return 2;
  }
  gPort = atoi(argv[cert ? 7 : 2]);
  plainPeer();
  cutClientHello();
  if (cert) {
    tlsClient(certCtx(argv[2], argv[5], argv[6]), "a certificate from another CA");
    tlsClient(certCtx(argv[2], NULL, NULL), "no certificate");
    SSL_CTX *good = certCtx(argv[2], argv[3], argv[4]);
    recordAttack(good, 1);
    recordAttack(good, 0);
  } else {
    SSL_CTX *ctx = ctxNew();
    SSL_CTX_set_ciphersuites(ctx, "TLS_AES_128_GCM_SHA256");
    RAND_bytes(gPsk, sizeof(gPsk));
    SSL_CTX_set_psk_use_session_callback(ctx, pskUse);
    tlsClient(ctx, "a different PSK");
  }
  printf("tls_peer: %s\n", gFailed ? "SOME ATTACKS NOT REFUSED" : "every attack refused");
  return gFailed ? 1 : 0;
}
