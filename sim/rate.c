/*
 * rate.c - max-min fair flow rates for the simulator's network (work conserving: bandwidth a
 * flow cannot use because it is held elsewhere goes to the others).
 *
 * Every resource (directed link, chip injection, chip ejection) keeps a water level: the rate an
 * unconstrained flow gets there. Re-levelling a resource water-fills its capacity over its flows,
 * each demanding what it could get elsewhere (the smallest level on its other resources, and the
 * rate of the flow feeding it when it forwards pieces of a receive). A flow's rate is the smallest
 * level on its route (and its feed cap). When a flow joins or leaves, its resources are
 * re-levelled; every flow whose rate changes queues its other resources, until nothing changes by
 * more than a relative 1e-7 (the distributed max-min iteration, in rounds; bounded, it converges in
 * a few rounds on collective traffic). Draining flows are settled (bytes moved at the old rate)
 * before a change.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim_int.h"

#define RATE_TOL 1e-7
#define RATE_MAX_RELAX 200000 /* per instant, at least; or RATE_MAX_ROUNDS per resource */
#define RATE_MAX_ROUNDS 64

static void settle(simFlow *f, double rate, double now) {
  f->remaining -= rate * (now - f->t_last);
  if (f->remaining < 0) f->remaining = 0;
  f->t_last = now;
}

/* Smallest level over f's resources other than skip (1e300 if none); its position in *arg. */
static double minLevel(const simNet *n, const simFlow *f, uint32_t skip, uint32_t *arg) {
  double r = 1e300;
  const uint32_t *res = SIM_FLOW_RES(f);
  *arg = SIM_NO_FLOW;
  for (uint32_t i = 0; i < f->nres; i++)
    if (res[i] != skip && n->level[res[i]] < r) {
      r = n->level[res[i]];
      *arg = res[i];
    }
  return r;
}

/* What flow id could get without resource skip: the smallest other level, and its feed cap.
 * The cached lim serves unless skip is where it was found. */
static double flowLimit(const simNet *n, uint32_t id, uint32_t skip) {
  const simFlowHot *h = &n->hot[id];
  uint32_t a;
  double r = h->lim_arg != skip ? h->lim : minLevel(n, &n->flows[id], skip, &a);
  return TD_MIN(r, h->cap_rate);
}

#define RATE_FULL SIM_NO_FLOW      /* recompute lim over the whole route */
#define RATE_CAP (SIM_NO_FLOW - 1) /* only the feed cap changed */

static tpudistResult_t workPush(simNet *n, uint32_t r) {
  if (n->res[r].queued) return tpudistSuccess;
  if (tdGrow(&n->work, &n->capwork, n->nwork + 1, sizeof(uint32_t), 1024)) return tpudistNoMemory;
  n->res[r].queued = 1;
  n->work[n->nwork++] = r;
  return tpudistSuccess;
}

static int differs(double a, double b) {
  return fabs(a - b) > RATE_TOL * TD_MAX(fabs(a), fabs(b));
}

/* Recomputes flow id's rate; on a change reschedules its drain, queues its resources and passes
 * the new rate down the chain of forwards it feeds. Every call leaves the rate within RATE_TOL
 * of min(lim, cap_rate), so while neither moves the rate stands: most calls (every flow of a
 * re-levelled resource) are answered from hot[] alone. */
static tpudistResult_t applyRate(simNet *n, uint32_t id, double now, uint32_t changed) {
  for (;;) {
    simFlowHot *h = &n->hot[id];
    if (!h->active) return tpudistSuccess;
    if (changed == RATE_FULL) {
      h->lim = minLevel(n, &n->flows[id], SIM_NO_FLOW, &h->lim_arg);
    } else if (changed != RATE_CAP) { /* resource `changed` was re-levelled */
      double l = n->level[changed];
      if (l <= h->lim) {
        h->lim = l;
        h->lim_arg = changed;
      } else if (h->lim_arg == changed) {
        h->lim = minLevel(n, &n->flows[id], SIM_NO_FLOW, &h->lim_arg);
      } else {
        return tpudistSuccess; /* lim and cap_rate as they were */
      }
    }
    double r = TD_MIN(h->lim, h->cap_rate);
    if (!differs(r, h->rate)) return tpudistSuccess;
    simFlow *f = &n->flows[id];
    settle(f, h->rate, now);
    h->rate = r;
    TD_CHECK(netSetDrain(n, id, now + f->remaining / r));
    const uint32_t *res = SIM_FLOW_RES(f);
    for (uint32_t i = 0; i < f->nres; i++) /* only shared resources can re-level */
      if (n->res[res[i]].n > 1) TD_CHECK(workPush(n, res[i]));
    uint32_t c = f->child;
    if (c == SIM_NO_FLOW || !n->hot[c].active) return tpudistSuccess;
    n->hot[c].cap_rate = r * f->split / n->flows[c].split;
    id = c;
    changed = RATE_CAP;
  }
}

/* Water level of capacity cap over demands d[0..m): what each unsatisfied flow gets. Flows
 * demanding less than the level keep their demand; the rest share what remains equally. */
static double waterLevel(double cap, double *d, uint32_t m) {
  double sum = 0;
  for (uint32_t j = 0; j < m; j++) sum += d[j];
  if (sum <= cap) return cap; /* not a bottleneck */
  uint32_t left = m;
  double rest = cap, level = cap / m;
  for (;;) { /* drop the satisfied flows, raise the level, until none drops */
    uint32_t k = 0;
    double taken = 0;
    for (uint32_t j = 0; j < left; j++) {
      if (d[j] < level)
        taken += d[j];
      else
        d[k++] = d[j];
    }
    if (k == left || !k) return k ? level : cap;
    rest -= taken;
    left = k;
    level = rest / left;
  }
}

/* Water-fills resource ri; on a level change re-rates its flows. */
static tpudistResult_t relax(simNet *n, uint32_t ri, double now, double **dem, size_t *capdem) {
  simRes *r = &n->res[ri];
  uint32_t m = r->n;
  if (m > *capdem) {
    double *d = realloc(*dem, sizeof(double) * m * 2);
    if (!d) return tpudistNoMemory;
    *dem = d;
    *capdem = (size_t)m * 2;
  }
  double *d = *dem, level = r->cap; /* one flow or none: the link never holds it back */
  if (m > 1) {
    for (uint32_t j = 0; j < m; j++) d[j] = flowLimit(n, r->flows[j], ri);
    level = waterLevel(r->cap, d, m);
  }
  if (!differs(level, n->level[ri])) return tpudistSuccess;
  n->level[ri] = level;
  for (uint32_t j = 0; j < r->n; j++) TD_CHECK(applyRate(n, r->flows[j], now, ri));
  return tpudistSuccess;
}

/* Sets every level to the exact max-min solution (maxmin.c) and re-rates every active flow from
 * it; the flows that change queue their resources, whose re-levelling then confirms the levels. */
static tpudistResult_t solveExactly(simNet *n, double now) {
  TD_CHECK(maxminLevels(n));
  for (uint32_t id = 0; id < n->nflows; id++)
    if (n->hot[id].active && n->flows[id].nres) TD_CHECK(applyRate(n, id, now, RATE_FULL));
  return tpudistSuccess;
}

/* Re-levels the queued resources in rounds: the work list is first in, first out, so a resource
 * queued again by its neighbours waits until every other queued resource had its turn. (Taking
 * the newest first chased each change across the network before the rest moved, re-levelling
 * every resource ten times or more per instant with many flows per link; in rounds the same
 * instants take 20-80x fewer re-levellings.) Where a change still ripples on for more than
 * n->exact_rounds rounds' worth of reads (every flow-resource pair of the network read that
 * often), the exact solution costs less: progressive filling reads each pair once. */
static tpudistResult_t drain(simNet *n, double now) {
  size_t budget = TD_MAX((size_t)RATE_MAX_RELAX, RATE_MAX_ROUNDS * n->nres);
  uint64_t reads = 0, exact_after = n->exact_rounds * n->incid;
  int exact = 0;
  for (size_t head = 0; head < n->nwork;) {
    uint32_t ri = n->work[head++];
    n->res[ri].queued = 0;
    if (budget) { /* else pathological: leave the rest as they are */
      budget--;
      reads += n->res[ri].n;
      TD_CHECK(relax(n, ri, now, &n->dem, &n->capdem));
    }
    if (!exact && reads > exact_after) {
      exact = 1;
      TD_CHECK(solveExactly(n, now));
    }
    if (head >= 4096 && 2 * head >= n->nwork) { /* drop the done part */
      memmove(n->work, n->work + head, (n->nwork - head) * sizeof(uint32_t));
      n->nwork -= head;
      head = 0;
    }
  }
  n->nwork = 0;
  return tpudistSuccess;
}

/* Joins and leaves only queue their resources; rateFlush re-levels once per instant, after
 * every event of that instant (thousands of flows may start together). A joining flow runs at
 * its route's current levels until then. */
tpudistResult_t rateJoin(simNet *n, uint32_t id, double now) {
  const simFlow *f = &n->flows[id];
  n->joined = 1;
  const uint32_t *res = SIM_FLOW_RES(f);
  for (uint32_t i = 0; i < f->nres; i++) TD_CHECK(workPush(n, res[i]));
  return applyRate(n, id, now, RATE_FULL);
}

tpudistResult_t rateFlush(simNet *n, double now) {
  n->joined = 0;
  return drain(n, now);
}

tpudistResult_t rateLeave(simNet *n, uint32_t id, double now) {
  const simFlow *f = &n->flows[id];
  const uint32_t *res = SIM_FLOW_RES(f);
  for (uint32_t i = 0; i < f->nres; i++) TD_CHECK(workPush(n, res[i]));
  uint32_t c = f->child;
  if (c != SIM_NO_FLOW && n->hot[c].active) { /* its forward runs free now */
    n->hot[c].cap_rate = 1e300;
    TD_CHECK(applyRate(n, c, now, RATE_CAP));
  }
  return tpudistSuccess;
}
