/*
 * net.h - small TCP helpers shared by the bootstrap and the socket transport: address parsing and
 * printing (IPv4/IPv6), interface selection (TPU_DIST_SOCKET_IFNAME, getifaddrs), listeners,
 * connects with retry, and reads/writes bounded in time that never raise SIGPIPE and can be
 * interrupted through an abort flag.
 */
#ifndef TD_NET_H_
#define TD_NET_H_

#include <sys/socket.h>

#include "td_base.h"

/* A socket address in a fixed-size, copyable form (fits tdPeerInfo.sock_addr and the unique id). */
typedef struct {
  uint16_t family; /* AF_INET / AF_INET6 */
  uint16_t port;   /* host order */
  uint32_t scope;  /* IPv6 scope id */
  uint8_t addr[16];
} tdNetAddr;

/* Monotonic milliseconds. */
int64_t netNowMs(void);
void netToSockaddr(const tdNetAddr *a, struct sockaddr_storage *ss, socklen_t *len);
void netFromSockaddr(const struct sockaddr *sa, tdNetAddr *a);
/* "1.2.3.4:5" or "[::1]:5" into buf (>= 64 bytes). Returns buf. */
const char *netAddrStr(const tdNetAddr *a, char *buf, size_t size);
/* Splits "host:port" or "[v6]:port" into host (NUL-terminated, < hostsize bytes) and port
 * (1..65535); no lookup. */
tpudistResult_t netSplitHostPort(const char *s, char *host, size_t hostsize, uint16_t *port,
                                 char *err);
/* Parses "host:port", "[v6]:port" (host may be a name) into a. */
tpudistResult_t netParseHostPort(const char *s, tdNetAddr *a, char *err);
/* The local address to listen on: interface ifname (prefix match; "^name" exact, NULL = first up
 * non-loopback IPv4/IPv6 interface, else loopback). Port 0. */
tpudistResult_t netLocalAddr(const char *ifname, tdNetAddr *a, char *err);
/* Non-blocking listener on a (port 0 = ephemeral); *bound gets the real address. */
tpudistResult_t netListen(const tdNetAddr *a, int *fd, tdNetAddr *bound, char *err);
/* Blocking-style connect with retry and backoff until deadline_ms (netNowMs scale) or *abort: a
 * refused or failed attempt is tried again (the listener may not be open yet); it returns at the
 * deadline (plus at most one poll slice of a process that runs), with the last attempt's error.
 * The returned socket is non-blocking. */
tpudistResult_t netConnectRetry(const tdNetAddr *a, int64_t deadline_ms, volatile int *abort,
                                int *fd, char *err);
/* The same for a listener that is open for as long as its owner can answer (an agreement
 * listener): a refusal ends it at once with tpudistRemoteError ("Connection refused"). */
tpudistResult_t netConnectLive(const tdNetAddr *a, int64_t deadline_ms, volatile int *abort,
                               int *fd, char *err);
/* Starts a non-blocking connect; *fd is set; EINPROGRESS is success. */
tpudistResult_t netConnectStart(const tdNetAddr *a, int *fd, char *err);
/* Accepts one pending connection (non-blocking listener); *fd = -1 when none is pending. */
tpudistResult_t netAccept(int lfd, int *fd, char *err);
/* Send / receive exactly len bytes on a non-blocking socket, waiting with poll until deadline_ms
 * or *abort. what names the peer in errors. */
tpudistResult_t netSendAll(int fd, const void *buf, size_t len, int64_t deadline_ms,
                           volatile int *abort, const char *what, char *err);
tpudistResult_t netRecvAll(int fd, void *buf, size_t len, int64_t deadline_ms, volatile int *abort,
                           const char *what, char *err);
void netSetNonBlocking(int fd);
void netSetNoDelay(int fd);

#endif /* TD_NET_H_ */
