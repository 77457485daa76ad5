/*
 * sock_tls.c - TLS 1.3 on the socket transport's streams (TPU_DIST_TLS=1), over OpenSSL's libssl.
 *
 * Each connection of a pair runs a TLS 1.3 handshake right after its TCP connect, then the
 * transport's own handshake (sock_auth.c) and every frame travel inside TLS records. Two ways to
 * authenticate, chosen per job:
 * - certificates (TPU_DIST_TLS_CERT, TPU_DIST_TLS_KEY, TPU_DIST_TLS_CA): both sides present theirs
 *   and check the other's against the CA file (mutual TLS);
 * - else an external pre-shared key derived from the job's key (HKDF, label below) with an
 *   (EC)DHE exchange on top (forward secrecy): only a holder of the job secret completes it.
 * No session tickets, no resumption. Everything here is non-blocking: the handshake and each read
 * or write say which poll event they wait for, and the callers (socket.c, sock_auth.c,
 * sock_send.c, sock_recv.c) drive them from the progress loop like plain sockets.
 */
#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bootstrap.h"
#include "socket_priv.h"

#define TD_TLS_PSK_LABEL "tpu_dist/sock/tls-psk/v1"
#define TD_TLS_PSK_ID "tpu_dist"
#define TD_TLS_READ_BUF (64 * 1024) /* read ahead: fewer system calls per record */
#define TD_TLS_RECORD 16384         /* the most plaintext one record carries */

#define TD_TLS_PSK_SUITE "TLS_AES_128_GCM_SHA256"
#define TD_TLS_SUITES TD_TLS_PSK_SUITE ":TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"
static const unsigned char kPskCipher[2] = {0x13, 0x01}; /* TD_TLS_PSK_SUITE */

/* The connection's bytes go through send(MSG_NOSIGNAL) and recv: libssl's own socket BIO writes
 * with write(), which raises SIGPIPE when the peer is gone. */
static int bioWrite(BIO *b, const char *buf, int len) {
  ssize_t n = send((int)(intptr_t)BIO_get_data(b), buf, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT);
  BIO_clear_retry_flags(b);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_write(b);
  return (int)n;
}

static int bioRead(BIO *b, char *buf, int len) {
  ssize_t n = recv((int)(intptr_t)BIO_get_data(b), buf, (size_t)len, MSG_DONTWAIT);
  BIO_clear_retry_flags(b);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_read(b);
  if (n == 0) BIO_set_flags(b, BIO_FLAGS_IN_EOF); /* libssl tells a cut record by it */
  return (int)n;
}

static long bioCtrl(BIO *b, int cmd, long num, void *ptr) {
  (void)num, (void)ptr;
  if (cmd == BIO_CTRL_EOF) return BIO_test_flags(b, BIO_FLAGS_IN_EOF) != 0;
  return cmd == BIO_CTRL_FLUSH;
}

/* One method for the process (a new BIO type index per communicator would run out). */
static BIO_METHOD *gBioMethod;
static pthread_once_t gBioOnce = PTHREAD_ONCE_INIT;

static void bioMethodMake(void) {
  BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "tpu_dist socket");
  if (m && BIO_meth_set_write(m, bioWrite) && BIO_meth_set_read(m, bioRead) &&
      BIO_meth_set_ctrl(m, bioCtrl))
    gBioMethod = m;
  else
    BIO_meth_free(m);
}

static BIO_METHOD *bioMethod(void) {
  pthread_once(&gBioOnce, bioMethodMake);
  return gBioMethod;
}

/* The reason of a libssl failure (the first on its error queue, then emptied), else fallback. */
static void tlsReason(char *buf, size_t n, const char *fallback) {
  unsigned long e = ERR_peek_error(); /* the first: the cause */
  if (e)
    ERR_error_string_n(e, buf, n);
  else
    snprintf(buf, n, "%s", fallback);
  ERR_clear_error();
}

static SSL_SESSION *pskSession(SSL *ssl) {
  const tdSockCtx *c = SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl));
  SSL_SESSION *s = SSL_SESSION_new();
  const SSL_CIPHER *ciph = SSL_CIPHER_find(ssl, kPskCipher);
  if (!s || !ciph || !SSL_SESSION_set1_master_key(s, c->psk.b, sizeof(c->psk.b)) ||
      !SSL_SESSION_set_cipher(s, ciph) || !SSL_SESSION_set_protocol_version(s, TLS1_3_VERSION)) {
    SSL_SESSION_free(s);
    return NULL;
  }
  return s;
}

static int pskUse(SSL *ssl, const EVP_MD *md, const unsigned char **id, size_t *idlen,
                  SSL_SESSION **sess) {
  (void)md;
  *sess = pskSession(ssl);
  *id = (const unsigned char *)TD_TLS_PSK_ID;
  *idlen = strlen(TD_TLS_PSK_ID);
  return *sess != NULL;
}

static int pskFind(SSL *ssl, const unsigned char *id, size_t idlen, SSL_SESSION **sess) {
  *sess = NULL;
  if (idlen != strlen(TD_TLS_PSK_ID) || memcmp(id, TD_TLS_PSK_ID, idlen)) return 1; /* unknown */
  *sess = pskSession(ssl);
  return *sess != NULL;
}

static tpudistResult_t tlsCerts(SSL_CTX *ctx, const tdConfig *cfg, char *err) {
  char why[TD_ERRLEN];
  const char *knob = NULL, *path = NULL;
  if (SSL_CTX_use_certificate_chain_file(ctx, cfg->tls_cert) != 1)
    knob = "TPU_DIST_TLS_CERT", path = cfg->tls_cert;
  else if (SSL_CTX_use_PrivateKey_file(ctx, cfg->tls_key, SSL_FILETYPE_PEM) != 1 ||
           SSL_CTX_check_private_key(ctx) != 1)
    knob = "TPU_DIST_TLS_KEY", path = cfg->tls_key;
  else if (SSL_CTX_load_verify_locations(ctx, cfg->tls_ca, NULL) != 1)
    knob = "TPU_DIST_TLS_CA", path = cfg->tls_ca;
  if (!knob) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    return tpudistSuccess;
  }
  tlsReason(why, sizeof(why), "unreadable");
  return tdErr(err, tpudistInvalidUsage, "TLS: %s=%s refused: %s", knob, path, why);
}

/* The mode the configuration asks for: 0 off, TD_TLS_CERT or TD_TLS_PSK; -1 (err) if inconsistent
 * or if the job's key is public (a TPU_DIST_COMM_ID job without a secret: its PSK protects
 * nothing). */
static int tlsMode(tdNet *comm, const tdConfig *cfg, char *err) {
  int files = !!cfg->tls_cert + !!cfg->tls_key + !!cfg->tls_ca;
  if (!cfg->tls) return 0;
  if (files == 3) return TD_TLS_CERT;
  if (files) {
    tdErr(err, tpudistInvalidUsage,
          "TLS: TPU_DIST_TLS_CERT, TPU_DIST_TLS_KEY and TPU_DIST_TLS_CA go together (%d of 3 set)",
          files);
    return -1;
  }
  if (!comm->bootstrap ||
      (bootstrapJobId(comm->bootstrap) && !cfg->comm_secret && !cfg->comm_secret_file)) {
    tdErr(err, tpudistInvalidUsage,
          "TLS: TPU_DIST_TLS=1 without certificate files uses a key derived from the job secret, "
          "and this job has none (set TPU_DIST_COMM_SECRET or TPU_DIST_COMM_SECRET_FILE, or the "
          "TPU_DIST_TLS_CERT, _KEY and _CA files)");
    return -1;
  }
  return TD_TLS_PSK;
}

tpudistResult_t sockTlsInit(tdNet *comm, tdSockCtx *c, const tdConfig *cfg, char *err) {
  int mode = tlsMode(comm, cfg, err);
  if (mode <= 0) return mode < 0 ? tpudistInvalidUsage : tpudistSuccess;
  SSL_CTX *ctx = SSL_CTX_new(TLS_method());
  c->tls = ctx;
  c->tls_bio = bioMethod();
  if (!ctx || !c->tls_bio) return tdErr(err, tpudistSystemError, "TLS: cannot create a context");
  c->tls_mode = mode;
  SSL_CTX_set_app_data(ctx, c);
  if (!SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) ||
      !SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION))
    return tdErr(err, tpudistSystemError, "TLS: this libssl has no TLS 1.3");
  SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
  SSL_CTX_set_num_tickets(ctx, 0);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_read_ahead(ctx, 1);
  SSL_CTX_set_default_read_buffer_len(ctx, TD_TLS_READ_BUF);
  /* AES-128-GCM first in both modes (the fastest with AES instructions); PSK mode only it: the
   * suite must use the PSK's hash */
  if (!SSL_CTX_set_ciphersuites(ctx, mode == TD_TLS_PSK ? TD_TLS_PSK_SUITE : TD_TLS_SUITES))
    return tdErr(err, tpudistSystemError, "TLS: this libssl has none of %s", TD_TLS_SUITES);
  if (mode == TD_TLS_CERT) return tlsCerts(ctx, cfg, err);
  authChildKey(&c->key, TD_TLS_PSK_LABEL, 0, &c->psk);
  SSL_CTX_set_psk_use_session_callback(ctx, pskUse);
  SSL_CTX_set_psk_find_session_callback(ctx, pskFind);
  return tpudistSuccess;
}

void sockTlsFini(tdSockCtx *c) {
  SSL_CTX_free(c->tls);
  c->tls = NULL;
  c->tls_bio = NULL;
  OPENSSL_cleanse(&c->psk, sizeof(c->psk));
}

const char *sockTlsModeName(int mode) {
  return mode == TD_TLS_CERT  ? "TLS with certificates"
         : mode == TD_TLS_PSK ? "TLS with the job's key"
                              : "no TLS";
}

SSL *sockTlsNew(tdSockCtx *c, int fd, int client, char *err) {
  SSL *ssl = SSL_new(c->tls);
  BIO *bio = BIO_new(c->tls_bio);
  if (!ssl || !bio) {
    SSL_free(ssl);
    BIO_free(bio);
    tdErr(err, tpudistNoMemory, "TLS: cannot create a session");
    return NULL;
  }
  BIO_set_data(bio, (void *)(intptr_t)fd);
  BIO_set_init(bio, 1);
  SSL_set_bio(ssl, bio, bio);
  if (client)
    SSL_set_connect_state(ssl);
  else
    SSL_set_accept_state(ssl);
  return ssl;
}

/* Classifies a failed libssl call: TD_TLS_AGAIN (*want: the poll event it waits for),
 * TD_TLS_CLOSED (clean close_notify, or the peer left without one: why says which) or
 * TD_TLS_ERROR (why: the reason). */
static int tlsFailure(SSL *ssl, int ret, short *want, char *why, size_t n) {
  int e = SSL_get_error(ssl, ret);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
    *want = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
    ERR_clear_error();
    return TD_TLS_AGAIN;
  }
  if (e == SSL_ERROR_ZERO_RETURN) {
    snprintf(why, n, "closed the connection (TLS close_notify)");
    return TD_TLS_CLOSED;
  }
  unsigned long last = ERR_peek_last_error();
  if (e == SSL_ERROR_SYSCALL && !last) { /* reset or closed: lost, not refused by TLS */
    snprintf(why, n, "%s", errno ? strerror(errno) : "closed the connection (no TLS close_notify)");
    return TD_TLS_CLOSED;
  }
#ifdef SSL_R_UNEXPECTED_EOF_WHILE_READING
  if (ERR_GET_REASON(last) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
    snprintf(why, n, "closed the connection without a TLS close_notify (truncated stream)");
    ERR_clear_error();
    return TD_TLS_CLOSED;
  }
#endif
  tlsReason(why, n, "TLS failure");
  return TD_TLS_ERROR;
}

int sockTlsHandshake(SSL *ssl, short *want, char *why, size_t n) {
  int r = SSL_do_handshake(ssl);
  if (r == 1) return TD_TLS_DONE;
  return tlsFailure(ssl, r, want, why, n);
}

ssize_t sockIoRecv(int fd, SSL *ssl, void *buf, size_t len, char *why, size_t n) {
  if (!ssl) {
    ssize_t r = recv(fd, buf, len, MSG_DONTWAIT);
    if (r == 0) snprintf(why, n, "closed the connection");
    if (r < 0) snprintf(why, n, "%s", strerror(errno));
    return r;
  }
  size_t got = 0;
  short want = 0;
  if (SSL_read_ex(ssl, buf, len, &got)) return (ssize_t)got;
  int k = tlsFailure(ssl, 0, &want, why, n);
  errno = k == TD_TLS_AGAIN ? EAGAIN : EPROTO;
  return k == TD_TLS_CLOSED ? 0 : -1;
}

ssize_t sockIoSend(int fd, SSL *ssl, const struct iovec *iov, int niov, char *why, size_t n) {
  if (!ssl) {
    struct msghdr mh = {.msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)niov};
    ssize_t r = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (r < 0) snprintf(why, n, "%s", strerror(errno));
    return r;
  }
  size_t all = 0;
  for (int i = 0; i < niov; i++) all += iov[i].iov_len;
  if (niov > 1 && all <= TD_TLS_RECORD) { /* a small frame: header and payload in one record */
    char one[TD_TLS_RECORD];
    size_t k = 0;
    for (int i = 0; i < niov; i++) {
      memcpy(one + k, iov[i].iov_base, iov[i].iov_len);
      k += iov[i].iov_len;
    }
    struct iovec single = {one, all};
    return sockIoSend(fd, ssl, &single, 1, why, n);
  }
  /* Record after record until the socket is full; a write that must wait is retried later with
   * the same bytes (where the caller resumes). */
  ssize_t total = 0;
  for (int i = 0; i < niov; i++) {
    size_t off = 0;
    while (off < iov[i].iov_len) {
      size_t w = 0;
      short want = 0;
      if (SSL_write_ex(ssl, (const char *)iov[i].iov_base + off, iov[i].iov_len - off, &w)) {
        off += w;
        total += (ssize_t)w;
        continue;
      }
      int k = tlsFailure(ssl, 0, &want, why, n);
      if (total > 0 && k == TD_TLS_AGAIN) return total;
      errno = k == TD_TLS_AGAIN ? EAGAIN : k == TD_TLS_CLOSED ? EPIPE : EPROTO;
      return -1;
    }
  }
  return total;
}

int sockIoPending(SSL *ssl) {
  return ssl && SSL_has_pending(ssl);
}

void sockIoClose(int fd, SSL *ssl, int notify) {
  if (ssl) {
    char sink[4096];
    if (notify && SSL_is_init_finished(ssl)) SSL_shutdown(ssl); /* close_notify, not waited for */
    SSL_free(ssl);
    ERR_clear_error();
    /* Bytes left unread make close() send a reset, which can destroy the alert just sent before
     * the peer reads it: read what is there (bounded) first. */
    for (int i = 0; i < 16 && recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0; i++) continue;
  }
  if (fd >= 0) close(fd);
}
