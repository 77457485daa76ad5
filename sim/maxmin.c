/*
 * maxmin.c - the exact max-min fair levels of the whole network by progressive filling, for
 * rate.c when its iteration runs long.
 *
 * Every active flow's rate rises from zero at the same pace. A resource saturates when its
 * capacity left, shared by the flows still rising on it, is smallest among the resources
 * (rem / cnt, kept in a heap); its rising flows stop there, at that share, which becomes its
 * level, and their other resources lose what they take. A flow whose feed cap is reached first
 * stops at its cap. Resources that never saturate keep their capacity as level. Each flow
 * appears on a resource once per entry of its route (shares, quotient classes), as rate.c counts
 * it. Cost: every flow-resource pair once, with a heap update, against rate.c's iteration, which
 * reads the same pairs once per round.
 */
#include <stdlib.h>

#include "sim_int.h"

static double share(const simNet *n, uint32_t r) {
  double rem = n->mm_rem[r];
  return (rem > 0 ? rem : 0) / n->mm_cnt[r];
}

static void heapPlace(simNet *n, uint32_t i, uint32_t r) {
  n->mm_heap[i] = r;
  n->mm_pos[r] = i;
}

/* Moves resource r, whose share changed, to its place (up or down). */
static void heapFix(simNet *n, uint32_t r) {
  uint32_t i = n->mm_pos[r];
  double k = share(n, r);
  while (i > 0 && share(n, n->mm_heap[(i - 1) / 2]) > k) {
    heapPlace(n, i, n->mm_heap[(i - 1) / 2]);
    i = (i - 1) / 2;
  }
  for (;;) {
    uint32_t c = 2 * i + 1;
    if (c >= n->mm_nheap) break;
    if (c + 1 < n->mm_nheap && share(n, n->mm_heap[c + 1]) < share(n, n->mm_heap[c])) c++;
    if (share(n, n->mm_heap[c]) >= k) break;
    heapPlace(n, i, n->mm_heap[c]);
    i = c;
  }
  heapPlace(n, i, r);
}

static void heapRemove(simNet *n, uint32_t r) {
  uint32_t i = n->mm_pos[r], last = n->mm_heap[--n->mm_nheap];
  n->mm_pos[r] = SIM_NO_FLOW;
  if (last == r) return;
  heapPlace(n, i, last);
  heapFix(n, last);
}

/* Flow id stops rising at rate s: its resources lose s per entry and one rising flow. */
static void freeze(simNet *n, uint32_t id, double s) {
  n->mm_frozen[id] = 1;
  const simFlow *f = &n->flows[id];
  const uint32_t *res = SIM_FLOW_RES(f);
  for (uint32_t i = 0; i < f->nres; i++) {
    uint32_t q = res[i];
    n->mm_rem[q] -= s;
    if (--n->mm_cnt[q] == 0) {
      if (n->mm_pos[q] != SIM_NO_FLOW) heapRemove(n, q);
    } else if (n->mm_pos[q] != SIM_NO_FLOW) {
      heapFix(n, q);
    }
  }
}

static int capLess(const void *a, const void *b) {
  const simCapped *x = a, *y = b;
  return (x->cap > y->cap) - (x->cap < y->cap);
}

static tpudistResult_t scratch(simNet *n) {
  if (n->mm_capres < n->nres) {
    free(n->mm_rem);
    free(n->mm_cnt);
    free(n->mm_heap);
    free(n->mm_pos);
    n->mm_rem = malloc(n->nres * sizeof(double));
    n->mm_cnt = malloc(n->nres * sizeof(uint32_t));
    n->mm_heap = malloc(n->nres * sizeof(uint32_t));
    n->mm_pos = malloc(n->nres * sizeof(uint32_t));
    n->mm_capres = n->mm_rem && n->mm_cnt && n->mm_heap && n->mm_pos ? n->nres : 0;
    if (!n->mm_capres) return tpudistNoMemory;
  }
  if (n->mm_capflows < n->nflows) {
    free(n->mm_frozen);
    free(n->mm_capped);
    n->mm_frozen = malloc(n->capflows);
    n->mm_capped = malloc(n->capflows * sizeof(simCapped));
    n->mm_capflows = n->mm_frozen && n->mm_capped ? n->capflows : 0;
    if (!n->mm_capflows) return tpudistNoMemory;
  }
  return tpudistSuccess;
}

tpudistResult_t maxminLevels(simNet *n) {
  TD_CHECK(scratch(n));
  n->mm_nheap = 0;
  for (uint32_t r = 0; r < n->nres; r++) {
    const simRes *x = &n->res[r];
    n->level[r] = x->cap;
    n->mm_rem[r] = x->cap;
    n->mm_cnt[r] = x->n;
    n->mm_pos[r] = SIM_NO_FLOW;
    if (x->n) heapPlace(n, n->mm_nheap++, r);
  }
  for (uint32_t i = n->mm_nheap / 2; i-- > 0;) heapFix(n, n->mm_heap[i]);
  uint32_t ncapped = 0;
  for (uint32_t id = 0; id < n->nflows; id++) {
    n->mm_frozen[id] = 0;
    if (n->hot[id].active && n->flows[id].nres && n->hot[id].cap_rate < 1e300)
      n->mm_capped[ncapped++] = (simCapped){n->hot[id].cap_rate, id};
  }
  qsort(n->mm_capped, ncapped, sizeof(simCapped), capLess);
  uint32_t next_cap = 0;
  while (n->mm_nheap) {
    uint32_t r = n->mm_heap[0];
    double s = share(n, r);
    while (next_cap < ncapped && n->mm_frozen[n->mm_capped[next_cap].id]) next_cap++;
    if (next_cap < ncapped && n->mm_capped[next_cap].cap <= s) { /* a feed cap comes first */
      freeze(n, n->mm_capped[next_cap].id, n->mm_capped[next_cap].cap);
      next_cap++;
      continue;
    }
    n->level[r] = s; /* r saturates: its rising flows stop at s */
    const simRes *x = &n->res[r];
    for (uint32_t j = 0; j < x->n && n->mm_pos[r] != SIM_NO_FLOW; j++)
      if (!n->mm_frozen[x->flows[j]]) freeze(n, x->flows[j], s);
  }
  return tpudistSuccess;
}
