/*
 * td_base.h - the project-wide base, below every layer: the result type (tpudistResult_t from the
 * public header), the check macros, small arithmetic and array helpers, one growth helper for
 * arrays that grow by doubling, and error messages written into a caller's buffer.
 *
 * Pure layers (topology/, collectives/) never log and never read the environment: a function that
 * can fail takes `char *err` (TD_ERRLEN bytes, may be NULL) and writes a one-line reason there.
 */
#ifndef TD_BASE_H_
#define TD_BASE_H_

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tpu_dist.h"

#define TD_ERRLEN 256

/* Return the result of call if it is not success. */
#define TD_CHECK(call)                                         \
  do {                                                         \
    tpudistResult_t td_check_res_ = (call);                    \
    if (td_check_res_ != tpudistSuccess) return td_check_res_; \
  } while (0)

/* Store the result of call in res and jump to label if it is not success. */
#define TD_CHECK_GOTO(call, res, label)      \
  do {                                       \
    (res) = (call);                          \
    if ((res) != tpudistSuccess) goto label; \
  } while (0)

#define TD_MIN(a, b) ((a) < (b) ? (a) : (b))
#define TD_MAX(a, b) ((a) > (b) ? (a) : (b))
#define TD_DIV_UP(a, b) (((a) + (b)-1) / (b))
#define TD_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Makes room for at least need elements of esize bytes in *arr (capacity *cap elements), doubling
 * from min_cap; new elements are not initialised. On failure *arr and *cap are unchanged. Returns
 * 0 on success, -1 when out of memory or the size overflows. */
static inline int tdGrow(void *arr, size_t *cap, size_t need, size_t esize, size_t min_cap) {
  if (need <= *cap) return 0;
  size_t n = *cap ? *cap : (min_cap ? min_cap : 1);
  while (n < need) {
    if (n > SIZE_MAX / 2) return -1;
    n *= 2;
  }
  if (esize && n > SIZE_MAX / esize) return -1;
  void *p = realloc(*(void **)arr, n * esize);
  if (!p) return -1;
  *(void **)arr = p;
  *cap = n;
  return 0;
}

/* Writes a formatted message into err (if not NULL) and returns res. */
static inline tpudistResult_t tdErr(char *err, tpudistResult_t res, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline tpudistResult_t tdErr(char *err, tpudistResult_t res, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, TD_ERRLEN, fmt, ap);
    va_end(ap);
  }
  return res;
}

#endif /* TD_BASE_H_ */
