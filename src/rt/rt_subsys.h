/*
 * rt_subsys.h - the subsystems of logging (TD_SUBSYS_*) and their one name table ("INIT" ...),
 * runtime base. Used by logging (rt_log.h) and by the configuration's TPU_DIST_DEBUG_SUBSYS.
 */
#ifndef TD_RT_SUBSYS_H_
#define TD_RT_SUBSYS_H_

#include "td_base.h"

typedef enum {
  TD_SUBSYS_INIT = 1 << 0,
  TD_SUBSYS_BOOT = 1 << 1,
  TD_SUBSYS_COLL = 1 << 2,
  TD_SUBSYS_EXEC = 1 << 3,
  TD_SUBSYS_SHM = 1 << 4,
  TD_SUBSYS_SOCK = 1 << 5,
  TD_SUBSYS_IB = 1 << 6,
  TD_SUBSYS_TOPO = 1 << 7,
  TD_SUBSYS_TUNE = 1 << 8,
} tdSubsys;

/* The one subsystem-name table: "INIT" ... "TUNE" for a TD_SUBSYS_* bit. */
const char *logSubsysName(tdSubsys subsys);
/* Bit index of the subsystem named by the n bytes at name (case-insensitive, blanks around it
 * ignored), or -1. */
int logSubsysParse(const char *name, size_t n);

#endif /* TD_RT_SUBSYS_H_ */
