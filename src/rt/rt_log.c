/*
 * rt_log.c - logging to stderr with pid, level, subsystem and source line; the subsystem names.
 */
#include "rt_log.h"

#include <stdarg.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "rt_config.h"

/* Indexed by bit position of TD_SUBSYS_*. */
static const char *const kSubsysNames[] = {"INIT", "BOOT", "COLL", "EXEC", "SHM",
                                           "SOCK", "IB",   "TOPO", "TUNE"};

const char *logSubsysName(tdSubsys subsys) {
  for (unsigned i = 0; i < TD_ARRAY_SIZE(kSubsysNames); i++)
    if ((unsigned)subsys == 1u << i) return kSubsysNames[i];
  return "?";
}

int logSubsysParse(const char *name, size_t n) {
  while (n && (*name == ' ' || *name == '\t')) name++, n--;
  while (n && (name[n - 1] == ' ' || name[n - 1] == '\t')) n--;
  for (unsigned i = 0; i < TD_ARRAY_SIZE(kSubsysNames); i++)
    if (strlen(kSubsysNames[i]) == n && !strncasecmp(name, kSubsysNames[i], n)) return (int)i;
  return -1;
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
  fprintf(stderr, "tpu_dist %d %s %s %s:%d %s\n", (int)getpid(), lv[level], logSubsysName(subsys),
          file, line, msg);
}
