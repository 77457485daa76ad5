/*
 * memcpy_bw.c - single-thread memcpy bandwidth per size (warm buffers, median of runs), the
 * ceiling bench/compare quotes beside each collective. Usage: memcpy_bw MIN MAX [REPS]
 * Prints "bytes GB/s" per power-of-two size.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s MIN_BYTES MAX_BYTES [REPS]\n", argv[0]);
    return 2;
  }
  size_t lo = strtoull(argv[1], NULL, 0), hi = strtoull(argv[2], NULL, 0);
  int reps = argc > 3 ? atoi(argv[3]) : 9;
  if (lo == 0 || hi < lo || reps < 1 || reps > 1000) return 2;
  char *a = malloc(hi), *b = malloc(hi);
  if (!a || !b) return 1;
  memset(a, 1, hi);
  memset(b, 2, hi);
  double *t = malloc(sizeof(double) * reps);
  for (size_t n = lo; n <= hi; n *= 2) {
    int inner = (int)(64 * 1024 * 1024 / n) + 1;
    for (int r = 0; r < reps; r++) {
      double t0 = now();
      for (int i = 0; i < inner; i++) {
        memcpy(b, a, n);
        __asm__ volatile("" ::"r"(b) : "memory");
      }
      t[r] = (now() - t0) / inner;
    }
    qsort(t, reps, sizeof(double), cmp);
    printf("%zu %.3f\n", n, n / t[reps / 2] / 1e9);
  }
  free(a);
  free(b);
  free(t);
  return 0;
}
