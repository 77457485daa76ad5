/*
 * hand_scheds.h - test helper: n empty send/recv schedules written by hand (rank r of n, one
 * INPUT block, n OUTPUT blocks: one per source rank), for the cost model's tests.
 */
#ifndef TD_HAND_SCHEDS_H_
#define TD_HAND_SCHEDS_H_

#include <string.h>

#include "sched_ir.h"

static inline void initScheds(tdSched *s, int n) {
  for (int r = 0; r < n; r++) {
    tdCollArgs a;
    memset(&a, 0, sizeof(a));
    a.coll = TD_COLL_SENDRECV, a.nranks = n, a.rank = r;
    schedInit(&s[r], &a, "hand");
    schedSetLayout(&s[r], TD_BUF_INPUT, 1, 1);
    schedSetLayout(&s[r], TD_BUF_OUTPUT, (uint32_t)n, 1);
  }
}

#endif
