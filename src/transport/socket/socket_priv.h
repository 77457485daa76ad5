/*
 * socket_priv.h - the socket transport's state, shared by socket.c (peers, posts, progress),
 * sock_send.c (splitting messages over a pair's streams), sock_recv.c (frames in: matching, parts,
 * unexpected messages), sock_auth.c (the authentication handshake of every new connection) and
 * sock_tls.c (TLS 1.3 under all of it, TPU_DIST_TLS).
 *
 * A peer pair talks over nstreams TCP connections ("streams", TPU_DIST_SOCKET_NSTREAMS, the smaller
 * of the two ranks' values). A message of at least 2 x TD_SOCK_MIN_PART bytes is split into up to
 * nstreams parts (sockPartRange), part i carried by stream (first + i) mod nstreams; each part is a
 * frame of its own whose header names the part (index, count) and the whole message's length.
 */
#ifndef TD_SOCKET_PRIV_H_
#define TD_SOCKET_PRIV_H_

#include <openssl/ssl.h>
#include <poll.h>
#include <sys/uio.h>

#include "auth.h"
#include "registry.h"
#include "socket.h"

#define TD_SOCK_MAGIC 0x3276636f73647470ull /* "ptdsocv2" */
#define TD_SOCK_LABEL_INIT "tpu_dist/sock/v2/initiator"
#define TD_SOCK_LABEL_RESP "tpu_dist/sock/v2/responder"
#define TD_SOCK_VERDICT_BYTES (1 + TD_MAC_BYTES)
#define TD_SOCK_MIN_PART (64u * 1024) /* smallest part of a split message */
#define TD_SOCK_STAGE (256 * 1024)    /* staging buffer of reducing receives */

/* TLS modes (TPU_DIST_TLS, sock_tls.c; tdPeerInfo.sock_tls) and the outcomes of its steps. */
enum { TD_TLS_OFF, TD_TLS_CERT, TD_TLS_PSK };
enum { TD_TLS_DONE, TD_TLS_AGAIN, TD_TLS_CLOSED, TD_TLS_ERROR };

/* Connection states. SK_TLS: connected, in its TLS handshake (TPU_DIST_TLS); SK_CHALLENGE: hello
 * sent, waiting for the nonce; SK_VERDICT: proof sent, waiting for the verdict and the responder's
 * proof. A peer's state is SK_NONE (never used), SK_READY (in use: its connections are in these
 * states), SK_CLOSED or SK_FAILED. */
enum {
  SK_NONE,
  SK_CONNECTING,
  SK_TLS,
  SK_CHALLENGE,
  SK_VERDICT,
  SK_WAITPEER,
  SK_READY,
  SK_CLOSED,
  SK_FAILED
};
enum { RX_HDR, RX_XFER, RX_UNEXP, RX_DISCARD };

typedef struct {
  uint64_t seq;
  uint32_t stream, ordinal, piece;
  uint32_t part; /* 0: the whole message; else index << 16 | count (2..TD_SOCK_MAX_STREAMS) */
  uint64_t len;  /* bytes of the whole message */
} tdWireHdr;

typedef struct {
  uint64_t magic, hash;
  int32_t from, to;
  uint32_t stream, nstreams; /* which of the pair's connections this is, and the pair's count */
  uint8_t nonce[TD_NONCE_BYTES];
} tdSockHello;

/* A message being received in parts (split), or received before its receive was posted
 * (unexpected, whole or split). Bound (dst set): its parts go straight into dst. Buffered: each
 * part into its own buffer, grown as its bytes arrive. */
typedef struct tdSockMsg {
  int peer;
  tdMsgKey key;
  size_t len;
  int nparts, left; /* parts in all, parts not yet complete */
  uint32_t claimed; /* parts whose frame has begun */
  uint32_t streams; /* streams that carried a part */
  int queued;       /* part 0 has begun: matched (dst) or in the unexpected queue */
  int discard;      /* its receive failed with a length mismatch: the bytes are dropped */
  tdXfer *dst;      /* bound: the receive the bytes go into */
  tdXfer *waiter;   /* buffered: a receive matched while bytes were still arriving */
  struct {
    char *data;
    size_t cap, got;
  } buf[TD_SOCK_MAX_STREAMS];
  struct tdSockMsg *next;  /* the unexpected queue (queued, buffered) */
  struct tdSockMsg *onext; /* the peer's messages with parts still arriving */
} tdSockMsg;

/* One TCP connection of a pair: its handshake, the frame it sends, the frame it receives. */
typedef struct {
  int state, fd;
  SSL *ssl;                            /* TLS session (TPU_DIST_TLS), else NULL */
  short tls_want;                      /* SK_TLS, or a read that must write: the event awaited */
  tdSockHello hello;                   /* connector: the hello this rank sent */
  uint8_t nonce_r[TD_NONCE_BYTES];     /* connector: the responder's challenge */
  uint8_t hs_out[TD_SOCK_HELLO_BYTES]; /* handshake bytes still to send */
  size_t hs_out_len, hs_done;
  uint8_t hs_in[TD_SOCK_VERDICT_BYTES]; /* handshake bytes received */
  size_t hs_got;
  int64_t hs_since; /* first connect: retries after a dropped handshake end at the timeout */
  /* sending: part spart of cur (NULL: nothing for this stream) */
  tdXfer *cur;
  int spart;
  tdWireHdr shdr;
  size_t sent;   /* bytes of header + payload of the current frame sent */
  size_t qbytes; /* payload bytes given to this stream and not yet sent */
  /* receiving: part rpart of a message (rcur: the receive of a whole message; rmsg: a record) */
  int rx, rpart;
  tdWireHdr rhdr;
  size_t rgot; /* header bytes (RX_HDR) or payload bytes received */
  size_t rlen, roff;
  tdXfer *rcur;
  tdSockMsg *rmsg;
  size_t stage_fill; /* bytes of a partial element kept in part (reducing receives) */
  char part[16];
} tdSockConn;

typedef struct {
  int state;
  int nconn; /* streams with this peer (0 until first use) */
  tdSockConn *conn;
  tdXferQueue sendq;   /* sends not yet wholly in the kernel, in post order */
  tdSockMsg *open;     /* split messages with parts still arriving, oldest first */
  uint32_t next_first; /* round robin of the stream that carries part 0 */
  char why[160];       /* reason of SK_CLOSED / SK_FAILED */
} tdSockPeer;

typedef struct tdSockAccept {
  int fd;
  SSL *ssl;         /* TLS (TPU_DIST_TLS): its handshake comes first */
  short tls_want;   /* the poll event the TLS handshake waits for */
  int stage;        /* 0: reading the hello; 1: challenge sent, reading the proof */
  int64_t since_ms; /* accepted at; past TPU_DIST_HANDSHAKE_MS unfinished it is dropped */
  size_t got;
  tdSockHello hello;
  uint8_t nonce_r[TD_NONCE_BYTES];
  uint8_t proof[TD_MAC_BYTES];
  struct tdSockAccept *next;
} tdSockAccept;

typedef struct {
  int lfd;
  tdKey key;
  SSL_CTX *tls;              /* TPU_DIST_TLS=1, else NULL */
  const BIO_METHOD *tls_bio; /* the sessions' socket I/O (sock_tls.c, one per process) */
  int tls_mode;              /* TD_TLS_* */
  tdKey psk;                 /* TD_TLS_PSK: derived from key */
  int handshake_ms, max_handshakes, nstreams;
  long dropped;          /* hostile or broken connections refused (logged sparingly) */
  char tls_dropped[160]; /* why the last connection refused in its TLS handshake was */
  tdSockPeer *peers;
  int *active; /* peers with a connection (or an attempt), in first-use order */
  int nactive;
  int64_t next_listen_ms;
  tdSockAccept *accepting;
  int naccepting;
  tdXferQueue posted;
  tdSockMsg *unexp_head, *unexp_tail;
  tdSockMsg *spare; /* freed split-message records, reused (no allocation per message) */
  char *stage;
  char discard[4096];
  struct pollfd *pfd;
  int *pfd_peer, *pfd_conn;
} tdSockCtx;

/* Byte range of part i of n of a message of len bytes: equal parts on 64-byte boundaries, the
 * last one takes the rest. */
static inline void sockPartRange(size_t len, int n, int i, size_t *off, size_t *plen) {
  size_t base = (len / (size_t)n) & ~(size_t)63;
  *off = base * (size_t)i;
  *plen = i == n - 1 ? len - *off : base;
}

/* socket.c */
tpudistResult_t sockPeerFail(tdNet *comm, tdSockCtx *c, int p, int state, const char *why);
/* The pair's connections (allocated at first use: TPU_DIST_SOCKET_NSTREAMS of both ranks). */
tpudistResult_t sockPeerConns(tdNet *comm, tdSockCtx *c, int p);
tpudistResult_t sockStartConnect(tdNet *comm, tdSockCtx *c, int p, int s);
/* sock_send.c: queues send x on the pair's streams; sends what stream s of p can take. */
void sockSendQueue(tdSockCtx *c, int p, tdXfer *x);
tpudistResult_t sockProgressSend(tdNet *comm, tdSockCtx *c, int p, int s, int *moved);
/* sock_recv.c */
tpudistResult_t sockProgressRecv(tdNet *comm, tdSockCtx *c, int p, int s, int *moved);
/* Matches receive x against the unexpected messages (1: taken, or waiting for its bytes). */
int sockRecvUnexpected(tdNet *comm, tdSockCtx *c, tdXfer *x, int probe);
/* Frees what is received of peer p's messages (they can no longer complete), failing their
 * receives; 1 if a receive was failed. */
int sockRecvDrop(tdSockCtx *c, int p);
void sockMsgFree(tdSockCtx *c, tdSockMsg *m);
/* sock_auth.c: the connector's handshake on events rev, on stream s of p. */
tpudistResult_t sockConnectorStep(tdNet *comm, tdSockCtx *c, int p, int s, short rev, int *moved);
/* The listener's connections in their handshake: sockAcceptPollFill writes one pollfd per
 * connection (list order) and returns how many; after poll, sockAcceptProgress moves on those
 * with events or past their deadline, then accepts what the listener holds. */
int sockAcceptPollFill(tdSockCtx *c, struct pollfd *pfd);
void sockAcceptProgress(tdNet *comm, tdSockCtx *c, const struct pollfd *pfd, int n, int *moved);
/* Starts the connector's handshake on a new connection (the hello goes out when writable). */
tpudistResult_t sockConnectorBegin(tdNet *comm, tdSockCtx *c, int p, int s, char *err);

/* sock_tls.c: TLS on the streams. sockTlsInit makes the context the configuration asks for
 * (none without TPU_DIST_TLS); sockTlsNew a session on fd (client: the connector's side). */
tpudistResult_t sockTlsInit(tdNet *comm, tdSockCtx *c, const tdConfig *cfg, char *err);
void sockTlsFini(tdSockCtx *c);
const char *sockTlsModeName(int mode);
SSL *sockTlsNew(tdSockCtx *c, int fd, int client, char *err);
/* One step of the handshake: TD_TLS_DONE, TD_TLS_AGAIN (*want: the poll event it waits for),
 * TD_TLS_CLOSED or TD_TLS_ERROR (why: the reason). */
int sockTlsHandshake(SSL *ssl, short *want, char *why, size_t n);
/* A connection's reads and writes, in TLS or in clear (ssl NULL), as recv and sendmsg on a
 * non-blocking socket: bytes moved; 0 (recv): the peer closed; -1 with errno EAGAIN (try again on
 * the next poll) or another errno and the reason in why. */
ssize_t sockIoRecv(int fd, SSL *ssl, void *buf, size_t len, char *why, size_t n);
ssize_t sockIoSend(int fd, SSL *ssl, const struct iovec *iov, int niov, char *why, size_t n);
/* 1 if TLS holds received bytes not yet read (poll does not see them). */
int sockIoPending(SSL *ssl);
/* Closes fd and frees its session (notify: send a TLS close_notify first, without waiting). */
void sockIoClose(int fd, SSL *ssl, int notify);

#endif /* TD_SOCKET_PRIV_H_ */
