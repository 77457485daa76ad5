/*
 * fork_ranks.h - test helper: forks n ranks that rendezvous through a unique id created before the
 * fork; a rank reports failure through its exit status (CHILD_CHECK: the failing line number).
 */
#ifndef TD_FORK_RANKS_H_
#define TD_FORK_RANKS_H_

#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap.h"
#include "registry.h"

#define CHILD_CHECK(c)                                                     \
  do {                                                                     \
    if (!(c)) {                                                            \
      fprintf(stderr, "rank check failed at line %d: %s\n", __LINE__, #c); \
      return __LINE__ % 250 + 1;                                           \
    }                                                                      \
  } while (0)

/* A child's tdNet over a fresh bootstrap (30 s timeout) with cfg, which must outlive it; NULL
 * (reason on stderr) on failure. */
static inline tdNet *forkNet(int rank, int n, const tpudistUniqueId *id, const tdConfig *cfg) {
  char err[TD_ERRLEN];
  tdBootstrap *bs;
  tdNet *net;
  if (bootstrapInit(id, rank, n, 30000, NULL, &bs, err) != tpudistSuccess) {
    fprintf(stderr, "rank %d bootstrap: %s\n", rank, err);
    return NULL;
  }
  if (transportTestComm(bs, cfg, &net, err) != tpudistSuccess) {
    fprintf(stderr, "rank %d net: %s\n", rank, err);
    bootstrapFree(bs);
    return NULL;
  }
  return net;
}

/* Progresses until every transfer is done; 0 on success. */
static inline int waitAll(tdNet *comm, tdXfer *xs, int nx, int timeout_ms) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    int all = 1, prog;
    transportProgressAll(comm, &prog);
    for (int i = 0; i < nx; i++)
      if (!xs[i].done) all = 0;
    if (all) break;
    clock_gettime(CLOCK_MONOTONIC, &t);
    if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 > timeout_ms) {
      for (int i = 0; i < nx; i++)
        if (!xs[i].done)
          fprintf(stderr, "rank %d: transfer %d with %d (%zu bytes) not done\n", comm->rank, i,
                  xs[i].peer, xs[i].len);
      return -1;
    }
    if (!prog) sched_yield();
  }
  for (int i = 0; i < nx; i++)
    if (xs[i].result != tpudistSuccess) {
      fprintf(stderr, "rank %d: transfer %d with %d failed: %d (%s)\n", comm->rank, i, xs[i].peer,
              xs[i].result, comm->err.msg);
      return -1;
    }
  return 0;
}

/* Progress for ms milliseconds without waiting for anything (lets messages arrive unexpected). */
static inline void progressFor(tdNet *comm, int ms) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do {
    int prog;
    transportProgressAll(comm, &prog);
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
}

typedef int (*tdRankBody)(int rank, int n, const tpudistUniqueId *id, void *arg);
/* Forks n ranks running body; returns the number of ranks that failed (or timed out). */
static inline int runRanks(int n, tdRankBody body, void *arg, int timeout_s) {
  tpudistUniqueId id;
  char err[TD_ERRLEN];
  pid_t pids[8];
  int failed = 0;
  if (bootstrapGetUniqueId(&id, NULL, err) != tpudistSuccess) {
    fprintf(stderr, "unique id: %s\n", err);
    return n;
  }
  fflush(NULL);
  for (int r = 0; r < n; r++) {
    pids[r] = fork();
    if (pids[r] == 0) _exit(body(r, n, &id, arg));
  }
  time_t end = time(NULL) + timeout_s;
  for (int left = n; left > 0;) {
    int st;
    pid_t p = waitpid(-1, &st, WNOHANG);
    if (p > 0) {
      left--;
      if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "rank pid %d failed: status %d\n", (int)p, st);
        failed++;
      }
      continue;
    }
    if (time(NULL) > end) {
      fprintf(stderr, "ranks timed out\n");
      for (int r = 0; r < n; r++) kill(pids[r], SIGKILL);
      while (waitpid(-1, NULL, 0) > 0) {
      }
      return failed + left;
    }
    usleep(2000);
  }
  return failed;
}

#endif /* TD_FORK_RANKS_H_ */
