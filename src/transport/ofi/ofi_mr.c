/*
 * ofi_mr.c - the ofi transport's registration cache and staging buffers (ofi_priv.h).
 *
 * RMA sends register their buffer for remote reads. The cache keeps up to TPU_DIST_OFI_MR_CACHE
 * registrations, whole pages around the buffers, and reuses one that covers a later buffer (a
 * training loop sends from the same tensors again and again); when full, the least recently used
 * registration that no transfer uses is closed. A buffer the cache cannot take is registered for
 * its transfer alone. The cache knows addresses, not mappings: memory unmapped and mapped again
 * at the same address keeps its old registration, which a provider that pins pages (verbs) must
 * catch itself (libfabric's own registration monitor does); TPU_DIST_OFI_MR_CACHE=0 registers
 * every message. Reducing receives land in staging buffers owned by the transport, reused and
 * freed at fini.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ofi_priv.h"

static tdOfiMr *mrNew(tdOfiComm *c, void *buf, size_t len, char *err) {
  size_t pg = (size_t)sysconf(_SC_PAGESIZE);
  uintptr_t lo = (uintptr_t)buf & ~(uintptr_t)(pg - 1);
  uintptr_t hi = ((uintptr_t)buf + len + pg - 1) & ~(uintptr_t)(pg - 1);
  tdOfiMr *m = calloc(1, sizeof(*m));
  if (!m) return tdErr(err, tpudistNoMemory, "ofi: out of memory"), NULL;
  m->base = (char *)lo;
  m->len = hi - lo;
  int rc = fi_mr_reg(c->domain, m->base, m->len, FI_REMOTE_READ, 0, c->next_key++, 0, &m->mr, NULL);
  if (rc == 0 && (c->mr_mode & FI_MR_ENDPOINT)) {
    rc = fi_mr_bind(m->mr, &c->ep->fid, 0);
    if (rc == 0) rc = fi_mr_enable(m->mr);
  }
  if (rc != 0) {
    if (m->mr) fi_close(&m->mr->fid);
    free(m);
    tdErr(err, tpudistSystemError, "ofi: registering %zu bytes at %p: %s", len, buf,
          c->lib->strerror(-rc));
    return NULL;
  }
  m->key = fi_mr_key(m->mr);
  return m;
}

static void mrFree(tdOfiMr *m) {
  fi_close(&m->mr->fid);
  free(m);
}

/* A free cache slot, evicting the least recently used idle registration; -1 if all are busy. */
static int mrSlot(tdOfiComm *c) {
  int lru = -1;
  for (int i = 0; i < c->mrc_n; i++) {
    if (!c->mrc[i]) return i;
    if (c->mrc[i]->refs == 0 && (lru < 0 || c->mrc[i]->last_use < c->mrc[lru]->last_use)) lru = i;
  }
  if (lru >= 0) {
    mrFree(c->mrc[lru]);
    c->mrc[lru] = NULL;
  }
  return lru;
}

tdOfiMr *ofiMrGet(tdOfiComm *c, void *buf, size_t len, char *err) {
  char *b = buf;
  for (int i = 0; i < c->mrc_n; i++) {
    tdOfiMr *m = c->mrc[i];
    if (m && b >= m->base && b + len <= m->base + m->len) {
      m->refs++;
      m->last_use = ++c->mr_clock;
      return m;
    }
  }
  tdOfiMr *m = mrNew(c, buf, len, err);
  if (!m) return NULL;
  m->refs = 1;
  m->last_use = ++c->mr_clock;
  int slot = mrSlot(c);
  if (slot >= 0) {
    c->mrc[slot] = m;
    m->cached = 1;
  }
  return m;
}

void ofiMrPut(tdOfiComm *c, tdOfiMr *m) {
  (void)c;
  if (--m->refs == 0 && !m->cached) mrFree(m);
}

tdOfiStage *ofiStageGet(tdOfiComm *c, size_t len) {
  tdOfiStage *best = NULL;
  for (tdOfiStage *s = c->stages; s; s = s->next)
    if (!s->busy && s->cap >= len && (!best || s->cap < best->cap)) best = s;
  if (!best) {
    best = calloc(1, sizeof(*best));
    if (!best) return NULL;
    size_t cap = len < 4096 ? 4096 : len;
    if (posix_memalign((void **)&best->buf, 64, cap) != 0) {
      free(best);
      return NULL;
    }
    best->cap = cap;
    best->next = c->stages;
    c->stages = best;
  }
  best->busy = 1;
  return best;
}

void ofiStagePut(tdOfiStage *s) {
  s->busy = 0;
}

void ofiMrFini(tdOfiComm *c) {
  for (int i = 0; c->mrc && i < c->mrc_n; i++)
    if (c->mrc[i]) mrFree(c->mrc[i]);
  free(c->mrc);
  c->mrc = NULL;
  while (c->stages) {
    tdOfiStage *s = c->stages;
    c->stages = s->next;
    free(s->buf);
    free(s);
  }
}
