/*
 * log.c - logging to stderr with host, pid and subsystem.
 */
#include "log.h"

#include <stdarg.h>
#include <unistd.h>

#include "config.h"

static const char *subsysName(tdSubsys s) {
  switch (s) {
    case TD_SUBSYS_INIT:
      return "INIT";
    case TD_SUBSYS_BOOT:
      return "BOOT";
    case TD_SUBSYS_COLL:
      return "COLL";
    case TD_SUBSYS_EXEC:
      return "EXEC";
    case TD_SUBSYS_SHM:
      return "SHM";
    case TD_SUBSYS_SOCK:
      return "SOCK";
    case TD_SUBSYS_IB:
      return "IB";
    case TD_SUBSYS_TOPO:
      return "TOPO";
    case TD_SUBSYS_TUNE:
      return "TUNE";
  }
  return "?";
}

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
  fprintf(stderr, "tpu_dist %d %s %s %s:%d %s\n", (int)getpid(), lv[level], subsysName(subsys),
          file, line, msg);
}
