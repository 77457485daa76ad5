/*
 * kernels_half.c - float16 (IEEE binary16) and bfloat16 reduction kernels and conversions.
 *
 * Every step widens both operands to float32, computes there, and rounds back to nearest, ties to
 * even. float32 holds more than twice the 11 (8) significant bits plus two, so this double
 * rounding equals one correct rounding of the exact result. The conversions are branch-free
 * (selects on bit patterns) so that the loops vectorise:
 *  - half -> float is exact, subnormals included (renormalised with one exact float subtraction);
 *  - float -> half rounds to nearest even, overflows to +-Inf from 65520 up, produces half
 *    subnormals by one float addition that rounds at the subnormal grid;
 *  - NaN -> NaN with the sign kept, the quiet bit set and the top payload bits kept (as x86's
 *    vcvtps2ph and vcvtneps2bf16 do), so a signalling NaN comes back quiet.
 * max/min follow the NaN and signed-zero rules of kernels.c (see max16 below).
 */
#include <string.h>

#include "kernels.h"
#include "kernels_loops.h"

static inline uint32_t f32Bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  return u;
}

static inline float f32FromBits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
}

#define TD_HALF_EXP_SHIFTED 0x0f800000u /* half exponent field (0x7c00) shifted left by 13 */
#define TD_F32_TWO_M14 0x38800000u      /* 2^-14, the smallest normal half, as float bits */
#define TD_F32_HALF 0x3f000000u         /* 0.5f */
#define TD_F32_TWO_16 0x47800000u       /* 2^16: at and above, a half is Inf */
#define TD_F32_INF 0x7f800000u

/* x where mask is all ones, else y (masks are 0 or ~0): keeps every path computed, so that the
 * float operations in them need no branch and the loops stay vectorisable. */
static inline uint32_t pick(uint32_t mask, uint32_t x, uint32_t y) {
  return (x & mask) | (y & ~mask);
}
static inline uint32_t maskIf(int cond) {
  return 0u - (uint32_t)cond;
}

static inline float halfToFloat(uint16_t h) {
  uint32_t em = (uint32_t)(h & 0x7fffu) << 13;
  uint32_t exp = em & TD_HALF_EXP_SHIFTED;
  uint32_t normal = em + ((127u - 15u) << 23);
  uint32_t infnan = em + ((255u - 31u) << 23);
  /* subnormal m * 2^-24: (1 + m/1024) * 2^-14 - 2^-14, both exact */
  uint32_t sub = f32Bits(f32FromBits(em + TD_F32_TWO_M14) - f32FromBits(TD_F32_TWO_M14));
  uint32_t r = pick(maskIf(exp == TD_HALF_EXP_SHIFTED), infnan, normal);
  r = pick(maskIf(exp == 0), sub, r);
  return f32FromBits(r | ((uint32_t)(h & 0x8000u) << 16));
}

static inline uint16_t floatToHalf(float f) {
  uint32_t u = f32Bits(f);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t a = u & 0x7fffffffu;
  uint32_t big = pick(maskIf(a > TD_F32_INF), 0x7e00u | ((a >> 13) & 0x3ffu), 0x7c00u);
  /* below 2^-14: adding 0.5 puts the value where the float ulp is 2^-24, the half subnormal
   * step, so the addition itself rounds to nearest even; the low bits are the half */
  uint32_t sub = f32Bits(f32FromBits(a) + f32FromBits(TD_F32_HALF)) - TD_F32_HALF;
  /* normal: rebias, add half an ulp minus one plus the lowest kept bit (ties to even); a carry
   * out of the mantissa bumps the exponent, up to Inf */
  uint32_t normal = (a - ((127u - 15u) << 23) + 0xfffu + ((a >> 13) & 1u)) >> 13;
  uint32_t r = pick(maskIf(a >= TD_F32_TWO_16), big, pick(maskIf(a < TD_F32_TWO_M14), sub, normal));
  return (uint16_t)(r | sign);
}

static inline float bf16ToFloat(uint16_t h) {
  return f32FromBits((uint32_t)h << 16);
}

static inline uint16_t floatToBf16(float f) {
  uint32_t u = f32Bits(f);
  uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  uint32_t quiet = (u >> 16) | 0x40u;
  return (uint16_t)((u & 0x7fffffffu) > TD_F32_INF ? quiet : rounded);
}

float kernelHalfToFloat(uint16_t h) {
  return halfToFloat(h);
}
uint16_t kernelFloatToHalf(float f) {
  return floatToHalf(f);
}
float kernelBf16ToFloat(uint16_t h) {
  return bf16ToFloat(h);
}
uint16_t kernelFloatToBf16(float f) {
  return floatToBf16(f);
}

/* ---- element functions: widen, compute in float32, round back ---- */
static inline uint16_t halfAdd(uint16_t x, uint16_t y) {
  return floatToHalf(halfToFloat(x) + halfToFloat(y));
}
static inline uint16_t halfMul(uint16_t x, uint16_t y) {
  return floatToHalf(halfToFloat(x) * halfToFloat(y));
}
static inline uint16_t bf16Add(uint16_t x, uint16_t y) {
  return floatToBf16(bf16ToFloat(x) + bf16ToFloat(y));
}
static inline uint16_t bf16Mul(uint16_t x, uint16_t y) {
  return floatToBf16(bf16ToFloat(x) * bf16ToFloat(y));
}

/*
 * max/min give exactly what widening, comparing in float32 (TD_FP_MAX/TD_FP_MIN of kernels.c) and
 * rounding back gives, but on the 16-bit patterns: a non-NaN result is one operand unchanged, and
 * a NaN operand comes back quiet (float32 round trip sets the quiet bit and keeps the rest).
 * Ordering uses the sortable key of a sign-magnitude pattern (negative: all bits flipped;
 * positive: sign bit set), under which -0 sorts just below +0, as the +-0 rule wants.
 */
static inline uint32_t sortKey16(uint32_t h) {
  return (h ^ ((0u - (h >> 15)) | 0x8000u)) & 0xffffu;
}
static inline uint16_t max16(uint16_t x, uint16_t y, uint32_t inf, uint32_t quiet) {
  uint32_t xn = maskIf((x & 0x7fffu) > inf), yn = maskIf((y & 0x7fffu) > inf);
  uint32_t best = pick(maskIf(sortKey16(x) >= sortKey16(y)), x, y);
  return (uint16_t)pick(xn, x | quiet, pick(yn, y | quiet, best));
}
static inline uint16_t min16(uint16_t x, uint16_t y, uint32_t inf, uint32_t quiet) {
  uint32_t xn = maskIf((x & 0x7fffu) > inf), yn = maskIf((y & 0x7fffu) > inf);
  uint32_t best = pick(maskIf(sortKey16(x) <= sortKey16(y)), x, y);
  return (uint16_t)pick(xn, x | quiet, pick(yn, y | quiet, best));
}
static inline uint16_t halfMax(uint16_t x, uint16_t y) {
  return max16(x, y, 0x7c00u, 0x0200u);
}
static inline uint16_t halfMin(uint16_t x, uint16_t y) {
  return min16(x, y, 0x7c00u, 0x0200u);
}
static inline uint16_t bf16Max(uint16_t x, uint16_t y) {
  return max16(x, y, 0x7f80u, 0x0040u);
}
static inline uint16_t bf16Min(uint16_t x, uint16_t y) {
  return min16(x, y, 0x7f80u, 0x0040u);
}

TD_KERNEL_LOOPS(uint16_t, halfAdd, halfAddLoop, halfAddLoopA, halfAddLoopB)
TD_KERNEL_LOOPS(uint16_t, halfMul, halfMulLoop, halfMulLoopA, halfMulLoopB)
TD_KERNEL_LOOPS(uint16_t, halfMax, halfMaxLoop, halfMaxLoopA, halfMaxLoopB)
TD_KERNEL_LOOPS(uint16_t, halfMin, halfMinLoop, halfMinLoopA, halfMinLoopB)
TD_KERNEL_LOOPS(uint16_t, bf16Add, bf16AddLoop, bf16AddLoopA, bf16AddLoopB)
TD_KERNEL_LOOPS(uint16_t, bf16Mul, bf16MulLoop, bf16MulLoopA, bf16MulLoopB)
TD_KERNEL_LOOPS(uint16_t, bf16Max, bf16MaxLoop, bf16MaxLoopA, bf16MaxLoopB)
TD_KERNEL_LOOPS(uint16_t, bf16Min, bf16MinLoop, bf16MinLoopA, bf16MinLoopB)

/*
 * float16 sum/prod/avg with the F16C conversion instructions where the CPU has them (checked once
 * per call): vcvtph2ps is exact and vcvtps2ph with round-to-nearest-even gives the same bits as
 * floatToHalf, NaN included (quiet, payload truncated), so results do not depend on the path.
 * These loops load a block before storing it, so exact aliasing needs no separate form.
 */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(TD_KERNELS_PORTABLE)
#include <immintrin.h>
#define TD_HAVE_F16C_PATH 1

static int f16cUsable(void) {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
}

__attribute__((target("avx2,f16c"))) static inline __m256 halfLoad8(const uint16_t *p) {
  return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}
__attribute__((target("avx2,f16c"))) static inline void halfStore8(uint16_t *p, __m256 v) {
  _mm_storeu_si128((__m128i *)p, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}

__attribute__((target("avx2,f16c"))) static void halfAddF16c(void *dv, const void *av,
                                                             const void *bv, size_t n) {
  uint16_t *d = dv;
  const uint16_t *a = av, *b = bv;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) halfStore8(d + i, _mm256_add_ps(halfLoad8(a + i), halfLoad8(b + i)));
  for (; i < n; i++) d[i] = halfAdd(a[i], b[i]);
}

__attribute__((target("avx2,f16c"))) static void halfMulF16c(void *dv, const void *av,
                                                             const void *bv, size_t n) {
  uint16_t *d = dv;
  const uint16_t *a = av, *b = bv;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) halfStore8(d + i, _mm256_mul_ps(halfLoad8(a + i), halfLoad8(b + i)));
  for (; i < n; i++) d[i] = halfMul(a[i], b[i]);
}

__attribute__((target("avx2,f16c"))) static void halfAvgF16c(uint16_t *p, size_t n, float div) {
  __m256 vdiv = _mm256_set1_ps(div);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) halfStore8(p + i, _mm256_div_ps(halfLoad8(p + i), vdiv));
  for (; i < n; i++) p[i] = floatToHalf(halfToFloat(p[i]) / div);
}
#endif

/* The float16 sum/prod entries: the F16C loop if usable, else the portable loop. */
static void halfAddAny(void *restrict d, const void *restrict a, const void *restrict b, size_t n) {
#ifdef TD_HAVE_F16C_PATH
  if (f16cUsable()) return halfAddF16c(d, a, b, n);
#endif
  halfAddLoop(d, a, b, n);
}
static void halfAddAnyA(void *restrict d, const void *restrict b, size_t n) {
#ifdef TD_HAVE_F16C_PATH
  if (f16cUsable()) return halfAddF16c(d, d, b, n);
#endif
  halfAddLoopA(d, b, n);
}
static void halfAddAnyB(void *restrict d, const void *restrict a, size_t n) {
#ifdef TD_HAVE_F16C_PATH
  if (f16cUsable()) return halfAddF16c(d, a, d, n);
#endif
  halfAddLoopB(d, a, n);
}
static void halfMulAny(void *restrict d, const void *restrict a, const void *restrict b, size_t n) {
#ifdef TD_HAVE_F16C_PATH
  if (f16cUsable()) return halfMulF16c(d, a, b, n);
#endif
  halfMulLoop(d, a, b, n);
}
static void halfMulAnyA(void *restrict d, const void *restrict b, size_t n) {
#ifdef TD_HAVE_F16C_PATH
  if (f16cUsable()) return halfMulF16c(d, d, b, n);
#endif
  halfMulLoopA(d, b, n);
}
static void halfMulAnyB(void *restrict d, const void *restrict a, size_t n) {
#ifdef TD_HAVE_F16C_PATH
  if (f16cUsable()) return halfMulF16c(d, a, d, n);
#endif
  halfMulLoopB(d, a, n);
}

const tdKernelLoops kernelHalfLoops[tpudistNumOps] = {
    [tpudistSum] = {halfAddAny, halfAddAnyA, halfAddAnyB},
    [tpudistProd] = {halfMulAny, halfMulAnyA, halfMulAnyB},
    [tpudistMax] = {halfMaxLoop, halfMaxLoopA, halfMaxLoopB},
    [tpudistMin] = {halfMinLoop, halfMinLoopA, halfMinLoopB},
    [tpudistAvg] = {halfAddAny, halfAddAnyA, halfAddAnyB}};
const tdKernelLoops kernelBf16Loops[tpudistNumOps] = {
    [tpudistSum] = {bf16AddLoop, bf16AddLoopA, bf16AddLoopB},
    [tpudistProd] = {bf16MulLoop, bf16MulLoopA, bf16MulLoopB},
    [tpudistMax] = {bf16MaxLoop, bf16MaxLoopA, bf16MaxLoopB},
    [tpudistMin] = {bf16MinLoop, bf16MinLoopA, bf16MinLoopB},
    [tpudistAvg] = {bf16AddLoop, bf16AddLoopA, bf16AddLoopB}};

/* Avg's last pass, blocked like the reduce loops so that it vectorises at -O2 too. */
void kernelFinishAvgHalf(void *buf, size_t n, int nranks) {
  uint16_t *p = buf;
  float div = (float)nranks;
#ifdef TD_HAVE_F16C_PATH
  if (f16cUsable()) return halfAvgF16c(p, n, div);
#endif
  size_t i = 0;
  for (; i + TD_KERNEL_BLOCK <= n; i += TD_KERNEL_BLOCK)
    for (size_t j = i; j < i + TD_KERNEL_BLOCK; j++) p[j] = floatToHalf(halfToFloat(p[j]) / div);
  for (; i < n; i++) p[i] = floatToHalf(halfToFloat(p[i]) / div);
}

void kernelFinishAvgBf16(void *buf, size_t n, int nranks) {
  uint16_t *p = buf;
  float div = (float)nranks;
  size_t i = 0;
  for (; i + TD_KERNEL_BLOCK <= n; i += TD_KERNEL_BLOCK)
    for (size_t j = i; j < i + TD_KERNEL_BLOCK; j++) p[j] = floatToBf16(bf16ToFloat(p[j]) / div);
  for (; i < n; i++) p[i] = floatToBf16(bf16ToFloat(p[i]) / div);
}
