/*
 * host_synth.h - the host model of an hwloc synthetic description (HWLOC_SYNTHETIC syntax) for
 * the host-model unit tests; a description hwloc refuses fails the test at once.
 */
#ifndef TD_TEST_HOST_SYNTH_H_
#define TD_TEST_HOST_SYNTH_H_

#include <stdio.h>

#include "../cu_main.h"
#include "host_detect.h"

static inline tdHost synth(const char *desc) {
  char why[TD_ERRLEN];
  tdHost h;
  tpudistResult_t r = hostDetect(desc, NULL, &h, why);
  if (r != tpudistSuccess) fprintf(stderr, "%s: %s\n", desc, why);
  CU_ASSERT_EQUAL_FATAL(r, tpudistSuccess);
  return h;
}

#endif /* TD_TEST_HOST_SYNTH_H_ */
