/*
 * rt_log.c - logging to stderr with pid, level, subsystem and source line.
 */
#include "rt_log.h"

#include <stdarg.h>
#include <unistd.h>

#include "rt_config.h"

int logEnabled(tdLogLevel level, tdSubsys subsys) {
  const tdConfig *c = configGet();
  if (level == TD_LOG_ERROR) return 1;
  return c->debug_level >= (int)level && (c->debug_subsys & (unsigned)subsys);
}

void logPrint(tdLogLevel level, tdSubsys subsys, const char *file, int line, const char *fmt, ...) {
  static const char *lv[] = {"ERROR", "WARN", "INFO", "TRACE"};
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  fprintf(stderr, "tpu_dist %d %s %s %s:%d %s\n", (int)getpid(), lv[level], logSubsysName(subsys),
          file, line, msg);
}
