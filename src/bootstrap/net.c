/*
 * net.c - TCP helpers for the bootstrap and the socket transport (see net.h). Every socket is
 * non-blocking; waits use poll() in slices of at most 20 ms so an abort flag is seen promptly;
 * every send uses MSG_NOSIGNAL.
 */
#include "net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int64_t netNowMs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void netToSockaddr(const tdNetAddr *a, struct sockaddr_storage *ss, socklen_t *len) {
  memset(ss, 0, sizeof(*ss));
  if (a->family == AF_INET6) {
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(a->port);
    s6->sin6_scope_id = a->scope;
    memcpy(&s6->sin6_addr, a->addr, 16);
    *len = sizeof(*s6);
  } else {
    struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
    s4->sin_family = AF_INET;
    s4->sin_port = htons(a->port);
    memcpy(&s4->sin_addr, a->addr, 4);
    *len = sizeof(*s4);
  }
}

void netFromSockaddr(const struct sockaddr *sa, tdNetAddr *a) {
  memset(a, 0, sizeof(*a));
  if (sa->sa_family == AF_INET6) {
    const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
    a->family = AF_INET6;
    a->port = ntohs(s6->sin6_port);
    a->scope = s6->sin6_scope_id;
    memcpy(a->addr, &s6->sin6_addr, 16);
  } else {
    const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
    a->family = AF_INET;
    a->port = ntohs(s4->sin_port);
    memcpy(a->addr, &s4->sin_addr, 4);
  }
}

const char *netAddrStr(const tdNetAddr *a, char *buf, size_t size) {
  char host[INET6_ADDRSTRLEN] = "?";
  inet_ntop(a->family == AF_INET6 ? AF_INET6 : AF_INET, a->addr, host, sizeof(host));
  if (a->family == AF_INET6)
    snprintf(buf, size, "[%s]:%u", host, a->port);
  else
    snprintf(buf, size, "%s:%u", host, a->port);
  return buf;
}

tpudistResult_t netSplitHostPort(const char *s, char *host, size_t hostsize, uint16_t *port,
                                 char *err) {
  const char *colon, *hs = s;
  size_t hl;
  if (!s || !*s) return tdErr(err, tpudistInvalidArgument, "empty host:port");
  if (s[0] == '[') {
    const char *rb = strchr(s, ']');
    if (!rb || rb[1] != ':') return tdErr(err, tpudistInvalidArgument, "bad address '%s'", s);
    hs = s + 1;
    hl = (size_t)(rb - hs);
    colon = rb + 1;
  } else {
    colon = strrchr(s, ':');
    if (!colon) return tdErr(err, tpudistInvalidArgument, "'%s' is not host:port", s);
    hl = (size_t)(colon - s);
  }
  if (hl == 0 || hl >= hostsize) return tdErr(err, tpudistInvalidArgument, "bad host in '%s'", s);
  char *end;
  errno = 0;
  long p = strtol(colon + 1, &end, 10);
  if (end == colon + 1 || *end || errno == ERANGE || p <= 0 || p > 65535)
    return tdErr(err, tpudistInvalidArgument, "bad port in '%s'", s);
  memcpy(host, hs, hl);
  host[hl] = 0;
  *port = (uint16_t)p;
  return tpudistSuccess;
}

tpudistResult_t netParseHostPort(const char *s, tdNetAddr *a, char *err) {
  char host[256];
  uint16_t port;
  TD_CHECK(netSplitHostPort(s, host, sizeof(host), &port, err));
  struct addrinfo hints = {0}, *res = NULL;
  hints.ai_socktype = SOCK_STREAM;
  int rc = getaddrinfo(host, NULL, &hints, &res);
  if (rc != 0 || !res)
    return tdErr(err, tpudistInvalidArgument, "cannot resolve '%s': %s", host, gai_strerror(rc));
  netFromSockaddr(res->ai_addr, a);
  a->port = port;
  freeaddrinfo(res);
  return tpudistSuccess;
}

static int ifMatches(const char *name, const char *want) {
  if (want[0] == '^') return strcmp(name, want + 1) == 0;
  return strncmp(name, want, strlen(want)) == 0;
}

tpudistResult_t netLocalAddr(const char *ifname, tdNetAddr *a, char *err) {
  struct ifaddrs *ifs = NULL;
  if (getifaddrs(&ifs) != 0)
    return tdErr(err, tpudistSystemError, "getifaddrs: %s", strerror(errno));
  int found = 0;
  for (int pass = 0; pass < 2 && !found; pass++) {
    for (struct ifaddrs *i = ifs; i && !found; i = i->ifa_next) {
      if (!i->ifa_addr || !(i->ifa_flags & IFF_UP)) continue;
      int fam = i->ifa_addr->sa_family;
      if (fam != AF_INET && fam != AF_INET6) continue;
      if (ifname && *ifname) {
        if (!ifMatches(i->ifa_name, ifname)) continue;
      } else if (pass == 0 && (i->ifa_flags & IFF_LOOPBACK)) {
        continue; /* first pass: prefer a real interface */
      }
      if (fam == AF_INET6 &&
          IN6_IS_ADDR_LINKLOCAL(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr))
        continue;
      netFromSockaddr(i->ifa_addr, a);
      a->port = 0;
      found = 1;
    }
    if (ifname && *ifname) break;
  }
  freeifaddrs(ifs);
  if (!found)
    return tdErr(err, tpudistSystemError, "no usable network interface%s%s%s",
                 ifname ? " matching TPU_DIST_SOCKET_IFNAME='" : "", ifname ? ifname : "",
                 ifname ? "'" : "");
  return tpudistSuccess;
}

void netSetNonBlocking(int fd) {
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

void netSetNoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

tpudistResult_t netListen(const tdNetAddr *a, int *fd, tdNetAddr *bound, char *err) {
  struct sockaddr_storage ss;
  socklen_t len;
  char buf[64];
  netToSockaddr(a, &ss, &len);
  int s = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s < 0) return tdErr(err, tpudistSystemError, "socket: %s", strerror(errno));
  int one = 1;
  if (a->port) setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(s, (struct sockaddr *)&ss, len) != 0 || listen(s, 1024) != 0) {
    int e = errno;
    close(s);
    return tdErr(err, tpudistSystemError, "cannot listen on %s: %s", netAddrStr(a, buf, 64),
                 strerror(e));
  }
  len = sizeof(ss);
  getsockname(s, (struct sockaddr *)&ss, &len);
  netFromSockaddr((struct sockaddr *)&ss, bound);
  *fd = s;
  return tpudistSuccess;
}

tpudistResult_t netConnectStart(const tdNetAddr *a, int *fd, char *err) {
  struct sockaddr_storage ss;
  socklen_t len;
  char buf[64];
  netToSockaddr(a, &ss, &len);
  int s = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s < 0) return tdErr(err, tpudistSystemError, "socket: %s", strerror(errno));
  netSetNoDelay(s);
  if (connect(s, (struct sockaddr *)&ss, len) != 0 && errno != EINPROGRESS) {
    int e = errno;
    close(s);
    return tdErr(err, tpudistRemoteError, "connect to %s: %s", netAddrStr(a, buf, 64), strerror(e));
  }
  *fd = s;
  return tpudistSuccess;
}

/* Waits for events on fd until deadline or abort. Returns 1 ready, 0 timeout, -1 aborted. Looks
 * at least once, also past the deadline: a process that was not scheduled until after it takes
 * what arrived meanwhile (an answer, a refusal) instead of reporting a timeout. */
static int waitFd(int fd, short events, int64_t deadline_ms, volatile int *abort) {
  for (;;) {
    if (abort && *abort) return -1;
    int64_t left = deadline_ms - netNowMs();
    struct pollfd p = {fd, events, 0};
    int rc = poll(&p, 1, (int)TD_MAX(TD_MIN(left, 20), 0));
    if (rc > 0) return 1;
    if (rc < 0 && errno != EINTR) return 1; /* let the caller's syscall report it */
    if (left <= 0) return 0;
  }
}

/* Naps until the clock reaches until_ms or *abort, in naps of at most 10 ms. Timed by the clock,
 * never by counting naps: on a loaded machine each nap lasts longer than it asks for (a starved
 * process runs a 10 ms nap in 40 ms or 2 s), and a counted back-off then ran seconds past the
 * deadline it was meant to respect. */
static void napUntil(int64_t until_ms, volatile int *abort) {
  for (int64_t left; (left = until_ms - netNowMs()) > 0 && !(abort && *abort);) {
    struct timespec ts = {0, (long)TD_MIN(left, 10) * 1000000L};
    nanosleep(&ts, NULL);
  }
}

/* Waits for the connect started on s: 1 connected, 0 failed (s closed, last says why, *soerr its
 * errno, 0 for no answer), -1 aborted (s closed). */
static int connectWait(int s, int64_t deadline_ms, volatile int *abort, char *last, size_t lastlen,
                       int *soerr) {
  int w = waitFd(s, POLLOUT, deadline_ms, abort);
  socklen_t sl = sizeof(*soerr);
  *soerr = 0;
  if (w > 0) getsockopt(s, SOL_SOCKET, SO_ERROR, soerr, &sl);
  if (w > 0 && *soerr == 0) return 1;
  close(s);
  if (w < 0) return -1;
  if (w == 0)
    snprintf(last, lastlen, "no answer before the deadline");
  else
    snprintf(last, lastlen, "%s", strerror(*soerr));
  return 0;
}

/* Connects, retrying with back-off until deadline_ms; refusal_final: a refusal ends it at once. */
static tpudistResult_t connectLoop(const tdNetAddr *a, int64_t deadline_ms, volatile int *abort,
                                   int refusal_final, int *fd, char *err) {
  char buf[64], last[TD_ERRLEN] = "no attempt";
  int backoff = 5;
  for (int tried = 0;; tried = 1) {
    if (tried && netNowMs() >= deadline_ms)
      return tdErr(err, tpudistTimeout, "cannot connect to %s before the timeout (last error: %s)",
                   netAddrStr(a, buf, 64), last);
    int s = -1, rc = -1, soerr = 0;
    if (!(abort && *abort)) {
      TD_CHECK(netConnectStart(a, &s, err));
      rc = connectWait(s, deadline_ms, abort, last, sizeof(last), &soerr);
    }
    if (rc > 0) {
      *fd = s;
      return tpudistSuccess;
    }
    if (rc < 0 || (abort && *abort))
      return tdErr(err, tpudistAborted, "aborted while connecting to %s", netAddrStr(a, buf, 64));
    if (refusal_final && soerr == ECONNREFUSED)
      return tdErr(err, tpudistRemoteError, "connect to %s: %s", netAddrStr(a, buf, 64), last);
    napUntil(TD_MIN(netNowMs() + backoff, deadline_ms), abort);
    backoff = TD_MIN(backoff * 2, 500);
  }
}

tpudistResult_t netConnectRetry(const tdNetAddr *a, int64_t deadline_ms, volatile int *abort,
                                int *fd, char *err) {
  return connectLoop(a, deadline_ms, abort, 0, fd, err);
}

tpudistResult_t netConnectLive(const tdNetAddr *a, int64_t deadline_ms, volatile int *abort,
                               int *fd, char *err) {
  return connectLoop(a, deadline_ms, abort, 1, fd, err);
}

tpudistResult_t netAccept(int lfd, int *fd, char *err) {
  int s = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (s < 0) {
    *fd = -1;
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED)
      return tpudistSuccess;
    return tdErr(err, tpudistSystemError, "accept: %s", strerror(errno));
  }
  netSetNoDelay(s);
  *fd = s;
  return tpudistSuccess;
}

tpudistResult_t netSendAll(int fd, const void *buf, size_t len, int64_t deadline_ms,
                           volatile int *abort, const char *what, char *err) {
  const char *p = buf;
  while (len > 0) {
    ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= (size_t)n;
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      return tdErr(err, tpudistRemoteError, "send to %s: %s", what, strerror(errno));
    int w = waitFd(fd, POLLOUT, deadline_ms, abort);
    if (w < 0) return tdErr(err, tpudistAborted, "aborted while sending to %s", what);
    if (w == 0) return tdErr(err, tpudistTimeout, "timeout sending to %s", what);
  }
  return tpudistSuccess;
}

tpudistResult_t netRecvAll(int fd, void *buf, size_t len, int64_t deadline_ms, volatile int *abort,
                           const char *what, char *err) {
  char *p = buf;
  while (len > 0) {
    ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= (size_t)n;
      continue;
    }
    if (n == 0) return tdErr(err, tpudistRemoteError, "%s closed the connection", what);
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      return tdErr(err, tpudistRemoteError, "receive from %s: %s", what, strerror(errno));
    int w = waitFd(fd, POLLIN, deadline_ms, abort);
    if (w < 0) return tdErr(err, tpudistAborted, "aborted while waiting for %s", what);
    if (w == 0) return tdErr(err, tpudistTimeout, "timeout waiting for %s", what);
  }
  return tpudistSuccess;
}
