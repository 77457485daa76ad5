/*
 * rt_clock.c - clocks and back-off (rt_clock.h).
 */
#include "rt_clock.h"

#include <sched.h>
#include <time.h>

uint64_t clockNowNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Millisecond-grained: cheaper than clockNowNs on every pass of a wait. */
uint64_t clockCoarseNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void backoffInit(tdBackoff *b, int spin_us) {
  b->idle_since_ns = 0;
  b->spin_us = spin_us < 0 ? 0 : spin_us;
}

void backoffStep(tdBackoff *b, int progressed) {
  if (progressed) { /* the idle period starts at the next idle pass: no clock read here */
    b->idle_since_ns = 0;
    return;
  }
  uint64_t now = clockNowNs();
  if (!b->idle_since_ns) {
    b->idle_since_ns = now;
    return;
  }
  uint64_t idle = now - b->idle_since_ns, spin = (uint64_t)b->spin_us * 1000;
  if (idle < spin) return;
  if (idle < spin + 2000000ull) {
    sched_yield();
    return;
  }
  struct timespec ts = {0, idle < 50000000ull ? 20000 : 200000};
  nanosleep(&ts, NULL);
}
