/*
 * socket.h - the checks the socket transport applies to what a peer sends (socket.c): the hello of
 * a new connection and each frame header. Exposed for the fuzz targets (tests/fuzz).
 */
#ifndef TD_SOCKET_H_
#define TD_SOCKET_H_

#include "transport.h"

/* Bytes of a hello and of a frame header on the wire. */
#define TD_SOCK_HELLO_BYTES 32
#define TD_SOCK_HDR_BYTES 32
/* Longest message a frame may announce: more is a hostile or corrupt peer. */
#define TD_SOCK_MAX_MSG (1ull << 40)

/* 1 if the hello of len bytes is for this communicator (hash, secret) and rank, from a valid other
 * rank (*from); 0 otherwise. */
int sockHelloCheck(const void *msg, size_t len, uint64_t hash, uint64_t secret, int rank,
                   int nranks, int *from);
/* Decodes a frame header of len bytes into its key and payload length; an error (with a reason in
 * err) for a short header, a bad padding word or an absurd length. */
tpudistResult_t sockHeaderCheck(const void *msg, size_t len, tdMsgKey *key, uint64_t *plen,
                                char *err);

#endif /* TD_SOCKET_H_ */
