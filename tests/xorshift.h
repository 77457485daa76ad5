/*
 * xorshift.h - the tests' one pseudo-random source: Marsaglia's xorshift64 (13, 7, 17), seeded
 * by the caller so every run draws the same sequence. Not for anything but test data.
 */
#ifndef TD_TEST_XORSHIFT_H_
#define TD_TEST_XORSHIFT_H_

#include <stdint.h>

/* Advances *x (nonzero) and returns its new value. */
static inline uint64_t tdXorshift(uint64_t *x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

#endif /* TD_TEST_XORSHIFT_H_ */
