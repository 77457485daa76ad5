/*
 * kernel_bench.c - throughput of the reduction kernels next to memcpy on the same buffers:
 * float32 sum and bfloat16 sum (plus float16 sum and float32 max) at 64 MiB per operand, out of
 * place (dst, a, b distinct) and in place (dst == a). Buffers are touched before timing; each
 * figure is the best of several runs.
 *
 *   bench/kernel_bench [MiB] [runs]
 *
 * GB/s is operand bytes per second (one input's size / time); "traffic" counts every byte read
 * or written (reduce: 2 in + 1 out; memcpy: 1 in + 1 out).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void report(const char *what, size_t bytes, double secs, int streams) {
  printf("%-28s %8.2f GB/s   traffic %8.2f GB/s   %8.3f ms\n", what, (double)bytes / secs / 1e9,
         (double)bytes * streams / secs / 1e9, secs * 1e3);
}

static void benchReduce(const char *what, char *d, char *a, char *b, size_t bytes,
                        tpudistDataType_t t, tpudistRedOp_t op, int runs) {
  size_t n = bytes / kernelDtypeSize(t);
  double best = 1e30;
  for (int r = 0; r < runs; r++) {
    double t0 = now();
    kernelReduce(d, a, b, n, t, op);
    double dt = now() - t0;
    if (dt < best) best = dt;
  }
  report(what, bytes, best, 3);
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 64;
  int runs = argc > 2 ? atoi(argv[2]) : 8;
  size_t bytes = mib << 20;
  if (mib == 0 || runs < 1) {
    fprintf(stderr, "usage: %s [MiB > 0] [runs > 0]\n", argv[0]);
    return 2;
  }
  char *a = aligned_alloc(64, bytes), *b = aligned_alloc(64, bytes), *d = aligned_alloc(64, bytes);
  if (!a || !b || !d) {
    fprintf(stderr, "kernel_bench: cannot allocate 3 x %zu MiB\n", mib);
    return 1;
  }
  /* values that stay finite and normal under repeated sums: small floats, bf16 near 1 */
  float *fa = (float *)a, *fb = (float *)b;
  for (size_t i = 0; i < bytes / 4; i++) {
    fa[i] = (float)(i % 1000) * 0.001f;
    fb[i] = 1.0f;
  }
  memset(d, 0, bytes);
  printf("kernel_bench: %zu MiB per operand, best of %d\n", mib, runs);
  double best = 1e30;
  for (int r = 0; r < runs; r++) {
    double t0 = now();
    memcpy(d, a, bytes);
    double dt = now() - t0;
    if (dt < best) best = dt;
  }
  report("memcpy", bytes, best, 2);
  benchReduce("float32 sum (dst, a, b)", d, a, b, bytes, tpudistFloat32, tpudistSum, runs);
  benchReduce("float32 sum (dst == a)", d, d, b, bytes, tpudistFloat32, tpudistSum, runs);
  benchReduce("float32 max (dst, a, b)", d, a, b, bytes, tpudistFloat32, tpudistMax, runs);
  benchReduce("bfloat16 sum (dst, a, b)", d, a, b, bytes, tpudistBfloat16, tpudistSum, runs);
  benchReduce("bfloat16 sum (dst == a)", d, d, b, bytes, tpudistBfloat16, tpudistSum, runs);
  benchReduce("float16 sum (dst, a, b)", d, a, b, bytes, tpudistFloat16, tpudistSum, runs);
  benchReduce("int64 max (dst, a, b)", d, a, b, bytes, tpudistInt64, tpudistMax, runs);
  free(a);
  free(b);
  free(d);
  return 0;
}
