/*
 * rt_clock.c - clocks and back-off (rt_clock.h).
 */
#include "rt_clock.h"

#include <sched.h>
#include <time.h>

/* Tells the core this thread is spinning: on a core shared with another hardware thread it gives
 * that thread the pipeline for a few dozen cycles. */
static inline void cpuRelax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
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
  if (idle < spin) {
    cpuRelax();
    return;
  }
  if (idle < spin + 2000000ull) {
    sched_yield();
    return;
  }
  struct timespec ts = {0, idle < 50000000ull ? 20000 : 200000};
  nanosleep(&ts, NULL);
}
