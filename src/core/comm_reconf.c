/*
 * comm_reconf.c - reconfiguration endpoints and tpudistCommReconfigure (tpu_dist.h): a
 * communicator over any list of processes, each named by the handle of its endpoint, with no
 * existing communicator and no store. An endpoint is a listener opened once (on the interface a
 * unique id would use) and a random secret; its handle is "tpu_dist:<secret hex>@<host:port>".
 * The members of one reconfiguration meet at handles[0]'s listener (bootstrapInitReconf) under a
 * key derived from that secret and the uuid; rank = position. An endpoint remembers every uuid it
 * took part in and refuses a second use of one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "bootstrap.h"
#include "comm.h"
#include "rt_config.h"

#define TD_RECONF_PREFIX "tpu_dist:"

struct tpudistReconf {
  int fd;
  tdNetAddr addr;
  uint8_t secret[TD_KEY_BYTES];
  char handle[TPUDIST_RECONF_HANDLE_BYTES];
  int64_t *used; /* the uuids this endpoint took part in */
  size_t nused, capused;
};

static void formatHandle(struct tpudistReconf *ep) {
  static const char hex[] = "0123456789abcdef";
  char secret[2 * TD_KEY_BYTES + 1], addr[64];
  for (int i = 0; i < TD_KEY_BYTES; i++) {
    secret[2 * i] = hex[ep->secret[i] >> 4];
    secret[2 * i + 1] = hex[ep->secret[i] & 15];
  }
  secret[2 * TD_KEY_BYTES] = 0;
  netAddrStr(&ep->addr, addr, sizeof(addr));
  snprintf(ep->handle, sizeof(ep->handle), TD_RECONF_PREFIX "%s@%s", secret, addr);
}

static int hexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

/* Parses handle (position i of the list) into its secret and address. */
static tpudistResult_t parseHandle(const char *h, int i, uint8_t *secret, tdNetAddr *addr) {
  char err[TD_ERRLEN] = "";
  const size_t pl = strlen(TD_RECONF_PREFIX);
  if (!h || strncmp(h, TD_RECONF_PREFIX, pl) != 0 || strlen(h) < pl + 2 * TD_KEY_BYTES + 2 ||
      h[pl + 2 * TD_KEY_BYTES] != '@')
    return commError(NULL, tpudistInvalidArgument,
                     "CommReconfigure: handles[%d] is not a tpu_dist reconfiguration handle "
                     "(\"tpu_dist:<64 hex digits>@<host:port>\")",
                     i);
  for (int k = 0; k < TD_KEY_BYTES; k++) {
    int hi = hexDigit(h[pl + 2 * k]), lo = hexDigit(h[pl + 2 * k + 1]);
    if (hi < 0 || lo < 0)
      return commError(NULL, tpudistInvalidArgument,
                       "CommReconfigure: handles[%d] has a secret that is not lower-case hex", i);
    secret[k] = (uint8_t)(hi << 4 | lo);
  }
  tpudistResult_t r = netParseHostPort(h + pl + 2 * TD_KEY_BYTES + 1, addr, err);
  if (r != tpudistSuccess)
    return commError(NULL, tpudistInvalidArgument, "CommReconfigure: handles[%d]: %s", i, err);
  return tpudistSuccess;
}

TPUDIST_API tpudistResult_t tpudistReconfCreate(tpudistReconf_t *endpoint, char *handle,
                                                size_t len) {
  char err[TD_ERRLEN] = "";
  tdNetAddr local;
  tpudistResult_t r;
  if (!endpoint || !handle || len < TPUDIST_RECONF_HANDLE_BYTES)
    return commError(NULL, tpudistInvalidArgument,
                     "ReconfCreate: endpoint and handle must not be NULL and handle must have room "
                     "for TPUDIST_RECONF_HANDLE_BYTES (%d) bytes (got %zu)",
                     TPUDIST_RECONF_HANDLE_BYTES, len);
  struct tpudistReconf *ep = calloc(1, sizeof(*ep));
  if (!ep) return commError(NULL, tpudistNoMemory, "ReconfCreate: out of memory");
  ep->fd = -1;
  if ((r = authRandom(ep->secret, sizeof(ep->secret), err)) != tpudistSuccess ||
      (r = netLocalAddr(configGet()->socket_ifname, &local, err)) != tpudistSuccess ||
      (r = netListen(&local, &ep->fd, &ep->addr, err)) != tpudistSuccess) {
    free(ep);
    return commError(NULL, r, "ReconfCreate: %s", err);
  }
  formatHandle(ep);
  snprintf(handle, len, "%s", ep->handle);
  *endpoint = ep;
  return tpudistSuccess;
}

TPUDIST_API tpudistResult_t tpudistReconfDestroy(tpudistReconf_t endpoint) {
  if (!endpoint) return tpudistSuccess;
  if (endpoint->fd >= 0) close(endpoint->fd);
  free(endpoint->used);
  free(endpoint);
  return tpudistSuccess;
}

/* Records uuid as taken by ep; tpudistInvalidUsage if it already was. */
static tpudistResult_t takeUuid(struct tpudistReconf *ep, int64_t uuid) {
  for (size_t i = 0; i < ep->nused; i++)
    if (ep->used[i] == uuid)
      return commError(NULL, tpudistInvalidUsage,
                       "CommReconfigure: uuid %lld was already used by this endpoint: every "
                       "reconfiguration needs a fresh uuid",
                       (long long)uuid);
  if (ep->nused == ep->capused) {
    size_t cap = ep->capused ? 2 * ep->capused : 16;
    int64_t *u = realloc(ep->used, cap * sizeof(*u));
    if (!u) return commError(NULL, tpudistNoMemory, "CommReconfigure: out of memory");
    ep->used = u;
    ep->capused = cap;
  }
  ep->used[ep->nused++] = uuid;
  return tpudistSuccess;
}

/* This endpoint's position in handles (exactly one), or an error. */
static tpudistResult_t findSelf(const struct tpudistReconf *ep, const char *const handles[], int n,
                                int *rank) {
  *rank = -1;
  for (int i = 0; i < n; i++) {
    if (!handles[i])
      return commError(NULL, tpudistInvalidArgument, "CommReconfigure: handles[%d] is NULL", i);
    if (strcmp(handles[i], ep->handle) != 0) continue;
    if (*rank >= 0)
      return commError(NULL, tpudistInvalidArgument,
                       "CommReconfigure: this endpoint's handle is at positions %d and %d", *rank,
                       i);
    *rank = i;
  }
  if (*rank < 0)
    return commError(NULL, tpudistInvalidArgument,
                     "CommReconfigure: this endpoint's handle is not among the %d handles", n);
  return tpudistSuccess;
}

TPUDIST_API tpudistResult_t tpudistCommReconfigure(tpudistReconf_t endpoint, int64_t uuid,
                                                   const char *const handles[], int nhandles,
                                                   int timeoutMs, const tpudistConfig_t *config,
                                                   tpudistComm_t *newcomm) {
  tdReconfJoin rj;
  tpudistResult_t r;
  int rank;
  if (!endpoint || !handles || !newcomm || nhandles < 1)
    return commError(NULL, tpudistInvalidArgument,
                     "CommReconfigure: endpoint, handles and newcomm must not be NULL and "
                     "nhandles (%d) must be at least 1",
                     nhandles);
  *newcomm = NULL;
  if ((r = findSelf(endpoint, handles, nhandles, &rank)) != tpudistSuccess) return r;
  for (int i = 0; i < nhandles; i++) {
    uint8_t secret[TD_KEY_BYTES];
    tdNetAddr addr;
    if ((r = parseHandle(handles[i], i, secret, &addr)) != tpudistSuccess) return r;
    if (i == 0) memcpy(rj.secret, secret, sizeof(rj.secret)), rj.root = addr;
    for (int k = 0; k < i; k++)
      if (!strcmp(handles[k], handles[i]))
        return commError(NULL, tpudistInvalidArgument,
                         "CommReconfigure: handles[%d] and handles[%d] are the same process", k, i);
  }
  if ((r = takeUuid(endpoint, uuid)) != tpudistSuccess) return r;
  rj.lfd = rank == 0 ? endpoint->fd : -1;
  rj.uuid = (uint64_t)uuid;
  return commInitReconf(newcomm, nhandles, rank, &rj, timeoutMs, config);
}
