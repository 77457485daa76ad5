/*
 * host_detect.h - the host model read with hwloc, and this process's placement applied. hwloc's
 * own variables HWLOC_SYNTHETIC and HWLOC_XMLFILE replace this machine by a synthetic or recorded
 * one (then nothing is bound: the model is not the machine the process runs on). Built into its
 * own convenience library (libtdhost), linked into libtpu_dist and the programs that need it; the
 * pure decisions are in host.h.
 */
#ifndef TD_HOST_DETECT_H_
#define TD_HOST_DETECT_H_

#include "host.h"

/* Reads a host: from synthetic (an hwloc synthetic description, e.g. "pack:2 numa:2 core:16
 * pu:1"), else from xml (an hwloc XML file), else this machine. */
tpudistResult_t hostDetect(const char *synthetic, const char *xml, tdHost *h, char *err);

/* This process's host, read once per process (thread-safe); later calls return the same object.
 * *bound (if bound is not NULL): the process's processing units when it was read, before this
 * library bound anything (npus flags by index in pus[]). NULL with err when hwloc failed. */
const tdHost *hostThis(const uint8_t **bound, char *err);

/* This process's placement, decided with hostPlace and applied once per process: the first call
 * binds (when the decision says so and the host is this machine); later calls return the first
 * call's decision with *first = 0. tpudistSystemError with err when binding failed. */
tpudistResult_t hostBindOnce(int local_rank, int local_size, int mode, tdHostPlace *out, int *first,
                             char *err);

/* The calling thread's processing units right now (sched_getaffinity) as a list ("0-3,8"). */
char *hostCpusNow(char *buf, size_t len);

#endif /* TD_HOST_DETECT_H_ */
