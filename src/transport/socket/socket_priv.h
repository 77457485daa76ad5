/*
 * socket_priv.h - the socket transport's state, shared by socket.c (connections, framing, send and
 * receive) and sock_auth.c (the authentication handshake of every new connection).
 */
#ifndef TD_SOCKET_PRIV_H_
#define TD_SOCKET_PRIV_H_

#include <poll.h>

#include "auth.h"
#include "registry.h"
#include "socket.h"

#define TD_SOCK_MAGIC 0x6b636f73647470ull /* "ptdsock" */
#define TD_SOCK_LABEL_INIT "tpu_dist/sock/v1/initiator"
#define TD_SOCK_LABEL_RESP "tpu_dist/sock/v1/responder"
#define TD_SOCK_VERDICT_BYTES (1 + TD_MAC_BYTES)

/* SK_CHALLENGE: hello sent, waiting for the nonce; SK_VERDICT: proof sent, waiting for the
 * verdict and the responder's proof. */
enum {
  SK_NONE,
  SK_CONNECTING,
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
  uint32_t stream, ordinal, piece, pad;
  uint64_t len;
} tdWireHdr;

typedef struct {
  uint64_t magic, hash;
  int32_t from, to;
  uint8_t nonce[TD_NONCE_BYTES];
} tdSockHello;

typedef struct tdSockMsg {
  int peer;
  tdMsgKey key;
  size_t len, got;
  size_t cap;     /* bytes allocated at data: grows as bytes arrive, up to len */
  tdXfer *waiter; /* a receive matched while the bytes were still arriving */
  struct tdSockMsg *next;
  char *data;
} tdSockMsg;

typedef struct {
  int state, fd;
  tdSockHello hello;                   /* connector: the hello this rank sent */
  uint8_t nonce_r[TD_NONCE_BYTES];     /* connector: the responder's challenge */
  uint8_t hs_out[TD_SOCK_HELLO_BYTES]; /* handshake bytes still to send */
  size_t hs_out_len, hs_done;
  uint8_t hs_in[TD_SOCK_VERDICT_BYTES]; /* handshake bytes received */
  size_t hs_got;
  int64_t hs_since; /* first connect: retries after a dropped handshake end at the timeout */
  tdXferQueue sendq;
  tdWireHdr shdr;
  size_t sent; /* bytes of header + payload of sendq.head sent */
  int rx;
  tdWireHdr rhdr;
  size_t rgot; /* header bytes (RX_HDR) or payload bytes received */
  size_t rlen;
  tdXfer *rcur;
  tdSockMsg *rmsg;
  size_t stage_fill; /* bytes of a partial element kept in part (reducing receives) */
  char part[16];
  char why[160]; /* reason of SK_CLOSED / SK_FAILED */
} tdSockPeer;

typedef struct tdSockAccept {
  int fd;
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
  int handshake_ms, max_handshakes;
  long dropped; /* hostile or broken connections refused (logged sparingly) */
  tdSockPeer *peers;
  int *active; /* peers with a connection (or an attempt), in first-use order */
  int nactive;
  int64_t next_listen_ms;
  tdSockAccept *accepting;
  int naccepting;
  tdXferQueue posted;
  tdSockMsg *unexp_head, *unexp_tail;
  char *stage;
  char discard[4096];
  struct pollfd *pfd;
  int *pfd_peer;
} tdSockCtx;

/* socket.c */
tpudistResult_t sockPeerFail(tdNet *comm, tdSockCtx *c, int p, int state, const char *why);
void sockMarkActive(tdSockCtx *c, int p);
tpudistResult_t sockStartConnect(tdNet *comm, tdSockCtx *c, int p);
/* sock_auth.c: the connector's handshake on events rev. */
tpudistResult_t sockConnectorStep(tdNet *comm, tdSockCtx *c, int p, short rev, int *moved);
/* The listener's connections in their handshake: sockAcceptPollFill writes one pollfd per
 * connection (list order) and returns how many; after poll, sockAcceptProgress moves on those
 * with events or past their deadline, then accepts what the listener holds. */
int sockAcceptPollFill(tdSockCtx *c, struct pollfd *pfd);
void sockAcceptProgress(tdNet *comm, tdSockCtx *c, const struct pollfd *pfd, int n, int *moved);
/* Starts the connector's handshake on a new connection (the hello goes out when writable). */
tpudistResult_t sockConnectorBegin(tdNet *comm, tdSockCtx *c, int p, char *err);

#endif /* TD_SOCKET_PRIV_H_ */
