/*
 * rt_subsys.c - the subsystem names of logging (rt_subsys.h): a leaf, so that the configuration
 * (which parses TPU_DIST_DEBUG_SUBSYS) and logging (which reads the configuration) both use it.
 */
#include "rt_subsys.h"

#include <string.h>
#include <strings.h>

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
