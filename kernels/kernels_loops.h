/*
 * kernels_loops.h - private to kernels.c and kernels_half.c: the shape of one typed reduction
 * loop set and the macro that defines it.
 *
 * Each (dtype, op) has three loops with restrict-qualified parameters so that gcc -O3 vectorises
 * them without runtime alias checks: `three` (dst, a, b all distinct), `into_a` (dst is a:
 * d = d (+) b) and `into_b` (dst is b: d = a (+) d). kernelReduce looks at the pointers once per
 * call and picks one; nothing switches per element.
 */
#ifndef TD_KERNELS_LOOPS_H_
#define TD_KERNELS_LOOPS_H_

#include <math.h>
#include <stddef.h>

#include "kernels.h"

/* Each loop is compiled twice, for AVX2 and for the baseline, and picked at load time (ifunc):
 * the 16-bit conversions and 64-bit compares gain about 2x from AVX2; memory-bound loops are
 * unchanged. TD_KERNELS_PORTABLE (a test build) keeps the baseline code only. */
#if defined(__has_attribute)
#if __has_attribute(target_clones)
#define TD_HAVE_TARGET_CLONES 1
#endif
#endif
/* target_clones needs ifunc: x86-64 with glibc (math.h above has defined __GLIBC__ there). */
#if defined(__x86_64__) && defined(__GLIBC__) && defined(TD_HAVE_TARGET_CLONES) && \
    !defined(TD_KERNELS_PORTABLE)
#define TD_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define TD_CLONES
#endif

typedef void (*tdLoop3)(void *restrict d, const void *restrict a, const void *restrict b, size_t n);
typedef void (*tdLoop2)(void *restrict d, const void *restrict other, size_t n);
typedef void (*tdAvgLoop)(void *buf, size_t n, int nranks);

typedef struct {
  tdLoop3 three;
  tdLoop2 into_a;
  tdLoop2 into_b;
} tdKernelLoops;

/* Elements per block of the loops below: a fixed-count inner loop that gcc vectorises even at
 * -O2 (its "very cheap" cost model wants trip counts that are a multiple of the vector width);
 * the tail runs element by element. */
#define TD_KERNEL_BLOCK 64

/* Defines the three loops of one (element type T, binary function FN) under the names given
 * (written out in full at each use so that grep finds them). FN(x, y) returns T. */
#define TD_KERNEL_LOOPS(T, FN, NAME3, NAME_A, NAME_B)                                              \
  TD_CLONES static void NAME3(void *restrict dv, const void *restrict av, const void *restrict bv, \
                              size_t n) {                                                          \
    T *d = dv;                                                                                     \
    const T *a = av, *b = bv;                                                                      \
    size_t i = 0;                                                                                  \
    for (; i + TD_KERNEL_BLOCK <= n; i += TD_KERNEL_BLOCK)                                         \
      for (size_t j = i; j < i + TD_KERNEL_BLOCK; j++) d[j] = FN(a[j], b[j]);                      \
    for (; i < n; i++) d[i] = FN(a[i], b[i]);                                                      \
  }                                                                                                \
  TD_CLONES static void NAME_A(void *restrict dv, const void *restrict bv, size_t n) {             \
    T *d = dv;                                                                                     \
    const T *b = bv;                                                                               \
    size_t i = 0;                                                                                  \
    for (; i + TD_KERNEL_BLOCK <= n; i += TD_KERNEL_BLOCK)                                         \
      for (size_t j = i; j < i + TD_KERNEL_BLOCK; j++) d[j] = FN(d[j], b[j]);                      \
    for (; i < n; i++) d[i] = FN(d[i], b[i]);                                                      \
  }                                                                                                \
  TD_CLONES static void NAME_B(void *restrict dv, const void *restrict av, size_t n) {             \
    T *d = dv;                                                                                     \
    const T *a = av;                                                                               \
    size_t i = 0;                                                                                  \
    for (; i + TD_KERNEL_BLOCK <= n; i += TD_KERNEL_BLOCK)                                         \
      for (size_t j = i; j < i + TD_KERNEL_BLOCK; j++) d[j] = FN(a[j], d[j]);                      \
    for (; i < n; i++) d[i] = FN(a[i], d[i]);                                                      \
  }

/* Floating max/min: a NaN operand wins (x first); equal values (only +-0 can differ in bits)
 * give +0 for max and -0 for min, so the result does not depend on operand order. The quiet
 * comparisons (isgreater, isless) cannot trap, which lets gcc turn the whole chain into selects
 * and vectorise it. */
#define TD_FP_MAX(x, y)        \
  ((x) != (x)            ? (x) \
   : (y) != (y)          ? (y) \
   : isgreater((x), (y)) ? (x) \
   : isgreater((y), (x)) ? (y) \
   : signbit(x)          ? (y) \
                         : (x))
#define TD_FP_MIN(x, y)     \
  ((x) != (x)         ? (x) \
   : (y) != (y)       ? (y) \
   : isless((x), (y)) ? (x) \
   : isless((y), (x)) ? (y) \
   : signbit(x)       ? (x) \
                      : (y))

/* kernels_half.c: loops for float16 and bfloat16, indexed by tpudistRedOp_t, and their Avg. */
extern const tdKernelLoops kernelHalfLoops[tpudistNumOps];
extern const tdKernelLoops kernelBf16Loops[tpudistNumOps];
void kernelFinishAvgHalf(void *buf, size_t n, int nranks);
void kernelFinishAvgBf16(void *buf, size_t n, int nranks);

#endif /* TD_KERNELS_LOOPS_H_ */
