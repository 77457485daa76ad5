/*
 * events.c - the simulator's event heap (simNet.heap): earliest time first, ties by kind then id
 * (deterministic). A flow's drain event is indexed (simFlow.hpos) so a rate change (rate.c) moves
 * it instead of leaving a stale copy. Used by the network (net.c), the rates and the engine.
 */
#include "sim_int.h"

static int evLess(const simEvent *a, const simEvent *b) {
  if (a->t != b->t) return a->t < b->t;
  if (a->kind != b->kind) return a->kind < b->kind;
  return a->id < b->id;
}

static void heapSet(simNet *n, size_t i, simEvent ev) {
  n->heap[i] = ev;
  if (ev.kind == SIM_EV_DRAINED) n->flows[ev.id].hpos = (uint32_t)i;
}

static void siftUp(simNet *n, size_t i, simEvent ev) {
  while (i > 0 && evLess(&ev, &n->heap[(i - 1) / 2])) {
    heapSet(n, i, n->heap[(i - 1) / 2]);
    i = (i - 1) / 2;
  }
  heapSet(n, i, ev);
}

static void siftDown(simNet *n, size_t i, simEvent ev) {
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n->nheap) break;
    if (c + 1 < n->nheap && evLess(&n->heap[c + 1], &n->heap[c])) c++;
    if (!evLess(&n->heap[c], &ev)) break;
    heapSet(n, i, n->heap[c]);
    i = c;
  }
  heapSet(n, i, ev);
}

tpudistResult_t netPush(simNet *n, double t, uint32_t kind, uint32_t id, uint32_t version) {
  if (tdGrow(&n->heap, &n->capheap, n->nheap + 1, sizeof(simEvent), 4096)) return tpudistNoMemory;
  simEvent ev = {t, kind, id, version};
  siftUp(n, n->nheap++, ev);
  return tpudistSuccess;
}

tpudistResult_t netSetDrain(simNet *n, uint32_t id, double t) {
  uint32_t p = n->flows[id].hpos;
  if (p == SIM_NO_FLOW) return netPush(n, t, SIM_EV_DRAINED, id, 0);
  simEvent ev = n->heap[p];
  double old = ev.t;
  ev.t = t;
  if (t < old)
    siftUp(n, p, ev);
  else
    siftDown(n, p, ev);
  return tpudistSuccess;
}

int netPop(simNet *n, simEvent *ev) {
  if (!n->nheap) return 0;
  *ev = n->heap[0];
  if (ev->kind == SIM_EV_DRAINED) n->flows[ev->id].hpos = SIM_NO_FLOW;
  simEvent last = n->heap[--n->nheap];
  if (n->nheap) siftDown(n, 0, last);
  return 1;
}
