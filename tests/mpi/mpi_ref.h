/*
 * mpi_ref.h - the MPI test's data generator and reference: every rank regenerates every rank's
 * input from (seed, rank, index), so the expected result of a collective is computed locally,
 * independently of the library (its own float16/bfloat16 conversions, no library kernels).
 *
 * Values are chosen so that the exact result does not depend on the reduction order: integers
 * wrap (any order gives the same bits), float sums use small integers, products powers of two,
 * max/min any finite values, and Avg inputs whose sum is a multiple of the rank count.
 */
#ifndef TD_MPI_REF_H_
#define TD_MPI_REF_H_

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "tpu_dist.h"

static inline uint64_t refHash(uint64_t seed, int rank, size_t i) {
  uint64_t z =
      seed ^ ((uint64_t)(rank + 1) * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)i * 0xbf58476d1ce4e5b9ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static inline size_t refSize(int dt) {
  static const size_t s[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
  return s[dt];
}
static inline int refIsFloat(int dt) {
  return dt == tpudistFloat16 || dt == tpudistFloat32 || dt == tpudistFloat64 ||
         dt == tpudistBfloat16;
}
static inline int refIsSigned(int dt) {
  return dt == tpudistInt8 || dt == tpudistInt32 || dt == tpudistInt64;
}

/* float16 <-> float for exactly representable values (inputs are chosen so). */
static inline float refHalfToFloat(uint16_t h) {
  int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  float v = e == 0    ? ldexpf((float)m, -24)
            : e == 31 ? (m ? NAN : INFINITY)
                      : ldexpf((float)(m | 1024), e - 25);
  return s ? -v : v;
}
static inline uint16_t refFloatToHalf(float f) {
  uint16_t s = signbit(f) ? 0x8000 : 0;
  f = fabsf(f);
  if (isnan(f)) return 0x7e00;
  if (f == 0) return s;
  int e;
  float m = frexpf(f, &e); /* f = m * 2^e, m in [0.5, 1) */
  if (e - 1 < -14) return (uint16_t)(s | (uint16_t)lrintf(ldexpf(f, 24)));
  if (e - 1 > 15) return s | 0x7c00;
  return (uint16_t)(s | ((e - 1 + 15) << 10) | ((uint16_t)lrintf(ldexpf(m, 11)) & 1023));
}
static inline float refBf16ToFloat(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static inline uint16_t refFloatToBf16(float f) { /* exact values only: truncation is exact */
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)(u >> 16);
}

/* Stores value (integer bits iv for integer types, fv for floats) as element i of buf. */
static inline void refStore(void *buf, size_t i, int dt, uint64_t iv, double fv) {
  char *p = (char *)buf + i * refSize(dt);
  switch (dt) {
    case tpudistFloat16: {
      uint16_t h = refFloatToHalf((float)fv);
      memcpy(p, &h, 2);
      return;
    }
    case tpudistBfloat16: {
      uint16_t h = refFloatToBf16((float)fv);
      memcpy(p, &h, 2);
      return;
    }
    case tpudistFloat32: {
      float f = (float)fv;
      memcpy(p, &f, 4);
      return;
    }
    case tpudistFloat64:
      memcpy(p, &fv, 8);
      return;
    default:
      memcpy(p, &iv, refSize(dt));
      return; /* little endian: low bytes */
  }
}

/* Integer value of rank r's element i (sign-extended for signed types). */
static inline int64_t refSext(uint64_t v, int dt) {
  int bits = (int)refSize(dt) * 8;
  if (bits == 64 || !refIsSigned(dt))
    return bits == 64 ? (int64_t)v : (int64_t)(v & ((1ull << bits) - 1));
  uint64_t m = 1ull << (bits - 1), x = v & ((1ull << bits) - 1);
  return (int64_t)((x ^ m) - m);
}

/* min(cap, num / n), at least 1 */
static inline int64_t refSpan(int64_t cap, int64_t num, int n) {
  int64_t v = num / (n > 0 ? n : 1);
  return v < 1 ? 1 : v < cap ? v : cap;
}

/* Input element of rank r: integer bits (iv) or float value (fv), for op. Ranges shrink with the
 * rank count beyond 8 (16 for floats) so that sums and products stay exact in the narrowest types
 * (an 8-bit average's sum, bfloat16's 8-bit significand, float16's range) for any order of
 * reduction. */
static inline void refInput(uint64_t seed, int r, size_t i, int dt, int op, int nranks,
                            uint64_t *iv, double *fv) {
  uint64_t h = refHash(seed, r, i);
  *iv = h;
  *fv = 0;
  if (!refIsFloat(dt)) {
    int64_t k = refSpan(15, 127, nranks); /* |sum| <= 127: 8-bit signed averages stay exact */
    if (op == tpudistAvg)
      *iv = refIsSigned(dt) ? (uint64_t)((int64_t)(h % (uint64_t)(2 * k + 1)) - k)
                            : h % (uint64_t)refSpan(32, 256, nranks);
    return;
  }
  int small = dt == tpudistFloat16 || dt == tpudistBfloat16;
  switch (op) {
    case tpudistSum: { /* |partial sums| <= 256 in the half types (exact in bfloat16) */
      int64_t k = small ? refSpan(16, 256, nranks) : 16;
      *fv = (double)((int64_t)(h % (uint64_t)(2 * k + 1)) - k);
      return;
    }
    case tpudistProd: {
      static const double v[] = {1, -1, 2, 0.5};
      *fv = v[h % (small && nranks > 16 ? 2 : 4)];
      return;
    }
    case tpudistAvg: {
      /* partial sums stay within +-256 (exact in bfloat16) */
      int64_t k = refSpan(8, 128, nranks);
      uint64_t w = (uint64_t)(2 * k + 1);
      if (r < nranks - 1) {
        *fv = (double)((int64_t)(h % w) - k);
        return;
      }
      double target = (double)((int64_t)(refHash(seed, -1, i) % w) - k), s = 0;
      for (int q = 0; q < nranks - 1; q++) s += (double)((int64_t)(refHash(seed, q, i) % w) - k);
      *fv = target * nranks - s;
      return;
    }
    default:
      *fv = small ? (double)((int64_t)(h % 201) - 100)
                  : (double)((int64_t)(h % 2000001) - 1000000) / 16.0;
      return;
  }
}

/* Expected reduction of element i over ranks 0..n-1 into out[i]. */
static inline void refReduce(void *out, size_t i, uint64_t seed, int dt, int op, int n) {
  uint64_t iv, acc = 0;
  double fv, facc = 0;
  int64_t sacc = 0;
  for (int r = 0; r < n; r++) {
    refInput(seed, r, i, dt, op, n, &iv, &fv);
    if (refIsFloat(dt)) {
      if (r == 0)
        facc = fv;
      else if (op == tpudistSum || op == tpudistAvg)
        facc += fv;
      else if (op == tpudistProd)
        facc *= fv;
      else if (op == tpudistMax)
        facc = fv > facc ? fv : facc;
      else
        facc = fv < facc ? fv : facc;
      continue;
    }
    int64_t sv = refSext(iv, dt);
    uint64_t uv = (uint64_t)sv;
    if (r == 0) {
      acc = uv;
      sacc = sv;
      continue;
    }
    if (op == tpudistSum || op == tpudistAvg)
      acc += uv;
    else if (op == tpudistProd)
      acc *= uv;
    else if (op == tpudistMax) {
      if (refIsSigned(dt) ? sv > sacc : uv > acc) {
        acc = uv;
        sacc = sv;
      }
      continue;
    } else if (op == tpudistMin) {
      if (refIsSigned(dt) ? sv < sacc : uv < acc) {
        acc = uv;
        sacc = sv;
      }
      continue;
    }
    sacc = (int64_t)acc;
  }
  if (refIsFloat(dt)) {
    if (op == tpudistAvg) facc /= n;
    refStore(out, i, dt, 0, facc);
    return;
  }
  if (op == tpudistAvg) acc = refIsSigned(dt) ? (uint64_t)((int64_t)acc / n) : acc / (uint64_t)n;
  refStore(out, i, dt, acc, 0);
}

/* Rank r's input element i for op into buf. */
static inline void refFill(void *buf, size_t i, uint64_t seed, int r, int dt, int op, int n) {
  uint64_t iv;
  double fv;
  refInput(seed, r, i, dt, op, n, &iv, &fv);
  refStore(buf, i, dt, iv, fv);
}

#endif /* TD_MPI_REF_H_ */
