/*
 * rt_log.h - logging by level and subsystem (TPU_DIST_DEBUG, TPU_DIST_DEBUG_SUBSYS), runtime base.
 * Errors are always printed (once, where first seen: rt_error.h records them); WARN/INFO/TRACE
 * when enabled. Runtime only: pure layers never log.
 */
#ifndef TD_RT_LOG_H_
#define TD_RT_LOG_H_

#include "rt_subsys.h"
#include "td_base.h"

typedef enum { TD_LOG_ERROR = 0, TD_LOG_WARN = 1, TD_LOG_INFO = 2, TD_LOG_TRACE = 3 } tdLogLevel;

int logEnabled(tdLogLevel level, tdSubsys subsys);
void logPrint(tdLogLevel level, tdSubsys subsys, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#define TD_ERROR(subsys, ...) logPrint(TD_LOG_ERROR, subsys, __FILE__, __LINE__, __VA_ARGS__)
#define TD_WARN(subsys, ...)                                          \
  do {                                                                \
    if (logEnabled(TD_LOG_WARN, subsys))                              \
      logPrint(TD_LOG_WARN, subsys, __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
#define TD_INFO(subsys, ...)                                          \
  do {                                                                \
    if (logEnabled(TD_LOG_INFO, subsys))                              \
      logPrint(TD_LOG_INFO, subsys, __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
#define TD_TRACE(subsys, ...)                                          \
  do {                                                                 \
    if (logEnabled(TD_LOG_TRACE, subsys))                              \
      logPrint(TD_LOG_TRACE, subsys, __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)

#endif /* TD_RT_LOG_H_ */
