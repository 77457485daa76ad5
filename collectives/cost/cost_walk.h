/*
 * cost_walk.h - what the cost model's evaluation (cost_eval.c) and the selection's estimates
 * (select_est.c) share, so that an estimate plays a message as the model does: it holds every link
 * of its route for its time from when that link is free.
 */
#ifndef TD_COST_WALK_H_
#define TD_COST_WALK_H_

#include <stdint.h>

#include "td_base.h"

/* Reserves links[0..n) (indices into busy[], when each is free) for dt each, from when it is free
 * and no earlier than t0. Returns when the last is done; *start: when the last one began. */
static inline double costReserve(double *busy, const uint32_t *links, int n, double t0, double dt,
                                 double *start) {
  double fin = t0, s = t0;
  for (int h = 0; h < n; h++) {
    double b = TD_MAX(t0, busy[links[h]]);
    busy[links[h]] = b + dt;
    fin = TD_MAX(fin, b + dt);
    s = TD_MAX(s, b);
  }
  *start = s;
  return fin;
}

#endif /* TD_COST_WALK_H_ */
