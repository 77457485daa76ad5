/*
 * config.h - the configuration table: every TPU_DIST_* and TPU_* variable, read once from the
 * environment (configGet) into one struct. The table (config.c) is also the source of
 * `tpudist-info -c` and docs/env.md. Runtime only: pure layers take these values as arguments.
 */
#ifndef TD_CONFIG_H_
#define TD_CONFIG_H_

#include <stdio.h>

typedef struct {
  int timeout_ms;
  int debug_level;       /* 0 errors only, 1 WARN, 2 INFO, 3 TRACE */
  unsigned debug_subsys; /* tdSubsys mask */
  int check;
  const char *topology;
  const char *algo;
  const char *sched_dump_dir;
  const char *sched_file;
  const char *tpu_accelerator_type;
  const char *tpu_topology;
  const char *tpu_topology_wrap;
  const char *tpu_topology_alt;
  const char *tpu_chips_per_host_bounds;
  const char *comm_id;
  const char *hostid;
  int env_rank;
  int env_world_size;
  const char *transports;
  const char *socket_ifname;
  long chunk_bytes;
  int shm_cma;
  long shm_buf_bytes;
  int spin_us;
  int progress_thread;
} tdConfig;

typedef enum { TD_CFG_INT = 0, TD_CFG_STR = 1 } tdConfigType;

typedef struct {
  const char *name;
  tdConfigType type;
  const char *dflt;
  size_t offset; /* into tdConfig */
  const char *doc;
} tdConfigVar;

/* The table, terminated by an entry with name == NULL. */
extern const tdConfigVar tdConfigTable[];

/* The configuration, read from the environment on first call (thread-safe), then fixed. */
const tdConfig *configGet(void);
/* The table as text (one line per variable) or as a markdown table (docs/env.md). */
void configPrint(FILE *f, int markdown);

#endif /* TD_CONFIG_H_ */
