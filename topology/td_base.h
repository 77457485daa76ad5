/*
 * td_base.h - the few things every layer shares: the result type (tpudistResult_t from the public
 * header), the check macros, and error messages written into a caller's buffer.
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
