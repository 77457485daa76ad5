/*
 * socket.h - the checks the socket transport applies to what a peer sends (socket.c, sock_auth.c):
 * the hello and the proof of a new connection and each frame header. Exposed for the fuzz targets
 * (tests/fuzz), with a hook that feeds a byte stream through the full receive path.
 */
#ifndef TD_SOCKET_H_
#define TD_SOCKET_H_

#include "auth.h"
#include "transport.h"

/* Bytes of a hello and of a frame header on the wire; most connections (streams) per peer pair. */
#define TD_SOCK_HELLO_BYTES 64
#define TD_SOCK_HDR_BYTES 32
#define TD_SOCK_MAX_STREAMS 16
/* Longest message a frame may announce: more is a hostile or corrupt peer. Memory for an
 * unexpected message grows with the bytes that really arrive, not with this announcement. */
#define TD_SOCK_MAX_MSG (1ull << 40)

/* 1 if the hello of len bytes is for this communicator (hash) and rank, from a valid other rank
 * (*from), for stream *stream of *nstreams (1..TD_SOCK_MAX_STREAMS); 0 otherwise. Says nothing of
 * the sender's identity: the proof does. */
int sockHelloCheck(const void *msg, size_t len, uint64_t hash, int rank, int nranks, int *from,
                   int *stream, int *nstreams);
/* 1 if proof (TD_MAC_BYTES) is the initiator's HMAC over hello (TD_SOCK_HELLO_BYTES) and the
 * challenge nonce with key (constant-time compare). */
int sockProofCheck(const tdKey *key, const void *hello, const uint8_t *nonce_r,
                   const uint8_t *proof);
/* Decodes a frame header of len bytes into its key, the message's length and the part it carries
 * (index *part of *nparts; 0 of 1 for a whole message); an error (with a reason in err) for a
 * short header, a bad part word or an absurd length. */
tpudistResult_t sockHeaderCheck(const void *msg, size_t len, tdMsgKey *key, uint64_t *plen,
                                int *part, int *nparts, char *err);

struct tdNet;
/* Tests only (tests/fuzz): makes fd the one authenticated connection with peer p of comm (socket
 * transport, one stream), dropping any earlier one and every unexpected message not waited for, so
 * that the bytes written to fd's other end go through the real receive path. */
void sockTestAdopt(struct tdNet *comm, int p, int fd);
/* Tests only: 1 while the connection with p is usable (not closed or failed). */
int sockTestPeerOpen(struct tdNet *comm, int p);

#endif /* TD_SOCKET_H_ */
