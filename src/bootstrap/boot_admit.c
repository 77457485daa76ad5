/*
 * boot_admit.c - the root's side of a rendezvous (see boot_priv.h for the messages).
 *
 * The root serves every connection at once from one poll loop: it accepts whatever is pending,
 * keeps at most TPU_DIST_MAX_HANDSHAKES connections in their handshake, or one per rank that is
 * to join if there are more (so that a large job's own ranks are never dropped as a flood:
 * docs/results/design-choices.md, "Rendezvous admission"), gives each
 * TPU_DIST_HANDSHAKE_MS to finish it, and when the table is full drops the oldest connection that
 * has not sent a hello yet (else the oldest). A flood of idle, slow or hostile connections so
 * costs a fixed table and descriptors; a real rank's handshake (one round trip) is not starved,
 * and a rank whose connection was dropped connects again (bootstrap.c). Every refusal is logged
 * (the first few one by one, then one line per thousand).
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "boot_priv.h"
#include "rt_config.h"
#include "rt_log.h"

#define TD_DROP_LOG_FIRST 8

typedef struct {
  int fd;    /* -1: free */
  int stage; /* 0: reading the hello; 1: challenge sent, reading the proof */
  int64_t opened, deadline;
  size_t got;
  tdBootTranscript tr;
  uint8_t proof[TD_MAC_BYTES];
} tdBootConn;

/* Root side of a rendezvous: state of the ranks admitted so far. */
typedef struct {
  tdBootstrap *bs;  /* the new channel (rank 0) */
  const tdKey *key; /* what hellos must prove */
  uint32_t kind;
  uint64_t tag;
  int joined;
  tdBootTranscript *tr; /* per admitted rank: covered by its reply's proof */
  tdBootConn *conns;
  int nconns;
  long dropped;
  int handshake_ms;
} tdAdmit;

static void dropWarn(tdAdmit *ad, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void dropWarn(tdAdmit *ad, const char *fmt, ...) {
  char msg[TD_ERRLEN];
  va_list ap;
  ad->dropped++;
  if (ad->dropped > TD_DROP_LOG_FIRST && ad->dropped % 1000) return;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  if (ad->dropped <= TD_DROP_LOG_FIRST)
    TD_WARN(TD_SUBSYS_BOOT, "bootstrap: %s", msg);
  else
    TD_WARN(TD_SUBSYS_BOOT, "bootstrap: dropped %ld connections so far (last: %s)", ad->dropped,
            msg);
}

static void sendReply(int fd, const tdKey *key, const tdBootTranscript *tr, tpudistResult_t status,
                      int nranks, uint64_t nonce, const char *msg, int64_t deadline,
                      volatile int *abort, char *err) {
  tdReply r;
  char e[TD_ERRLEN];
  memset(&r, 0, sizeof(r));
  r.magic = TD_BOOT_MAGIC;
  r.status = status;
  r.nranks = nranks;
  r.nonce = nonce;
  snprintf(r.msg, sizeof(r.msg), "%s", msg ? msg : "");
  bootReplyMac(key, tr, &r);
  netSendAll(fd, &r, sizeof(r), deadline, abort, "peer", err ? err : e);
}

static void connDrop(tdBootConn *c) {
  if (c->fd >= 0) close(c->fd);
  c->fd = -1;
}

/* Checks an authenticated hello. Returns 1 admitted, 0 dropped (fd closed), or a fatal error
 * (< 0 sets err). */
static int admitHello(tdAdmit *ad, int fd, const tdBootTranscript *tr, char *err) {
  tdBootstrap *bs = ad->bs;
  int rank = -1;
  tdNetAddr addr;
  tdHelloVerdict v = bootstrapHelloCheck(&tr->hello, sizeof(tr->hello), bootVersion(), bs->nranks,
                                         &rank, NULL, NULL, &addr, err);
  if (v == TD_HELLO_FOREIGN) { /* cannot happen after a good proof: be safe */
    close(fd);
    return 0;
  }
  if (v == TD_HELLO_OK && bs->peer_fds[rank] >= 0) {
    tdErr(err, tpudistInvalidUsage, "bootstrap: two processes presented rank %d", rank);
  } else if (v == TD_HELLO_OK) {
    bs->peer_fds[rank] = fd;
    bs->addrs[rank] = addr;
    ad->tr[rank] = *tr;
    ad->joined++;
    return 1;
  }
  sendReply(fd, ad->key, tr, tpudistInvalidUsage, 0, 0, err, netNowMs() + 1000, NULL, NULL);
  close(fd);
  return -1;
}

/* Takes stashed hellos of this split from the parent's stash. */
static tpudistResult_t admitStashed(tdAdmit *ad, tdBootstrap *owner, char *err) {
  tdStash **pp = &owner->stash;
  while (*pp) {
    tdStash *s = *pp;
    if (s->tr.hello.kind == ad->kind && s->tr.hello.tag == ad->tag) {
      *pp = s->next;
      int rc = admitHello(ad, s->fd, &s->tr, err);
      free(s);
      if (rc < 0) return tpudistInvalidUsage;
    } else {
      pp = &s->next;
    }
  }
  return tpudistSuccess;
}

/* A connection proved the key: admit it, or keep it for its own (later) split. */
static tpudistResult_t connAuthenticated(tdAdmit *ad, tdBootConn *c, tdBootstrap *owner,
                                         char *err) {
  int fd = c->fd;
  c->fd = -1;
  if (owner && (c->tr.hello.kind != ad->kind || c->tr.hello.tag != ad->tag)) {
    tdStash *s = malloc(sizeof(*s));
    if (!s) {
      close(fd);
      return tdErr(err, tpudistNoMemory, "bootstrap: out of memory");
    }
    s->fd = fd;
    s->tr = c->tr;
    s->next = owner->stash;
    owner->stash = s;
    return tpudistSuccess;
  }
  return admitHello(ad, fd, &c->tr, err) < 0 ? tpudistInvalidUsage : tpudistSuccess;
}

/* Reads what c has sent and moves its handshake on. Fatal errors only from admission. */
static tpudistResult_t connStep(tdAdmit *ad, tdBootConn *c, tdBootstrap *owner, char *err) {
  char *dst = c->stage == 0 ? (char *)&c->tr.hello : (char *)c->proof;
  size_t want = c->stage == 0 ? sizeof(c->tr.hello) : sizeof(c->proof);
  ssize_t n = recv(c->fd, dst + c->got, want - c->got, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return tpudistSuccess;
  if (n <= 0) {
    dropWarn(ad, "dropped a connection closed during its handshake");
    connDrop(c);
    return tpudistSuccess;
  }
  c->got += (size_t)n;
  if (c->got < want) return tpudistSuccess;
  c->got = 0;
  if (c->stage == 0) {
    char e[TD_ERRLEN];
    if (c->tr.hello.magic != TD_BOOT_MAGIC) {
      dropWarn(ad, "dropped a connection that does not speak the protocol");
      connDrop(c);
      return tpudistSuccess;
    }
    if (ad->kind == TD_HELLO_RECONF &&
        (c->tr.hello.kind != TD_HELLO_RECONF || c->tr.hello.tag != ad->tag)) {
      connDrop(c); /* a member of another reconfiguration, early: it connects again */
      return tpudistSuccess;
    }
    tdChallenge ch = {TD_BOOT_MAGIC, {0}};
    if (authRandom(ch.nonce, sizeof(ch.nonce), e) != tpudistSuccess ||
        send(c->fd, &ch, sizeof(ch), MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof(ch)) {
      dropWarn(ad, "dropped a connection: cannot send the challenge");
      connDrop(c);
      return tpudistSuccess;
    }
    memcpy(c->tr.nonce_r, ch.nonce, sizeof(ch.nonce));
    c->stage = 1;
    return tpudistSuccess;
  }
  uint8_t want_mac[TD_MAC_BYTES];
  authMac(ad->key, TD_BOOT_LABEL_RANK, &c->tr, sizeof(c->tr), NULL, 0, want_mac);
  if (!authEqual(want_mac, c->proof, sizeof(want_mac))) {
    dropWarn(ad, "rejected a peer (claiming rank %d) with a wrong secret", c->tr.hello.rank);
    sendReply(c->fd, ad->key, &c->tr, tpudistInvalidUsage, 0, 0,
              "rejected: wrong secret (unique id of another job, or another TPU_DIST_COMM_SECRET?)",
              netNowMs() + 100, NULL, NULL);
    connDrop(c);
    return tpudistSuccess;
  }
  return connAuthenticated(ad, c, owner, err);
}

/* The slot for a new connection: a free one, else the oldest without a hello, else the oldest. */
static tdBootConn *connSlot(tdAdmit *ad) {
  tdBootConn *victim = NULL;
  for (int i = 0; i < ad->nconns; i++) {
    tdBootConn *c = &ad->conns[i];
    if (c->fd < 0) return c;
    if (!victim || (c->stage == 0 && c->got == 0 && !(victim->stage == 0 && victim->got == 0)) ||
        ((c->stage == 0 && c->got == 0) == (victim->stage == 0 && victim->got == 0) &&
         c->opened < victim->opened))
      victim = c;
  }
  dropWarn(ad, "dropped a connection: %d handshakes in progress at once (a flood?)", ad->nconns);
  connDrop(victim);
  return victim;
}

static tpudistResult_t acceptNew(tdAdmit *ad, int lfd, char *err) {
  for (;;) {
    int fd;
    TD_CHECK(netAccept(lfd, &fd, err));
    if (fd < 0) return tpudistSuccess;
    tdBootConn *c = connSlot(ad);
    memset(c, 0, sizeof(*c));
    c->fd = fd;
    c->opened = netNowMs();
    c->deadline = c->opened + ad->handshake_ms;
  }
}

static void expireConns(tdAdmit *ad, int64_t now) {
  for (int i = 0; i < ad->nconns; i++) {
    tdBootConn *c = &ad->conns[i];
    if (c->fd < 0 || now < c->deadline) continue;
    dropWarn(ad, "dropped a connection that did not finish its handshake in %d ms",
             ad->handshake_ms);
    connDrop(c);
  }
}

/* Serves lfd until every rank has joined; later splits' hellos go to owner's stash. */
static tpudistResult_t admitAll(tdAdmit *ad, int lfd, tdBootstrap *owner, int64_t deadline,
                                struct pollfd *pfd, char *err) {
  tdBootstrap *bs = ad->bs;
  if (owner) TD_CHECK(admitStashed(ad, owner, err));
  while (ad->joined < bs->nranks - 1) {
    if (*bs->abortp || (owner && *owner->abortp))
      return tdErr(err, tpudistAborted, "bootstrap aborted while waiting for peers");
    int64_t now = netNowMs();
    if (now >= deadline)
      return tdErr(err, tpudistTimeout, "bootstrap: only %d of %d ranks joined before the timeout",
                   ad->joined + 1, bs->nranks);
    expireConns(ad, now);
    int n = 0;
    pfd[n++] = (struct pollfd){lfd, POLLIN, 0};
    for (int i = 0; i < ad->nconns; i++)
      pfd[n++] = (struct pollfd){ad->conns[i].fd, POLLIN, 0}; /* fd -1 is ignored */
    if (poll(pfd, (nfds_t)n, 10) <= 0) continue;
    if (pfd[0].revents) TD_CHECK(acceptNew(ad, lfd, err));
    for (int i = 0; i < ad->nconns; i++) {
      tdBootConn *c = &ad->conns[i];
      if (c->fd >= 0 && c->fd == pfd[i + 1].fd && pfd[i + 1].revents)
        TD_CHECK(connStep(ad, c, owner, err));
      if (ad->joined == bs->nranks - 1) break;
    }
  }
  return tpudistSuccess;
}

/* Root: tells every admitted rank the result and, on success, the address table. */
static tpudistResult_t rootFinish(tdAdmit *ad, tpudistResult_t res, const char *msg,
                                  int64_t deadline, char *err) {
  tdBootstrap *bs = ad->bs;
  uint64_t nonce = 0;
  if (res == tpudistSuccess) {
    TD_CHECK(authRandom(&nonce, sizeof(nonce), err));
    bs->hash ^= nonce;
    bs->hash = authId64(&bs->key, "tpu_dist/comm-hash/v1", &bs->hash, sizeof(bs->hash));
  }
  for (int r = 1; r < bs->nranks; r++) {
    if (bs->peer_fds[r] < 0) continue;
    char what[32], e[TD_ERRLEN] = "";
    snprintf(what, sizeof(what), "rank %d", r);
    sendReply(bs->peer_fds[r], ad->key, &ad->tr[r], res, bs->nranks, nonce,
              res == tpudistSuccess ? "" : msg, deadline, bs->abortp, e);
    tpudistResult_t sr = e[0] ? tpudistRemoteError : tpudistSuccess;
    if (sr == tpudistSuccess && res == tpudistSuccess)
      sr = netSendAll(bs->peer_fds[r], bs->addrs, sizeof(tdNetAddr) * (size_t)bs->nranks, deadline,
                      bs->abortp, what, e);
    if (sr != tpudistSuccess && res == tpudistSuccess) return tdErr(err, sr, "%s", e);
  }
  return res;
}

tpudistResult_t bootRootRendezvous(tdBootstrap *bs, int lfd, tdBootstrap *owner, const tdKey *key,
                                   uint32_t kind, uint64_t tag, char *err) {
  const tdConfig *cfg = configGet();
  int64_t deadline = netNowMs() + bs->timeout_ms;
  tdAdmit ad = {bs, key, kind, tag, 0, NULL, NULL, 0, 0, 0};
  ad.nconns = TD_MAX(cfg->max_handshakes, bs->nranks - 1);
  ad.nconns = TD_MAX(ad.nconns, 1);
  ad.handshake_ms = cfg->handshake_ms > 0 ? cfg->handshake_ms : 1;
  ad.tr = calloc((size_t)bs->nranks, sizeof(*ad.tr));
  ad.conns = calloc((size_t)ad.nconns, sizeof(*ad.conns));
  struct pollfd *pfd = calloc((size_t)ad.nconns + 1, sizeof(*pfd));
  tpudistResult_t res = tpudistNoMemory;
  if (!ad.tr || !ad.conns || !pfd) {
    tdErr(err, res, "bootstrap: out of memory");
  } else {
    for (int i = 0; i < ad.nconns; i++) ad.conns[i].fd = -1;
    res = admitAll(&ad, lfd, owner, deadline, pfd, err);
    for (int i = 0; i < ad.nconns; i++) connDrop(&ad.conns[i]);
    if (res != tpudistSuccess)
      rootFinish(&ad, res, err && err[0] ? err : "bootstrap failed on rank 0", deadline, NULL);
    else
      res = rootFinish(&ad, tpudistSuccess, NULL, deadline, err);
  }
  free(ad.tr);
  free(ad.conns);
  free(pfd);
  return res;
}
