/*
 * job_util.h - the helpers the multi-process test jobs share (the tests/fault jobs and
 * tests/cluster/cluster_job.c). Header only: everything is static (inline), so each job keeps its
 * own copy and nothing is linked.
 *
 *   gRank, gFail      the rank FAIL prints (-1 until the job sets it) and the failures counted
 *   FAIL(fmt, ...)    prints "rank R: FAIL: <message>" on stderr and counts one failure
 *   nowMs()           CLOCK_MONOTONIC in milliseconds
 *   sleepMs(ms)       sleeps ms milliseconds (nanosleep)
 *   envInt, envLong   an environment variable as a number; dflt when unset or empty
 *   killer(&ms)       thread body: sleeps *(int *)arg ms, then SIGKILLs this process
 */
#ifndef TD_TESTS_JOB_UTIL_H
#define TD_TESTS_JOB_UTIL_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int gRank __attribute__((unused)) = -1, gFail __attribute__((unused));

#define FAIL(...)                              \
  do {                                         \
    fprintf(stderr, "rank %d: FAIL: ", gRank); \
    fprintf(stderr, __VA_ARGS__);              \
    fprintf(stderr, "\n");                     \
    gFail++;                                   \
  } while (0)

static inline double nowMs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static inline void sleepMs(int ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static inline int envInt(const char *name, int dflt) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : dflt;
}

static inline long envLong(const char *name, long dflt) {
  const char *v = getenv(name);
  return v && *v ? atol(v) : dflt;
}

static inline void *killer(void *arg) {
  sleepMs(*(int *)arg);
  kill(getpid(), SIGKILL);
  return NULL;
}

#endif
