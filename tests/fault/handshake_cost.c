/*
 * handshake_cost.c - what the connection handshakes cost, through the public API only (so the same
 * source builds against any libtpu_dist, e.g. a release without authentication, for a side-by-side
 * figure). 2 ranks (RANK, WORLD_SIZE, TPU_DIST_COMM_ID; run with TPU_DIST_TRANSPORTS=socket):
 * ROUNDS times, a CommSplit makes a new communicator (a split rendezvous: one bootstrap
 * handshake) whose socket connection opens lazily at its first message; the first 4-byte exchange
 * (connect + handshake + message) minus the mean of 20 later ones (message only) is the socket
 * connection's setup cost. Prints the medians: split time, first exchange, later exchanges, setup.
 *   handshake_cost [ROUNDS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tpu_dist.h"

static double nowUs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(*v), cmpd);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One 4-byte exchange between ranks 0 and 1; its time in us. */
static double exchange(tpudistComm_t c, int rank, int round) {
  int out = round * 2 + rank, in = -1;
  double t0 = nowUs();
  tpudistGroupStart();
  tpudistSend(&out, 1, tpudistInt32, 1 - rank, c, NULL);
  tpudistRecv(&in, 1, tpudistInt32, 1 - rank, c, NULL);
  if (tpudistGroupEnd() != tpudistSuccess || in != round * 2 + (1 - rank)) {
    fprintf(stderr, "rank %d: exchange failed: %s\n", rank, tpudistGetLastError(c));
    exit(1);
  }
  return nowUs() - t0;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 30, rank;
  tpudistComm_t world;
  if (rounds < 1 || rounds > 1000) return 2;
  if (tpudistCommInitEnv(&world, -1, -1, NULL) != tpudistSuccess) {
    fprintf(stderr, "init: %s\n", tpudistGetLastError(NULL));
    return 1;
  }
  tpudistCommUserRank(world, &rank);
  double *split = calloc((size_t)rounds, sizeof(double)), *first = calloc((size_t)rounds, 8),
         *second = calloc((size_t)rounds, 8), *setup = calloc((size_t)rounds, 8);
  for (int r = 0; r < rounds; r++) {
    tpudistComm_t c;
    double t0 = nowUs();
    if (tpudistCommSplit(world, 0, rank, &c, NULL) != tpudistSuccess) {
      fprintf(stderr, "split: %s\n", tpudistGetLastError(world));
      free(split), free(first), free(second), free(setup);
      return 1;
    }
    split[r] = nowUs() - t0;
    first[r] = exchange(c, rank, r);
    double later = 0; /* steady state: the mean of 20 more (oversubscribed ranks alternate) */
    for (int k = 0; k < 20; k++) later += exchange(c, rank, r + 1 + k) / 20;
    second[r] = later;
    setup[r] = first[r] - second[r];
    tpudistCommDestroy(c);
  }
  if (rank == 0)
    printf(
        "handshake_cost: %d rounds, medians: split %.0f us, first exchange %.0f us, "
        "later %.0f us, connection setup %.0f us\n",
        rounds, median(split, rounds), median(first, rounds), median(second, rounds),
        median(setup, rounds));
  tpudistCommDestroy(world);
  free(split);
  free(first);
  free(second);
  free(setup);
  return 0;
}
