/*
 * xfer_rig.h - the exchanges of the transport tests (unit-transport, unit-ofi) between forked ranks
 * over a tdNet: every size of a list to every rank (itself too), receives posted before or after
 * arrival, and reducing receives round a ring. Each posts, progresses, waits for every transfer
 * and checks every byte; a failure returns CHILD_CHECK's line number.
 */
#ifndef TD_TESTS_XFER_RIG_H
#define TD_TESTS_XFER_RIG_H

#include <stdint.h>
#include <stdlib.h>

#include "bootstrap.h"
#include "fork_ranks.h"
#include "registry.h"

/* The byte i of the message from src to dst under tag. */
static inline unsigned char rigPattern(int src, int dst, int tag, size_t i) {
  return (unsigned char)(i * 131u + (i >> 9) * 7u + (unsigned)src * 17u + (unsigned)dst * 29u +
                         (unsigned)tag * 71u);
}

static inline void rigFill(unsigned char *b, size_t len, int src, int dst, int tag) {
  for (size_t i = 0; i < len; i++) b[i] = rigPattern(src, dst, tag, i);
}

/* The index of the first byte of b that is not the pattern, or len. */
static inline size_t rigMismatch(const unsigned char *b, size_t len, int src, int dst, int tag) {
  for (size_t i = 0; i < len; i++)
    if (b[i] != rigPattern(src, dst, tag, i)) return i;
  return len;
}

/* One exchange in progress (rigExchange). */
typedef struct {
  tdNet *comm;
  const size_t *sizes; /* the last only to rank+1 and from rank-1 (memory) */
  int nsizes, round, late;
  tdXfer *xs;
  unsigned char **bufs;
  int nx; /* transfers posted */
} tdRigExchange;

/* Posts a transfer of every size with every rank (sends or receives), in key order or in
 * reverse. */
static inline int rigPost(tdRigExchange *e, int sends, int reverse) {
  int n = e->comm->nranks, me = e->comm->rank, ns = e->nsizes;
  for (int k = 0; k < n * ns; k++) {
    int kk = reverse ? n * ns - 1 - k : k;
    int peer = kk / ns, s = kk % ns;
    if (s == ns - 1 && peer != (sends ? (me + 1) % n : (me + n - 1) % n)) continue;
    size_t len = e->sizes[s];
    unsigned char *buf = malloc(len + 1);
    CHILD_CHECK(buf);
    if (sends) rigFill(buf, len, me, peer, s + e->round);
    tdXfer *x = &e->xs[e->nx];
    *x = (tdXfer){.peer = peer,
                  .key = {7 + (uint64_t)e->round, 1, (uint32_t)s, (uint32_t)e->late},
                  .buf = buf,
                  .len = len};
    e->bufs[e->nx++] = buf;
    CHILD_CHECK((sends ? transportPostSend(e->comm, x) : transportPostRecv(e->comm, x)) ==
                tpudistSuccess);
    x->tp_priv[2] = (void *)(intptr_t)sends;
  }
  return 0;
}

/* Every rank sends every size (nsizes of sizes) to every rank and checks what it receives. late:
 * the receives are posted after the sends had time to arrive, in reverse order; otherwise before
 * any send (a bootstrap barrier between). round: keys and contents differ from other rounds'. */
static inline int rigExchange(tdNet *comm, const size_t *sizes, int nsizes, int round, int late) {
  int n = comm->nranks, me = comm->rank;
  char err[TD_ERRLEN];
  tdRigExchange e = {comm,
                     sizes,
                     nsizes,
                     round,
                     late,
                     calloc((size_t)(2 * n * nsizes), sizeof(tdXfer)),
                     calloc((size_t)(2 * n * nsizes), sizeof(char *)),
                     0};
  CHILD_CHECK(e.xs && e.bufs);
  CHILD_CHECK(rigPost(&e, late, 0) == 0);
  if (late)
    progressFor(comm, 150);
  else
    CHILD_CHECK(bootstrapBarrier(comm->bootstrap, err) == tpudistSuccess);
  CHILD_CHECK(rigPost(&e, !late, late) == 0);
  CHILD_CHECK(waitAll(comm, e.xs, e.nx, 60000) == 0);
  for (int i = 0; i < e.nx; i++) {
    tdXfer *x = &e.xs[i];
    if (x->tp_priv[2]) continue; /* a send */
    size_t bad = rigMismatch(e.bufs[i], x->len, x->peer, me, (int)x->key.ordinal + round);
    if (bad != x->len)
      fprintf(stderr, "rank %d: from %d, %zu bytes: byte %zu wrong\n", me, x->peer, x->len, bad);
    CHILD_CHECK(bad == x->len);
    CHILD_CHECK(x->source == x->peer);
  }
  for (int i = 0; i < e.nx; i++) free(e.bufs[i]);
  free(e.bufs);
  free(e.xs);
  return 0;
}

/* Reducing receives (float sum): rank r sends to r+1, which adds its own floats; rounds rounds of
 * counts[round % ncounts] elements, every other one with the receive posted after arrival. The
 * buffers are the same allocations every round, with new contents (a transport that caches a
 * registration must see them). */
static inline int rigReduceRing(tdNet *comm, const size_t *counts, int ncounts, int rounds) {
  int n = comm->nranks, me = comm->rank, to = (me + 1) % n, from = (me + n - 1) % n;
  size_t most = 0;
  for (int c = 0; c < ncounts; c++) most = counts[c] > most ? counts[c] : most;
  float *snd = malloc(most * 4), *mine = malloc(most * 4), *out = malloc(most * 4);
  CHILD_CHECK(snd && mine && out);
  for (int c = 0; c < rounds; c++) {
    size_t cnt = counts[c % ncounts];
    for (size_t i = 0; i < cnt; i++) {
      snd[i] = (float)(me + c) + (float)(i % 1000) * 0.5f;
      mine[i] = (float)(me * 3) + (float)(i % 777) * 0.25f;
    }
    tdXfer x[2] = {{.peer = to, .key = {9, 2, (uint32_t)c, 0}, .buf = snd, .len = cnt * 4},
                   {.peer = from,
                    .key = {9, 2, (uint32_t)c, 0},
                    .buf = out,
                    .len = cnt * 4,
                    .reduce_src = mine,
                    .dtype = tpudistFloat32,
                    .op = tpudistSum}};
    if (c % 2) { /* the receive posted after arrival */
      CHILD_CHECK(transportPostSend(comm, &x[0]) == tpudistSuccess);
      progressFor(comm, 50);
      CHILD_CHECK(transportPostRecv(comm, &x[1]) == tpudistSuccess);
    } else {
      CHILD_CHECK(transportPostRecv(comm, &x[1]) == tpudistSuccess);
      CHILD_CHECK(transportPostSend(comm, &x[0]) == tpudistSuccess);
    }
    CHILD_CHECK(waitAll(comm, x, 2, 60000) == 0);
    for (size_t i = 0; i < cnt; i++) {
      float want = mine[i] + ((float)(from + c) + (float)(i % 1000) * 0.5f);
      if (out[i] != want) fprintf(stderr, "rank %d: elem %zu: %g != %g\n", me, i, out[i], want);
      CHILD_CHECK(out[i] == want);
    }
  }
  free(snd);
  free(mine);
  free(out);
  return 0;
}

#endif
