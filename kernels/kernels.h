/*
 * kernels.h - reduction kernels per dtype x op, pure functions shared by the executor and the
 * simulator's functional mode. float16/bfloat16 compute in float32 and round back (nearest even);
 * integers wrap (computed unsigned); max/min propagate NaN; Avg reduces as Sum and is finished by
 * kernelFinishAvg (integers: truncating division).
 */
#ifndef TD_KERNELS_H_
#define TD_KERNELS_H_

#include "td_base.h"

/* Bytes per element; 0 for an unknown dtype. */
size_t kernelDtypeSize(tpudistDataType_t dtype);
const char *kernelDtypeName(tpudistDataType_t dtype);
const char *kernelOpName(tpudistRedOp_t op);
/* 1 if dtype/op are known values. */
int kernelDtypeValid(int dtype);
int kernelOpValid(int op);

/* dst[i] = a[i] (+) b[i] for i < n. dst may alias a or b exactly (not partially). */
void kernelReduce(void *dst, const void *a, const void *b, size_t n, tpudistDataType_t dtype,
                  tpudistRedOp_t op);
/* buf[i] /= nranks (Avg's last step). */
void kernelFinishAvg(void *buf, size_t n, tpudistDataType_t dtype, int nranks);

/* Conversions used by kernels and tests. */
float kernelHalfToFloat(uint16_t h);
uint16_t kernelFloatToHalf(float f);
float kernelBf16ToFloat(uint16_t h);
uint16_t kernelFloatToBf16(float f);

#endif /* TD_KERNELS_H_ */
