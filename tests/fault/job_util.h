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
 *   PROMPT(what, took, contract, margin)
 *                     a promptness contract: prints the time taken against the contract and
 *                     counts a failure when it exceeds contract + margin (milliseconds)
 *
 * Promptness contracts are the only times these jobs check: tpudistCommAbort releases a blocked
 * call within TD_ABORT_MS, and a failure becomes an error within the timeout. Each check allows a
 * margin for scheduling: on a loaded 2-core machine a runnable thread can wait hundreds of
 * milliseconds for a CPU. TD_ABORT_MARGIN_MS is ten times the abort contract, still far below any
 * timeout the jobs set, so a release by the timeout instead of the abort still fails;
 * TD_TIMEOUT_MARGIN_MS covers the detection and teardown after a timeout fires.
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

#define TD_ABORT_MS 100.0
#define TD_ABORT_MARGIN_MS 1000.0
#define TD_TIMEOUT_MARGIN_MS 3500.0

#define PROMPT(what, took, contract, margin)                                                     \
  do {                                                                                           \
    double took_ = (took), contract_ = (contract), margin_ = (margin);                           \
    printf("rank %d: promptness: %s: %.1f ms (contract %.0f ms, margin %.0f ms)\n", gRank, what, \
           took_, contract_, margin_);                                                           \
    if (took_ > contract_ + margin_)                                                             \
      FAIL("promptness: %s took %.1f ms, over its contract of %.0f ms and margin of %.0f ms",    \
           what, took_, contract_, margin_);                                                     \
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
