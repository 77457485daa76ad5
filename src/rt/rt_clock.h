/*
 * rt_clock.h - the runtime's clocks and the one back-off every wait loop uses (runtime base):
 * spin for spin_us after the last progress, then sched_yield for 2 ms, then short naps (20 us for
 * the first 50 ms of idleness, 200 us after), so oversubscribed ranks let their peers run.
 */
#ifndef TD_RT_CLOCK_H_
#define TD_RT_CLOCK_H_

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC. Inline: read several times per operation on the hot path (enqueue, flight
 * record, every idle pass of a wait), where a call into another file costs as much as the read. */
static inline uint64_t clockNowNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC_COARSE (millisecond-grained, cheaper than clockNowNs): progress timestamps,
 * timeouts. */
static inline uint64_t clockCoarseNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

typedef struct {
  uint64_t idle_since_ns;
  int spin_us;
} tdBackoff;

void backoffInit(tdBackoff *b, int spin_us);
/* Called once per pass of a wait loop: resets on progress, else spins, yields or naps. */
void backoffStep(tdBackoff *b, int progressed);

#endif /* TD_RT_CLOCK_H_ */
