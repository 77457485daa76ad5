/*
 * kernels.c - reduction kernels for the integer types, float32 and float64 (float16/bfloat16 are
 * in kernels_half.c), the dtype/op names, and the one dispatch: kernelReduce looks up the typed
 * loop set of (dtype, op) once per call and runs the loop that matches the caller's aliasing.
 *
 * Semantics (docs/design.md): integers wrap; signed and unsigned sum/prod share one unsigned loop
 * per width, so nothing overflows a signed type. max/min propagate NaN: a NaN operand is returned
 * as it is (a's if both are NaN); max(-0, +0) = +0 and min(-0, +0) = -0 in either order. Avg
 * reduces as Sum; kernelFinishAvg divides by nranks, for signed integers as C does (truncating
 * toward zero: a wrapped sum of -7 over 2 ranks gives -3), for floats in the element's own
 * precision.
 */
#include "kernels.h"

#include <math.h>
#include <string.h>

#include "kernels_loops.h"

static const char *const dtypeNames[tpudistNumTypes] = {
    [tpudistInt8] = "int8",        [tpudistUint8] = "uint8",     [tpudistInt32] = "int32",
    [tpudistUint32] = "uint32",    [tpudistInt64] = "int64",     [tpudistUint64] = "uint64",
    [tpudistFloat16] = "float16",  [tpudistFloat32] = "float32", [tpudistFloat64] = "float64",
    [tpudistBfloat16] = "bfloat16"};
static const size_t dtypeSizes[tpudistNumTypes] = {
    [tpudistInt8] = 1,    [tpudistUint8] = 1,   [tpudistInt32] = 4,   [tpudistUint32] = 4,
    [tpudistInt64] = 8,   [tpudistUint64] = 8,  [tpudistFloat16] = 2, [tpudistFloat32] = 4,
    [tpudistFloat64] = 8, [tpudistBfloat16] = 2};
static const char *const opNames[tpudistNumOps] = {[tpudistSum] = "sum",
                                                   [tpudistProd] = "prod",
                                                   [tpudistMax] = "max",
                                                   [tpudistMin] = "min",
                                                   [tpudistAvg] = "avg"};

int kernelDtypeValid(int dtype) {
  return dtype >= 0 && dtype < tpudistNumTypes;
}

int kernelOpValid(int op) {
  return op >= 0 && op < tpudistNumOps;
}

size_t kernelDtypeSize(tpudistDataType_t dtype) {
  return kernelDtypeValid((int)dtype) ? dtypeSizes[dtype] : 0;
}

const char *kernelDtypeName(tpudistDataType_t dtype) {
  return kernelDtypeValid((int)dtype) ? dtypeNames[dtype] : "unknown";
}

const char *kernelOpName(tpudistRedOp_t op) {
  return kernelOpValid((int)op) ? opNames[op] : "unknown";
}

/* ---- element functions ---- */
/* Unsigned arithmetic wraps; the cast back to the element type drops the carry (uint8_t operands
 * are promoted to int, whose range holds 255 + 255 and 255 * 255). */
static inline uint8_t u8Add(uint8_t x, uint8_t y) {
  return (uint8_t)(x + y);
}
static inline uint8_t u8Mul(uint8_t x, uint8_t y) {
  return (uint8_t)((unsigned)x * (unsigned)y);
}
static inline uint32_t u32Add(uint32_t x, uint32_t y) {
  return x + y;
}
static inline uint32_t u32Mul(uint32_t x, uint32_t y) {
  return (uint32_t)(x * y);
}
static inline uint64_t u64Add(uint64_t x, uint64_t y) {
  return x + y;
}
static inline uint64_t u64Mul(uint64_t x, uint64_t y) {
  return x * y;
}
#define TD_INT_MAX(x, y) ((x) > (y) ? (x) : (y))
#define TD_INT_MIN(x, y) ((x) < (y) ? (x) : (y))
static inline int8_t i8Max(int8_t x, int8_t y) {
  return TD_INT_MAX(x, y);
}
static inline int8_t i8Min(int8_t x, int8_t y) {
  return TD_INT_MIN(x, y);
}
static inline uint8_t u8Max(uint8_t x, uint8_t y) {
  return TD_INT_MAX(x, y);
}
static inline uint8_t u8Min(uint8_t x, uint8_t y) {
  return TD_INT_MIN(x, y);
}
static inline int32_t i32Max(int32_t x, int32_t y) {
  return TD_INT_MAX(x, y);
}
static inline int32_t i32Min(int32_t x, int32_t y) {
  return TD_INT_MIN(x, y);
}
static inline uint32_t u32Max(uint32_t x, uint32_t y) {
  return TD_INT_MAX(x, y);
}
static inline uint32_t u32Min(uint32_t x, uint32_t y) {
  return TD_INT_MIN(x, y);
}
static inline int64_t i64Max(int64_t x, int64_t y) {
  return TD_INT_MAX(x, y);
}
static inline int64_t i64Min(int64_t x, int64_t y) {
  return TD_INT_MIN(x, y);
}
static inline uint64_t u64Max(uint64_t x, uint64_t y) {
  return TD_INT_MAX(x, y);
}
static inline uint64_t u64Min(uint64_t x, uint64_t y) {
  return TD_INT_MIN(x, y);
}

static inline float f32Add(float x, float y) {
  return x + y;
}
static inline float f32Mul(float x, float y) {
  return x * y;
}
static inline float f32Max(float x, float y) {
  return TD_FP_MAX(x, y);
}
static inline float f32Min(float x, float y) {
  return TD_FP_MIN(x, y);
}
static inline double f64Add(double x, double y) {
  return x + y;
}
static inline double f64Mul(double x, double y) {
  return x * y;
}
static inline double f64Max(double x, double y) {
  return TD_FP_MAX(x, y);
}
static inline double f64Min(double x, double y) {
  return TD_FP_MIN(x, y);
}

/* ---- loops ---- */
TD_KERNEL_LOOPS(uint8_t, u8Add, u8AddLoop, u8AddLoopA, u8AddLoopB)
TD_KERNEL_LOOPS(uint8_t, u8Mul, u8MulLoop, u8MulLoopA, u8MulLoopB)
TD_KERNEL_LOOPS(int8_t, i8Max, i8MaxLoop, i8MaxLoopA, i8MaxLoopB)
TD_KERNEL_LOOPS(int8_t, i8Min, i8MinLoop, i8MinLoopA, i8MinLoopB)
TD_KERNEL_LOOPS(uint8_t, u8Max, u8MaxLoop, u8MaxLoopA, u8MaxLoopB)
TD_KERNEL_LOOPS(uint8_t, u8Min, u8MinLoop, u8MinLoopA, u8MinLoopB)
TD_KERNEL_LOOPS(uint32_t, u32Add, u32AddLoop, u32AddLoopA, u32AddLoopB)
TD_KERNEL_LOOPS(uint32_t, u32Mul, u32MulLoop, u32MulLoopA, u32MulLoopB)
TD_KERNEL_LOOPS(int32_t, i32Max, i32MaxLoop, i32MaxLoopA, i32MaxLoopB)
TD_KERNEL_LOOPS(int32_t, i32Min, i32MinLoop, i32MinLoopA, i32MinLoopB)
TD_KERNEL_LOOPS(uint32_t, u32Max, u32MaxLoop, u32MaxLoopA, u32MaxLoopB)
TD_KERNEL_LOOPS(uint32_t, u32Min, u32MinLoop, u32MinLoopA, u32MinLoopB)
TD_KERNEL_LOOPS(uint64_t, u64Add, u64AddLoop, u64AddLoopA, u64AddLoopB)
TD_KERNEL_LOOPS(uint64_t, u64Mul, u64MulLoop, u64MulLoopA, u64MulLoopB)
TD_KERNEL_LOOPS(int64_t, i64Max, i64MaxLoop, i64MaxLoopA, i64MaxLoopB)
TD_KERNEL_LOOPS(int64_t, i64Min, i64MinLoop, i64MinLoopA, i64MinLoopB)
TD_KERNEL_LOOPS(uint64_t, u64Max, u64MaxLoop, u64MaxLoopA, u64MaxLoopB)
TD_KERNEL_LOOPS(uint64_t, u64Min, u64MinLoop, u64MinLoopA, u64MinLoopB)
TD_KERNEL_LOOPS(float, f32Add, f32AddLoop, f32AddLoopA, f32AddLoopB)
TD_KERNEL_LOOPS(float, f32Mul, f32MulLoop, f32MulLoopA, f32MulLoopB)
TD_KERNEL_LOOPS(float, f32Max, f32MaxLoop, f32MaxLoopA, f32MaxLoopB)
TD_KERNEL_LOOPS(float, f32Min, f32MinLoop, f32MinLoopA, f32MinLoopB)
TD_KERNEL_LOOPS(double, f64Add, f64AddLoop, f64AddLoopA, f64AddLoopB)
TD_KERNEL_LOOPS(double, f64Mul, f64MulLoop, f64MulLoopA, f64MulLoopB)
TD_KERNEL_LOOPS(double, f64Max, f64MaxLoop, f64MaxLoopA, f64MaxLoopB)
TD_KERNEL_LOOPS(double, f64Min, f64MinLoop, f64MinLoopA, f64MinLoopB)

/* Per dtype, indexed by op; Avg runs the Sum loops. */
#define TD_LOOPSET(three, a, b) \
  { three, a, b }
static const tdKernelLoops int8Loops[tpudistNumOps] = {
    [tpudistSum] = TD_LOOPSET(u8AddLoop, u8AddLoopA, u8AddLoopB),
    [tpudistProd] = TD_LOOPSET(u8MulLoop, u8MulLoopA, u8MulLoopB),
    [tpudistMax] = TD_LOOPSET(i8MaxLoop, i8MaxLoopA, i8MaxLoopB),
    [tpudistMin] = TD_LOOPSET(i8MinLoop, i8MinLoopA, i8MinLoopB),
    [tpudistAvg] = TD_LOOPSET(u8AddLoop, u8AddLoopA, u8AddLoopB)};
static const tdKernelLoops uint8Loops[tpudistNumOps] = {
    [tpudistSum] = TD_LOOPSET(u8AddLoop, u8AddLoopA, u8AddLoopB),
    [tpudistProd] = TD_LOOPSET(u8MulLoop, u8MulLoopA, u8MulLoopB),
    [tpudistMax] = TD_LOOPSET(u8MaxLoop, u8MaxLoopA, u8MaxLoopB),
    [tpudistMin] = TD_LOOPSET(u8MinLoop, u8MinLoopA, u8MinLoopB),
    [tpudistAvg] = TD_LOOPSET(u8AddLoop, u8AddLoopA, u8AddLoopB)};
static const tdKernelLoops int32Loops[tpudistNumOps] = {
    [tpudistSum] = TD_LOOPSET(u32AddLoop, u32AddLoopA, u32AddLoopB),
    [tpudistProd] = TD_LOOPSET(u32MulLoop, u32MulLoopA, u32MulLoopB),
    [tpudistMax] = TD_LOOPSET(i32MaxLoop, i32MaxLoopA, i32MaxLoopB),
    [tpudistMin] = TD_LOOPSET(i32MinLoop, i32MinLoopA, i32MinLoopB),
    [tpudistAvg] = TD_LOOPSET(u32AddLoop, u32AddLoopA, u32AddLoopB)};
static const tdKernelLoops uint32Loops[tpudistNumOps] = {
    [tpudistSum] = TD_LOOPSET(u32AddLoop, u32AddLoopA, u32AddLoopB),
    [tpudistProd] = TD_LOOPSET(u32MulLoop, u32MulLoopA, u32MulLoopB),
    [tpudistMax] = TD_LOOPSET(u32MaxLoop, u32MaxLoopA, u32MaxLoopB),
    [tpudistMin] = TD_LOOPSET(u32MinLoop, u32MinLoopA, u32MinLoopB),
    [tpudistAvg] = TD_LOOPSET(u32AddLoop, u32AddLoopA, u32AddLoopB)};
static const tdKernelLoops int64Loops[tpudistNumOps] = {
    [tpudistSum] = TD_LOOPSET(u64AddLoop, u64AddLoopA, u64AddLoopB),
    [tpudistProd] = TD_LOOPSET(u64MulLoop, u64MulLoopA, u64MulLoopB),
    [tpudistMax] = TD_LOOPSET(i64MaxLoop, i64MaxLoopA, i64MaxLoopB),
    [tpudistMin] = TD_LOOPSET(i64MinLoop, i64MinLoopA, i64MinLoopB),
    [tpudistAvg] = TD_LOOPSET(u64AddLoop, u64AddLoopA, u64AddLoopB)};
static const tdKernelLoops uint64Loops[tpudistNumOps] = {
    [tpudistSum] = TD_LOOPSET(u64AddLoop, u64AddLoopA, u64AddLoopB),
    [tpudistProd] = TD_LOOPSET(u64MulLoop, u64MulLoopA, u64MulLoopB),
    [tpudistMax] = TD_LOOPSET(u64MaxLoop, u64MaxLoopA, u64MaxLoopB),
    [tpudistMin] = TD_LOOPSET(u64MinLoop, u64MinLoopA, u64MinLoopB),
    [tpudistAvg] = TD_LOOPSET(u64AddLoop, u64AddLoopA, u64AddLoopB)};
static const tdKernelLoops float32Loops[tpudistNumOps] = {
    [tpudistSum] = TD_LOOPSET(f32AddLoop, f32AddLoopA, f32AddLoopB),
    [tpudistProd] = TD_LOOPSET(f32MulLoop, f32MulLoopA, f32MulLoopB),
    [tpudistMax] = TD_LOOPSET(f32MaxLoop, f32MaxLoopA, f32MaxLoopB),
    [tpudistMin] = TD_LOOPSET(f32MinLoop, f32MinLoopA, f32MinLoopB),
    [tpudistAvg] = TD_LOOPSET(f32AddLoop, f32AddLoopA, f32AddLoopB)};
static const tdKernelLoops float64Loops[tpudistNumOps] = {
    [tpudistSum] = TD_LOOPSET(f64AddLoop, f64AddLoopA, f64AddLoopB),
    [tpudistProd] = TD_LOOPSET(f64MulLoop, f64MulLoopA, f64MulLoopB),
    [tpudistMax] = TD_LOOPSET(f64MaxLoop, f64MaxLoopA, f64MaxLoopB),
    [tpudistMin] = TD_LOOPSET(f64MinLoop, f64MinLoopA, f64MinLoopB),
    [tpudistAvg] = TD_LOOPSET(f64AddLoop, f64AddLoopA, f64AddLoopB)};

static const tdKernelLoops *const dtypeLoops[tpudistNumTypes] = {
    [tpudistInt8] = int8Loops,          [tpudistUint8] = uint8Loops,
    [tpudistInt32] = int32Loops,        [tpudistUint32] = uint32Loops,
    [tpudistInt64] = int64Loops,        [tpudistUint64] = uint64Loops,
    [tpudistFloat16] = kernelHalfLoops, [tpudistFloat32] = float32Loops,
    [tpudistFloat64] = float64Loops,    [tpudistBfloat16] = kernelBf16Loops};

/* dst == a == b: each block of dst is copied aside so that the restrict loop sees two distinct
 * arrays. Rare (x (+) x), so a small stack block is enough. */
static void reduceSelf(const tdKernelLoops *loops, char *dst, size_t n, size_t esize) {
  _Alignas(64) char tmp[4096];
  size_t per = sizeof(tmp) / esize;
  for (size_t i = 0; i < n; i += per) {
    size_t m = TD_MIN(per, n - i);
    memcpy(tmp, dst + i * esize, m * esize);
    loops->into_a(dst + i * esize, tmp, m);
  }
}

void kernelReduce(void *dst, const void *a, const void *b, size_t n, tpudistDataType_t dtype,
                  tpudistRedOp_t op) {
  if (!kernelDtypeValid((int)dtype) || !kernelOpValid((int)op) || n == 0) return;
  const tdKernelLoops *loops = &dtypeLoops[dtype][op];
  if (dst == a && dst == b)
    reduceSelf(loops, dst, n, dtypeSizes[dtype]);
  else if (dst == a)
    loops->into_a(dst, b, n);
  else if (dst == b)
    loops->into_b(dst, a, n);
  else
    loops->three(dst, a, b, n);
}

/* ---- Avg ---- */
static void avgI8(void *buf, size_t n, int nr) {
  int8_t *p = buf;
  for (size_t i = 0; i < n; i++) p[i] = (int8_t)(p[i] / nr);
}
static void avgU8(void *buf, size_t n, int nr) {
  uint8_t *p = buf;
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(p[i] / nr);
}
static void avgI32(void *buf, size_t n, int nr) {
  int32_t *p = buf;
  for (size_t i = 0; i < n; i++) p[i] = p[i] / nr;
}
static void avgU32(void *buf, size_t n, int nr) {
  uint32_t *p = buf;
  for (size_t i = 0; i < n; i++) p[i] = p[i] / (uint32_t)nr;
}
static void avgI64(void *buf, size_t n, int nr) {
  int64_t *p = buf;
  for (size_t i = 0; i < n; i++) p[i] = p[i] / nr;
}
static void avgU64(void *buf, size_t n, int nr) {
  uint64_t *p = buf;
  for (size_t i = 0; i < n; i++) p[i] = p[i] / (uint64_t)nr;
}
/* Blocked like the reduce loops so that they vectorise at -O2 too. */
static void avgF32(void *buf, size_t n, int nr) {
  float *p = buf;
  float d = (float)nr;
  size_t i = 0;
  for (; i + TD_KERNEL_BLOCK <= n; i += TD_KERNEL_BLOCK)
    for (size_t j = i; j < i + TD_KERNEL_BLOCK; j++) p[j] = p[j] / d;
  for (; i < n; i++) p[i] = p[i] / d;
}
static void avgF64(void *buf, size_t n, int nr) {
  double *p = buf;
  double d = (double)nr;
  size_t i = 0;
  for (; i + TD_KERNEL_BLOCK <= n; i += TD_KERNEL_BLOCK)
    for (size_t j = i; j < i + TD_KERNEL_BLOCK; j++) p[j] = p[j] / d;
  for (; i < n; i++) p[i] = p[i] / d;
}

static const tdAvgLoop avgLoops[tpudistNumTypes] = {[tpudistInt8] = avgI8,
                                                    [tpudistUint8] = avgU8,
                                                    [tpudistInt32] = avgI32,
                                                    [tpudistUint32] = avgU32,
                                                    [tpudistInt64] = avgI64,
                                                    [tpudistUint64] = avgU64,
                                                    [tpudistFloat16] = kernelFinishAvgHalf,
                                                    [tpudistFloat32] = avgF32,
                                                    [tpudistFloat64] = avgF64,
                                                    [tpudistBfloat16] = kernelFinishAvgBf16};

void kernelFinishAvg(void *buf, size_t n, tpudistDataType_t dtype, int nranks) {
  if (!kernelDtypeValid((int)dtype) || nranks < 1 || n == 0) return;
  avgLoops[dtype](buf, n, nranks);
}
