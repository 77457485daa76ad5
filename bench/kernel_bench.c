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

/* Fills a and b with normal values of dtype t (no NaN, no subnormals: subnormal float operands
 * cost microcode assists) that stay finite under the repeated sums below; d starts as a copy of
 * a. */
static void fill(char *d, char *a, char *b, size_t bytes, tpudistDataType_t t) {
  size_t es = kernelDtypeSize(t), n = bytes / es;
  for (size_t i = 0; i < n; i++) {
    float x = 1.0f + (float)(i % 1000) * 0.001f, y = 0.5f;
    if (t == tpudistFloat32) {
      ((float *)a)[i] = x;
      ((float *)b)[i] = y;
    } else if (t == tpudistBfloat16) {
      ((uint16_t *)a)[i] = kernelFloatToBf16(x);
      ((uint16_t *)b)[i] = kernelFloatToBf16(y);
    } else if (t == tpudistFloat16) {
      ((uint16_t *)a)[i] = kernelFloatToHalf(x);
      ((uint16_t *)b)[i] = kernelFloatToHalf(y);
    } else {
      ((int64_t *)a)[i] = (int64_t)(i * 2654435761u);
      ((int64_t *)b)[i] = (int64_t)(i * 40503u);
    }
  }
  memcpy(d, a, bytes);
}

static void benchReduce(const char *what, char *d, char *a, char *b, size_t bytes,
                        tpudistDataType_t t, tpudistRedOp_t op, int inplace, int runs) {
  size_t n = bytes / kernelDtypeSize(t);
  double best = 1e30;
  fill(d, a, b, bytes, t);
  for (int r = 0; r < runs; r++) {
    double t0 = now();
    kernelReduce(d, inplace ? d : a, b, n, t, op);
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
  fill(d, a, b, bytes, tpudistFloat32);
  printf("kernel_bench: %zu MiB per operand, best of %d\n", mib, runs);
  double best = 1e30;
  for (int r = 0; r < runs; r++) {
    double t0 = now();
    memcpy(d, a, bytes);
    double dt = now() - t0;
    if (dt < best) best = dt;
  }
  report("memcpy", bytes, best, 2);
  benchReduce("float32 sum (dst, a, b)", d, a, b, bytes, tpudistFloat32, tpudistSum, 0, runs);
  benchReduce("float32 sum (dst == a)", d, a, b, bytes, tpudistFloat32, tpudistSum, 1, runs);
  benchReduce("float32 max (dst, a, b)", d, a, b, bytes, tpudistFloat32, tpudistMax, 0, runs);
  benchReduce("bfloat16 sum (dst, a, b)", d, a, b, bytes, tpudistBfloat16, tpudistSum, 0, runs);
  benchReduce("bfloat16 sum (dst == a)", d, a, b, bytes, tpudistBfloat16, tpudistSum, 1, runs);
  benchReduce("float16 sum (dst, a, b)", d, a, b, bytes, tpudistFloat16, tpudistSum, 0, runs);
  benchReduce("float16 sum (dst == a)", d, a, b, bytes, tpudistFloat16, tpudistSum, 1, runs);
  benchReduce("int64 max (dst, a, b)", d, a, b, bytes, tpudistInt64, tpudistMax, 0, runs);
  free(a);
  free(b);
  free(d);
  return 0;
}
