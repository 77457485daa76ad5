/*
 * test_kernels.c - the reduction kernels against independent references: integer results from
 * exact wide arithmetic reduced mod 2^w, float32 from double, float64 from __float128 (both wide
 * enough that rounding twice equals rounding once), float16/bfloat16 from double arithmetic and a
 * reference rounding written here from the format's definition. Every comparison is on bits.
 * Covers every dtype x op, the three aliasing forms, odd lengths and unaligned pointers,
 * conversions (exhaustive over 16-bit patterns, sampled plus every tie over float32), and
 * hand-written spec cases: ties to even, overflow to Inf, subnormals, NaN, wrap, avg truncation.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../cu_main.h"
#include "../xorshift.h"
#include "kernels.h"

/* ---------- reference formats ---------- */
typedef struct {
  int p;     /* significant bits including the hidden one */
  int emin;  /* exponent of the smallest normal */
  int emax;  /* exponent of the largest finite */
  int ebits; /* exponent field width */
  unsigned quiet;
} refFmt;
static const refFmt fmtHalf = {11, -14, 15, 5, 0x200};
static const refFmt fmtBf16 = {8, -126, 127, 8, 0x40};

static double refDecode(uint16_t h, const refFmt *f) {
  int mbits = f->p - 1, bias = (1 << (f->ebits - 1)) - 1;
  unsigned e = (h >> mbits) & ((1u << f->ebits) - 1), m = h & ((1u << mbits) - 1);
  double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (e == (1u << f->ebits) - 1) return m ? NAN : sign * INFINITY;
  if (e == 0) return sign * ldexp((double)m, f->emin - mbits);
  return sign * ldexp((double)(m | (1u << mbits)), (int)e - bias - mbits);
}

static int refIsNan16(uint16_t h, const refFmt *f) {
  int mbits = f->p - 1;
  unsigned e = (h >> mbits) & ((1u << f->ebits) - 1);
  return e == (1u << f->ebits) - 1 && (h & ((1u << mbits) - 1)) != 0;
}

/* Rounds x to the format, nearest even, by scaling to the quantum and rounding an integer. */
static uint16_t refRound(double x, const refFmt *f) {
  int mbits = f->p - 1, bias = (1 << (f->ebits - 1)) - 1;
  uint16_t sign = signbit(x) ? 0x8000 : 0;
  uint16_t inf = (uint16_t)(sign | (((1u << f->ebits) - 1) << mbits));
  if (isnan(x)) return (uint16_t)(inf | f->quiet);
  double ax = fabs(x);
  if (isinf(ax)) return inf;
  if (ax == 0) return sign;
  int e2;
  frexp(ax, &e2); /* ax in [2^(e2-1), 2^e2) */
  int qexp = TD_MAX(e2 - 1, f->emin) - mbits;
  double scaled = ldexp(ax, -qexp);
  double fl = floor(scaled), frac = scaled - fl;
  if (frac > 0.5 || (frac == 0.5 && fmod(fl, 2.0) != 0)) fl += 1;
  if (fl >= ldexp(1, f->p)) { /* carry into the next binade */
    fl /= 2;
    qexp++;
  }
  if (qexp + mbits > f->emax) return inf;
  if (fl < ldexp(1, mbits)) return (uint16_t)(sign | (uint16_t)fl); /* subnormal (or 0) */
  unsigned efield = (unsigned)(qexp + mbits + bias);
  return (uint16_t)(sign | (efield << mbits) | ((unsigned)fl - (1u << mbits)));
}

static uint32_t bitsF(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static float fromBitsF(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static uint64_t bitsD(double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  return u;
}

static uint64_t rngState = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
  return tdXorshift(&rngState);
}

/* ---------- conversions ---------- */
static void testHalfToFloatExhaustive(void) {
  int bad = 0;
  for (uint32_t h = 0; h < 0x10000; h++) {
    float f = kernelHalfToFloat((uint16_t)h);
    if (refIsNan16((uint16_t)h, &fmtHalf)) {
      uint32_t want = ((h & 0x8000u) << 16) | 0x7f800000u | ((h & 0x3ffu) << 13);
      bad += bitsF(f) != want;
      bad += kernelFloatToHalf(f) != (uint16_t)(h | 0x200);
    } else {
      double d = refDecode((uint16_t)h, &fmtHalf);
      bad += bitsD((double)f) != bitsD(d);
      bad += kernelFloatToHalf(f) != h;
#ifdef __FLT16_MAX__
      _Float16 g;
      uint16_t hh = (uint16_t)h;
      memcpy(&g, &hh, 2);
      bad += bitsF((float)g) != bitsF(f);
#endif
    }
  }
  CU_ASSERT_EQUAL(bad, 0);
}

static void testBf16ToFloatExhaustive(void) {
  int bad = 0;
  for (uint32_t h = 0; h < 0x10000; h++) {
    float f = kernelBf16ToFloat((uint16_t)h);
    bad += bitsF(f) != h << 16;
    if (refIsNan16((uint16_t)h, &fmtBf16))
      bad += kernelFloatToBf16(f) != (uint16_t)(h | 0x40);
    else
      bad +=
          kernelFloatToBf16(f) != h || bitsD((double)f) != bitsD(refDecode((uint16_t)h, &fmtBf16));
  }
  CU_ASSERT_EQUAL(bad, 0);
}

static uint16_t wantHalfFromFloat(float f) {
  uint32_t u = bitsF(f);
  if (isnan(f)) return (uint16_t)(((u >> 16) & 0x8000u) | 0x7e00u | ((u >> 13) & 0x3ffu));
  return refRound((double)f, &fmtHalf);
}
static uint16_t wantBf16FromFloat(float f) {
  uint32_t u = bitsF(f);
  if (isnan(f)) return (uint16_t)((u >> 16) | 0x40u);
  return refRound((double)f, &fmtBf16);
}

/* Float -> 16 bits: a stride through all float patterns, and around every 16-bit value: the
 * value itself, the tie with its successor, and one float ulp either side of the tie. */
static void testFloatTo16(void) {
  int bad = 0;
  for (uint64_t u = 0; u < 0x100000000ull; u += 2311) {
    float f = fromBitsF((uint32_t)u);
    bad += kernelFloatToHalf(f) != wantHalfFromFloat(f);
    bad += kernelFloatToBf16(f) != wantBf16FromFloat(f);
  }
  for (uint32_t h = 0; h < 0x10000; h++) {
    if (refIsNan16((uint16_t)h, &fmtHalf) || (h & 0x7fff) >= 0x7c00) continue;
    double lo = refDecode((uint16_t)h, &fmtHalf);
    double hi =
        (h & 0x7fff) == 0x7bff ? copysign(65536.0, lo) : refDecode((uint16_t)(h + 1), &fmtHalf);
    if ((h & 0x7fff) == 0 && (h & 0x8000)) continue;
    float mid = (float)((lo + hi) / 2); /* exact: 12 significant bits */
    float probes[4] = {(float)lo, mid, nextafterf(mid, 0), nextafterf(mid, INFINITY)};
    for (int i = 0; i < 4; i++) bad += kernelFloatToHalf(probes[i]) != wantHalfFromFloat(probes[i]);
  }
  for (uint32_t h = 0; h < 0x7f80; h++) {
    uint32_t u = h << 16;
    float probes[4] = {fromBitsF(u | 0x8000u), fromBitsF(u | 0x7fffu), fromBitsF(u | 0x8001u),
                       fromBitsF(0x80000000u | u | 0x8000u)};
    for (int i = 0; i < 4; i++) bad += kernelFloatToBf16(probes[i]) != wantBf16FromFloat(probes[i]);
  }
  CU_ASSERT_EQUAL(bad, 0);
}

/* Spec values written by hand. */
static void testConversionSpecCases(void) {
  CU_ASSERT_EQUAL(kernelFloatToHalf(65504.0f), 0x7bff);
  CU_ASSERT_EQUAL(kernelFloatToHalf(65519.99f), 0x7bff);
  CU_ASSERT_EQUAL(kernelFloatToHalf(65520.0f), 0x7c00); /* tie, max half is odd -> Inf */
  CU_ASSERT_EQUAL(kernelFloatToHalf(-65520.0f), 0xfc00);
  CU_ASSERT_EQUAL(kernelFloatToHalf(1e10f), 0x7c00);
  CU_ASSERT_EQUAL(kernelFloatToHalf(ldexpf(1, -24)), 0x0001);
  CU_ASSERT_EQUAL(kernelFloatToHalf(ldexpf(1, -25)), 0x0000); /* tie -> even (0) */
  CU_ASSERT_EQUAL(kernelFloatToHalf(ldexpf(3, -25)), 0x0002); /* 1.5 ulp: tie -> 2 */
  CU_ASSERT_EQUAL(kernelFloatToHalf(ldexpf(1, -14) - ldexpf(1, -25)), 0x0400); /* up to normal */
  CU_ASSERT_EQUAL(kernelFloatToHalf(1.0f + ldexpf(1, -11)), 0x3c00);           /* tie -> even */
  CU_ASSERT_EQUAL(kernelFloatToHalf(1.0f + ldexpf(3, -11)), 0x3c02);           /* tie -> even */
  CU_ASSERT_EQUAL(kernelFloatToHalf(-0.0f), 0x8000);
  CU_ASSERT_EQUAL(kernelFloatToHalf(fromBitsF(0x7f800001u)), 0x7e00); /* sNaN -> quiet */
  CU_ASSERT_EQUAL(kernelFloatToHalf(fromBitsF(0xffc00000u)), 0xfe00);
  CU_ASSERT_EQUAL(kernelFloatToBf16(1.0f + ldexpf(1, -8)), 0x3f80);   /* tie -> even */
  CU_ASSERT_EQUAL(kernelFloatToBf16(1.0f + ldexpf(3, -8)), 0x3f82);   /* tie -> even */
  CU_ASSERT_EQUAL(kernelFloatToBf16(fromBitsF(0x7f7fffffu)), 0x7f80); /* FLT_MAX -> Inf */
  CU_ASSERT_EQUAL(kernelFloatToBf16(fromBitsF(0x7f7f7fffu)), 0x7f7f);
  CU_ASSERT_EQUAL(kernelFloatToBf16(fromBitsF(0x00008000u)), 0x0000); /* subnormal tie */
  CU_ASSERT_EQUAL(kernelFloatToBf16(fromBitsF(0x00018000u)), 0x0002);
  CU_ASSERT_EQUAL(kernelFloatToBf16(fromBitsF(0xff800001u)), 0xffc0);
  CU_ASSERT_EQUAL(bitsF(kernelHalfToFloat(0x0001)), bitsF(ldexpf(1, -24)));
  CU_ASSERT_EQUAL(bitsF(kernelHalfToFloat(0x83ff)), bitsF(-ldexpf(1023, -24)));
  CU_ASSERT_EQUAL(bitsF(kernelHalfToFloat(0xfc00)), 0xff800000u);
}

/* ---------- reference reductions, element by element ---------- */
static const tpudistDataType_t allTypes[] = {
    tpudistInt8,   tpudistUint8,   tpudistInt32,   tpudistUint32,  tpudistInt64,
    tpudistUint64, tpudistFloat16, tpudistFloat32, tpudistFloat64, tpudistBfloat16};
static const tpudistRedOp_t allOps[] = {tpudistSum, tpudistProd, tpudistMax, tpudistMin,
                                        tpudistAvg};

static int isSigned(tpudistDataType_t t) {
  return t == tpudistInt8 || t == tpudistInt32 || t == tpudistInt64;
}
static int intBits(tpudistDataType_t t) {
  return t == tpudistInt8 || t == tpudistUint8     ? 8
         : t == tpudistInt32 || t == tpudistUint32 ? 32
                                                   : 64;
}
static __int128 intValue(tpudistDataType_t t, uint64_t bits) {
  int w = intBits(t);
  if (!isSigned(t)) return (__int128)bits;
  if (w == 64) return (__int128)(int64_t)bits;
  uint64_t m = 1ull << (w - 1);
  return (__int128)((int64_t)(bits ^ m) - (int64_t)m); /* sign-extend */
}
static uint64_t intMask(tpudistDataType_t t) {
  return intBits(t) == 64 ? ~0ull : (1ull << intBits(t)) - 1;
}

/* Max/min rule from the spec: a NaN operand wins (a first; 16-bit types come back quiet);
 * equal zeros give +0 for max, -0 for min; otherwise the larger/smaller operand. */
static int refMaxMinPick(double x, double y, int isMax, int xNan, int yNan, int *zeroSign) {
  *zeroSign = -1;
  if (xNan) return 0;
  if (yNan) return 1;
  if (x != y) return (x > y) == isMax ? 0 : 1;
  if (x == 0) *zeroSign = isMax ? (signbit(x) && signbit(y)) : (signbit(x) || signbit(y));
  return 0;
}

typedef struct {
  uint64_t bits;
  int nanOnly; /* result must be a NaN; payload unspecified (arithmetic on NaN or Inf - Inf) */
} refResult;

/* Exact values in 128 bits (sum and product of two 64-bit values fit; unsigned 128-bit
 * arithmetic is exact mod 2^128), then reduced mod 2^w. */
static refResult refInt(tpudistDataType_t t, tpudistRedOp_t op, uint64_t a, uint64_t b) {
  __int128 x = intValue(t, a), y = intValue(t, b);
  unsigned __int128 ux = (unsigned __int128)x, uy = (unsigned __int128)y, r;
  if (op == tpudistSum || op == tpudistAvg)
    r = ux + uy;
  else if (op == tpudistProd)
    r = ux * uy;
  else if (op == tpudistMax)
    r = x > y ? ux : uy;
  else
    r = x < y ? ux : uy;
  refResult res = {(uint64_t)r & intMask(t), 0};
  return res;
}

static refResult refF32(tpudistRedOp_t op, uint32_t a, uint32_t b) {
  float x = fromBitsF(a), y = fromBitsF(b);
  refResult res = {0, 0};
  if (op == tpudistMax || op == tpudistMin) {
    int zs, pick = refMaxMinPick(x, y, op == tpudistMax, isnan(x), isnan(y), &zs);
    res.bits = zs >= 0 ? (zs ? 0x80000000u : 0) : pick ? b : a;
    return res;
  }
  double r = op == tpudistProd ? (double)x * (double)y : (double)x + (double)y;
  res.bits = bitsF((float)r);
  res.nanOnly = isnan(r);
  return res;
}

static refResult refF64(tpudistRedOp_t op, uint64_t a, uint64_t b) {
  double x, y;
  memcpy(&x, &a, 8);
  memcpy(&y, &b, 8);
  refResult res = {0, 0};
  if (op == tpudistMax || op == tpudistMin) {
    int zs, pick = refMaxMinPick(x, y, op == tpudistMax, isnan(x), isnan(y), &zs);
    res.bits = zs >= 0 ? (zs ? 0x8000000000000000ull : 0) : pick ? b : a;
    return res;
  }
  __float128 q = op == tpudistProd ? (__float128)x * (__float128)y : (__float128)x + (__float128)y;
  double r = (double)q;
  res.bits = bitsD(r);
  res.nanOnly = isnan(r);
  return res;
}

static refResult ref16(const refFmt *f, tpudistRedOp_t op, uint16_t a, uint16_t b) {
  double x = refDecode(a, f), y = refDecode(b, f);
  refResult res = {0, 0};
  if (op == tpudistMax || op == tpudistMin) {
    int zs, pick = refMaxMinPick(x, y, op == tpudistMax, refIsNan16(a, f), refIsNan16(b, f), &zs);
    uint16_t chosen = pick ? b : a;
    if (refIsNan16(chosen, f)) chosen = (uint16_t)(chosen | f->quiet);
    res.bits = zs >= 0 ? (zs ? 0x8000u : 0) : chosen;
    return res;
  }
  double r = op == tpudistProd ? x * y : x + y;
  res.bits = refRound(r, f);
  res.nanOnly = isnan(r);
  return res;
}

static refResult refReduce(tpudistDataType_t t, tpudistRedOp_t op, uint64_t a, uint64_t b) {
  switch (t) {
    case tpudistFloat32:
      return refF32(op, (uint32_t)a, (uint32_t)b);
    case tpudistFloat64:
      return refF64(op, a, b);
    case tpudistFloat16:
      return ref16(&fmtHalf, op, (uint16_t)a, (uint16_t)b);
    case tpudistBfloat16:
      return ref16(&fmtBf16, op, (uint16_t)a, (uint16_t)b);
    default:
      return refInt(t, op, a, b);
  }
}

static int resultIsNan(tpudistDataType_t t, uint64_t bits) {
  switch (t) {
    case tpudistFloat32:
      return isnan(fromBitsF((uint32_t)bits));
    case tpudistFloat64: {
      double d;
      memcpy(&d, &bits, 8);
      return isnan(d);
    }
    case tpudistFloat16:
      return refIsNan16((uint16_t)bits, &fmtHalf);
    case tpudistBfloat16:
      return refIsNan16((uint16_t)bits, &fmtBf16);
    default:
      return 0;
  }
}

static uint64_t loadElem(const void *buf, size_t i, size_t es) {
  uint64_t v = 0;
  memcpy(&v, (const char *)buf + i * es, es); /* little-endian */
  return v;
}
static void storeElem(void *buf, size_t i, size_t es, uint64_t v) {
  memcpy((char *)buf + i * es, &v, es);
}

/* Test values: random patterns (NaN, Inf, subnormals included), small integers (so that sums
 * and products stay in range and round), boundary values, and values near 1. */
static uint64_t genValue(tpudistDataType_t t) {
  uint64_t r = rnd(), kind = r % 8;
  size_t es = kernelDtypeSize(t);
  uint64_t mask = es == 8 ? ~0ull : (1ull << (8 * es)) - 1;
  uint64_t v = rnd();
  int neg = (r >> 8) & 1;
  if (kind <= 2) return v & mask;
  if (t == tpudistFloat32) {
    float small = (float)((int)(v % 2001) - 1000) / (kind == 3 ? 1.0f : 64.0f);
    float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, FLT_MAX, FLT_MIN, 1e-45f, 1.0f};
    if (kind == 7) return bitsF(special[v % 9]);
    if (kind == 6) return bitsF(1.0f + ldexpf((float)(v % 64), -23)) | (neg ? 0x80000000u : 0);
    return bitsF(small);
  }
  if (t == tpudistFloat64) {
    double small = (double)((int)(v % 2001) - 1000) / (kind == 3 ? 1.0 : 64.0);
    double special[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, DBL_MAX, DBL_MIN, 5e-324, 1.0};
    if (kind == 7) return bitsD(special[v % 9]);
    if (kind == 6) return bitsD(1.0 + ldexp((double)(v % 64), -52)) | (neg ? 1ull << 63 : 0);
    return bitsD(small);
  }
  if (t == tpudistFloat16 || t == tpudistBfloat16) {
    const refFmt *f = t == tpudistFloat16 ? &fmtHalf : &fmtBf16;
    uint16_t one = t == tpudistFloat16 ? 0x3c00 : 0x3f80;
    uint16_t special16[] = {0x0000,
                            0x8000,
                            0x0001,
                            0x8001,
                            (uint16_t)(one | 0x8000),
                            one,
                            t == tpudistFloat16 ? 0x7bff : 0x7f7f,
                            t == tpudistFloat16 ? 0x7c00 : 0x7f80,
                            t == tpudistFloat16 ? 0x7c01 : 0x7f81,
                            t == tpudistFloat16 ? 0x03ff : 0x007f};
    if (kind == 7) return special16[v % 10];
    if (kind == 6) return (uint16_t)(one + (v % 16)) | (neg ? 0x8000 : 0);
    return refRound((double)((int)(v % 2001) - 1000) / (kind == 3 ? 1.0 : 8.0), f);
  }
  int64_t extremes[] = {0, 1, -1, INT8_MAX, INT8_MIN, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN};
  if (kind == 7) return (uint64_t)extremes[v % 9] & mask;
  return (uint64_t)((int64_t)(v % 41) - 20) & mask;
}

/* Runs one (dtype, op) over n elements in each aliasing form, at an odd element offset. */
static int checkOne(tpudistDataType_t t, tpudistRedOp_t op, size_t n) {
  size_t es = kernelDtypeSize(t);
  char *a = malloc((n + 1) * es), *b = malloc((n + 1) * es), *d = malloc((n + 1) * es);
  uint64_t *want = malloc((n + 1) * sizeof(uint64_t));
  int *nanOnly = malloc((n + 1) * sizeof(int));
  int bad = 0;
  char *A = a + es, *B = b + es, *D = d + es; /* misaligned for the vector loops */
  for (size_t i = 0; i < n; i++) {
    storeElem(A, i, es, genValue(t));
    storeElem(B, i, es, genValue(t));
  }
  for (int form = 0; form < 4; form++) {
    for (size_t i = 0; i < n; i++) {
      uint64_t x = loadElem(A, i, es), y = loadElem(form == 3 ? A : B, i, es);
      refResult r = refReduce(t, op, x, y);
      want[i] = r.bits;
      nanOnly[i] = r.nanOnly;
    }
    if (form == 0) kernelReduce(D, A, B, n, t, op);
    if (form == 1 || form == 3) {
      memcpy(D, A, n * es);
      kernelReduce(D, D, form == 3 ? D : B, n, t, op);
    }
    if (form == 2) {
      memcpy(D, B, n * es);
      kernelReduce(D, A, D, n, t, op);
    }
    for (size_t i = 0; i < n; i++) {
      uint64_t got = loadElem(D, i, es);
      int ok = nanOnly[i] ? resultIsNan(t, got) : got == want[i];
      if (!ok && bad < 5)
        fprintf(stderr, "%s %s form %d n %zu [%zu]: a %#llx b %#llx got %#llx want %#llx%s\n",
                kernelDtypeName(t), kernelOpName(op), form, n, i,
                (unsigned long long)loadElem(A, i, es),
                (unsigned long long)loadElem(form == 3 ? A : B, i, es), (unsigned long long)got,
                (unsigned long long)want[i], nanOnly[i] ? " (NaN)" : "");
      bad += !ok;
    }
  }
  free(a);
  free(b);
  free(d);
  free(want);
  free(nanOnly);
  return bad;
}

static void testAllOps(void) {
  static const size_t sizes[] = {0, 1, 3, 17, 64, 1001, 20000};
  for (size_t ti = 0; ti < sizeof(allTypes) / sizeof(allTypes[0]); ti++)
    for (size_t oi = 0; oi < sizeof(allOps) / sizeof(allOps[0]); oi++)
      for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
        int bad = checkOne(allTypes[ti], allOps[oi], sizes[si]);
        if (bad) fprintf(stderr, "%d mismatches\n", bad);
        CU_ASSERT_EQUAL(bad, 0);
      }
}

/* a (+) b through kernelReduce, raw bits in and out. The pair is repeated RED1_N times so that
 * both the vector body and the scalar tail of the loops compute it; all copies must agree (else
 * the result is reported as ~0, which no test expects). */
#define RED1_N 77
static uint64_t red1(tpudistDataType_t t, tpudistRedOp_t op, uint64_t a, uint64_t b) {
  char x[8 * RED1_N], y[8 * RED1_N], d[8 * RED1_N];
  size_t es = kernelDtypeSize(t);
  for (size_t i = 0; i < RED1_N; i++) {
    storeElem(x, i, es, a);
    storeElem(y, i, es, b);
  }
  kernelReduce(d, x, y, RED1_N, t, op);
  uint64_t r = loadElem(d, 0, es);
  for (size_t i = 1; i < RED1_N; i++)
    if (loadElem(d, i, es) != r) return ~0ull;
  return r;
}
#define U(v) ((uint64_t)(v))

static void testIntegerWrap(void) {
  CU_ASSERT_EQUAL(red1(tpudistInt32, tpudistSum, U(INT32_MAX), 1), U(0x80000000u)); /* INT32_MIN */
  CU_ASSERT_EQUAL(red1(tpudistInt8, tpudistSum, 127, 1), U(0x80));
  CU_ASSERT_EQUAL(red1(tpudistUint8, tpudistSum, 200, 100), 44);
  CU_ASSERT_EQUAL(red1(tpudistInt64, tpudistSum, U(INT64_MAX), 1), U(INT64_MIN));
  CU_ASSERT_EQUAL(red1(tpudistUint64, tpudistSum, ~0ull, 2), 1);
  CU_ASSERT_EQUAL(red1(tpudistInt32, tpudistProd, 65536, 65536), 0);
  CU_ASSERT_EQUAL(red1(tpudistInt32, tpudistProd, 46341, 46341), U(2147488281u)); /* -2147479015 */
  CU_ASSERT_EQUAL(red1(tpudistInt8, tpudistProd, U(0x80), U(0xff)), U(0x80));     /* -128 * -1 */
  CU_ASSERT_EQUAL(red1(tpudistUint8, tpudistProd, 16, 17), 16);                   /* 272 mod 256 */
  CU_ASSERT_EQUAL(red1(tpudistUint32, tpudistProd, 0xffffffffu, 0xffffffffu), 1);
  CU_ASSERT_EQUAL(red1(tpudistInt64, tpudistProd, U(INT64_MAX), 2), U(-2ll));
  CU_ASSERT_EQUAL(red1(tpudistInt64, tpudistProd, U(INT64_MIN), U(-1ll)), U(INT64_MIN));
  CU_ASSERT_EQUAL(red1(tpudistInt8, tpudistMax, U(0xff), 1), 1); /* -1 < 1 */
  CU_ASSERT_EQUAL(red1(tpudistUint8, tpudistMax, U(0xff), 1), U(0xff));
  CU_ASSERT_EQUAL(red1(tpudistInt64, tpudistMin, U(INT64_MIN), 0), U(INT64_MIN));
  CU_ASSERT_EQUAL(red1(tpudistUint64, tpudistMin, U(INT64_MIN), 0), 0);
  CU_ASSERT_EQUAL(red1(tpudistInt32, tpudistAvg, U(INT32_MAX), 1), U(0x80000000u)); /* as sum */
}

static void testHalfArithmetic(void) {
  CU_ASSERT_EQUAL(red1(tpudistFloat16, tpudistSum, 0x7bff, 0x4c00), 0x7c00); /* 65504 + 16 */
  CU_ASSERT_EQUAL(red1(tpudistFloat16, tpudistSum, 0x7bff, 0x4b80), 0x7bff); /* 65504 + 15 */
  CU_ASSERT_EQUAL(red1(tpudistFloat16, tpudistSum, 0xfbff, 0xcc00), 0xfc00);
  CU_ASSERT_EQUAL(red1(tpudistFloat16, tpudistSum, 0x0001, 0x0001), 0x0002);
  CU_ASSERT_EQUAL(red1(tpudistFloat16, tpudistSum, 0x03ff, 0x0001), 0x0400); /* to normal */
  CU_ASSERT_EQUAL(red1(tpudistFloat16, tpudistSum, 0x0001, 0x8001), 0x0000);
  CU_ASSERT_EQUAL(red1(tpudistFloat16, tpudistProd, 0x0001, 0x3800), 0x0000); /* 2^-25: tie */
  CU_ASSERT_EQUAL(red1(tpudistFloat16, tpudistProd, 0x0003, 0x3800), 0x0002); /* tie -> even */
  CU_ASSERT_EQUAL(red1(tpudistFloat16, tpudistSum, 0x3c00, 0x1000), 0x3c00);  /* 1 + 2^-11 */
  CU_ASSERT_EQUAL(red1(tpudistFloat16, tpudistSum, 0x3c01, 0x1000), 0x3c02);
  CU_ASSERT_EQUAL(red1(tpudistFloat16, tpudistSum, 0x7c00, 0x3c00), 0x7c00);
  CU_ASSERT(refIsNan16((uint16_t)red1(tpudistFloat16, tpudistSum, 0x7c00, 0xfc00), &fmtHalf));
  CU_ASSERT(refIsNan16((uint16_t)red1(tpudistFloat16, tpudistProd, 0x7c00, 0x0000), &fmtHalf));
  CU_ASSERT_EQUAL(red1(tpudistBfloat16, tpudistSum, 0x3f80, 0x3b80), 0x3f80); /* 1 + 2^-8 */
  CU_ASSERT_EQUAL(red1(tpudistBfloat16, tpudistSum, 0x3f81, 0x3b80), 0x3f82);
  CU_ASSERT_EQUAL(red1(tpudistBfloat16, tpudistSum, 0x7f7f, 0x7f7f), 0x7f80);
  CU_ASSERT_EQUAL(red1(tpudistBfloat16, tpudistSum, 0x0001, 0x0001), 0x0002);
  CU_ASSERT_EQUAL(red1(tpudistBfloat16, tpudistProd, 0x0001, 0x3f00), 0x0000); /* tie -> 0 */
  /* each step rounds back: 1 + 2^-12 three times stays 1 (exactly, it would round to 1 + 2^-10) */
  uint16_t acc = 0x3c00, tiny = 0x0c00;
  for (int i = 0; i < 3; i++) kernelReduce(&acc, &acc, &tiny, 1, tpudistFloat16, tpudistSum);
  CU_ASSERT_EQUAL(acc, 0x3c00);
}

static void testMaxMinNan(void) {
  const tpudistRedOp_t mm[2] = {tpudistMax, tpudistMin};
  for (int k = 0; k < 2; k++) {
    tpudistRedOp_t op = mm[k];
    CU_ASSERT_EQUAL(red1(tpudistFloat32, op, 0x7fc00001u, bitsF(1.0f)), 0x7fc00001u);
    CU_ASSERT_EQUAL(red1(tpudistFloat32, op, bitsF(1.0f), 0xffc00002u), 0xffc00002u);
    CU_ASSERT_EQUAL(red1(tpudistFloat32, op, bitsF(-INFINITY), 0x7fc00003u), 0x7fc00003u);
    CU_ASSERT_EQUAL(red1(tpudistFloat32, op, 0x7fc00001u, 0x7fc00002u), 0x7fc00001u);
    CU_ASSERT_EQUAL(red1(tpudistFloat64, op, 0x7ff8000000000001ull, bitsD(2.0)),
                    0x7ff8000000000001ull);
    CU_ASSERT_EQUAL(red1(tpudistFloat64, op, bitsD(2.0), 0xfff8000000000005ull),
                    0xfff8000000000005ull);
    CU_ASSERT_EQUAL(red1(tpudistFloat16, op, 0x7c01, 0x3c00), 0x7e01); /* sNaN comes back quiet */
    CU_ASSERT_EQUAL(red1(tpudistFloat16, op, 0x3c00, 0xfe05), 0xfe05);
    CU_ASSERT_EQUAL(red1(tpudistFloat16, op, 0xfc00, 0x7c01), 0x7e01);
    CU_ASSERT_EQUAL(red1(tpudistBfloat16, op, 0x7f81, 0x0000), 0x7fc1);
    CU_ASSERT_EQUAL(red1(tpudistBfloat16, op, 0x0000, 0xffc0), 0xffc0);
  }
  /* +-0 in either order: max +0, min -0 */
  CU_ASSERT_EQUAL(red1(tpudistFloat32, tpudistMax, 0x80000000u, 0), 0);
  CU_ASSERT_EQUAL(red1(tpudistFloat32, tpudistMax, 0, 0x80000000u), 0);
  CU_ASSERT_EQUAL(red1(tpudistFloat32, tpudistMin, 0x80000000u, 0), 0x80000000u);
  CU_ASSERT_EQUAL(red1(tpudistFloat32, tpudistMin, 0, 0x80000000u), 0x80000000u);
  CU_ASSERT_EQUAL(red1(tpudistFloat64, tpudistMax, 1ull << 63, 0), 0);
  CU_ASSERT_EQUAL(red1(tpudistFloat64, tpudistMin, 0, 1ull << 63), 1ull << 63);
  CU_ASSERT_EQUAL(red1(tpudistFloat16, tpudistMax, 0x8000, 0), 0);
  CU_ASSERT_EQUAL(red1(tpudistFloat16, tpudistMin, 0, 0x8000), 0x8000);
  CU_ASSERT_EQUAL(red1(tpudistBfloat16, tpudistMax, 0, 0x8000), 0);
  CU_ASSERT_EQUAL(red1(tpudistBfloat16, tpudistMin, 0x8000, 0), 0x8000);
  CU_ASSERT_EQUAL(red1(tpudistFloat16, tpudistMax, 0xfc00, 0xfbff), 0xfbff); /* -Inf < -max */
  CU_ASSERT_EQUAL(red1(tpudistFloat16, tpudistMin, 0x0001, 0x8001), 0x8001);
}

/* Reference avg: truncation toward zero, written on magnitudes. */
static uint64_t refAvgInt(tpudistDataType_t t, uint64_t bits, int nr) {
  __int128 v = intValue(t, bits);
  __int128 q = (v < 0 ? -v : v) / nr;
  return (uint64_t)((unsigned __int128)(v < 0 ? -q : q)) & intMask(t);
}

static uint64_t refAvg(tpudistDataType_t t, uint64_t bits, int nr, int *nanOnly) {
  *nanOnly = 0;
  if (t == tpudistFloat32) {
    double r = (double)fromBitsF((uint32_t)bits) / nr;
    *nanOnly = isnan(r);
    return bitsF((float)r);
  }
  if (t == tpudistFloat64) {
    double x;
    memcpy(&x, &bits, 8);
    double r = (double)((__float128)x / nr);
    *nanOnly = isnan(r);
    return bitsD(r);
  }
  if (t == tpudistFloat16 || t == tpudistBfloat16) {
    const refFmt *f = t == tpudistFloat16 ? &fmtHalf : &fmtBf16;
    double r = refDecode((uint16_t)bits, f) / nr;
    *nanOnly = isnan(r);
    return refRound(r, f);
  }
  return refAvgInt(t, bits, nr);
}

static void testAvgFinish(void) {
  int32_t v32[5] = {-7, 7, -8, INT32_MIN, INT32_MAX};
  kernelFinishAvg(v32, 5, tpudistInt32, 2);
  CU_ASSERT(v32[0] == -3 && v32[1] == 3 && v32[2] == -4);
  CU_ASSERT(v32[3] == -1073741824 && v32[4] == 1073741823);
  int8_t v8[2] = {-128, -7};
  kernelFinishAvg(v8, 2, tpudistInt8, 3);
  CU_ASSERT(v8[0] == -42 && v8[1] == -2);
  uint64_t u64 = ~0ull;
  kernelFinishAvg(&u64, 1, tpudistUint64, 2);
  CU_ASSERT_EQUAL(u64, 0x7fffffffffffffffull);
  uint16_t h = 0x3c00; /* 1/3 in half: 0x3555 */
  kernelFinishAvg(&h, 1, tpudistFloat16, 3);
  CU_ASSERT_EQUAL(h, 0x3555);
  uint16_t bf = 0x3f80; /* 1/3 in bf16: 0x3eab */
  kernelFinishAvg(&bf, 1, tpudistBfloat16, 3);
  CU_ASSERT_EQUAL(bf, 0x3eab);
  float fl[2] = {1.0f, 0.0f};
  kernelFinishAvg(fl, 2, tpudistFloat32, 0); /* nranks < 1: unchanged */
  CU_ASSERT(fl[0] == 1.0f);
  /* avg = sum, then finish: ranks contribute 1, 2, 4 (int32) -> 7 / 3 = 2 */
  int32_t acc = 1, two = 2, four = 4;
  kernelReduce(&acc, &acc, &two, 1, tpudistInt32, tpudistAvg);
  kernelReduce(&acc, &four, &acc, 1, tpudistInt32, tpudistAvg);
  kernelFinishAvg(&acc, 1, tpudistInt32, 3);
  CU_ASSERT_EQUAL(acc, 2);
  /* random values, every dtype, against the reference */
  const int nrs[3] = {1, 3, 8};
  for (size_t ti = 0; ti < sizeof(allTypes) / sizeof(allTypes[0]); ti++) {
    tpudistDataType_t t = allTypes[ti];
    size_t es = kernelDtypeSize(t), n = 777;
    char *buf = malloc(n * es);
    uint64_t *orig = malloc(n * sizeof(uint64_t));
    for (int k = 0; k < 3; k++) {
      int bad = 0;
      for (size_t i = 0; i < n; i++) storeElem(buf, i, es, orig[i] = genValue(t));
      kernelFinishAvg(buf, n, t, nrs[k]);
      for (size_t i = 0; i < n; i++) {
        int nanOnly;
        uint64_t want = refAvg(t, orig[i], nrs[k], &nanOnly), got = loadElem(buf, i, es);
        bad += nanOnly ? !resultIsNan(t, got) : got != want;
      }
      CU_ASSERT_EQUAL(bad, 0);
    }
    free(buf);
    free(orig);
  }
}

static void testNames(void) {
  static const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
  static const char *const names[] = {"int8",   "uint8",   "int32",   "uint32",  "int64",
                                      "uint64", "float16", "float32", "float64", "bfloat16"};
  for (int t = 0; t < tpudistNumTypes; t++) {
    CU_ASSERT_EQUAL(kernelDtypeSize((tpudistDataType_t)t), sizes[t]);
    CU_ASSERT_STRING_EQUAL(kernelDtypeName((tpudistDataType_t)t), names[t]);
    CU_ASSERT(kernelDtypeValid(t));
  }
  CU_ASSERT(!kernelDtypeValid(-1) && !kernelDtypeValid(tpudistNumTypes));
  CU_ASSERT(!kernelOpValid(-1) && !kernelOpValid(tpudistNumOps) && kernelOpValid(tpudistAvg));
  CU_ASSERT_EQUAL(kernelDtypeSize((tpudistDataType_t)42), 0);
  CU_ASSERT_STRING_EQUAL(kernelDtypeName((tpudistDataType_t)42), "unknown");
  CU_ASSERT_STRING_EQUAL(kernelOpName(tpudistProd), "prod");
  CU_ASSERT_STRING_EQUAL(kernelOpName((tpudistRedOp_t)9), "unknown");
  int32_t d = 5, a = 1, b = 2;
  kernelReduce(&d, &a, &b, 1, (tpudistDataType_t)42, tpudistSum); /* ignored */
  kernelReduce(&d, &a, &b, 1, tpudistInt32, (tpudistRedOp_t)9);
  CU_ASSERT_EQUAL(d, 5);
}

int main(void) {
  CU_TestInfo tests[] = {{"half<->float exhaustive", testHalfToFloatExhaustive},
                         {"bf16<->float exhaustive", testBf16ToFloatExhaustive},
                         {"float->16 sampled and ties", testFloatTo16},
                         {"conversion spec cases", testConversionSpecCases},
                         {"every dtype x op x aliasing", testAllOps},
                         {"integer wrap", testIntegerWrap},
                         {"float16/bfloat16 arithmetic", testHalfArithmetic},
                         {"NaN and zeros in max/min", testMaxMinNan},
                         {"avg finish", testAvgFinish},
                         {"names and sizes", testNames},
                         CU_TEST_INFO_NULL};
  return tdCUnitMain("kernels", tests);
}
