/*
 * config.h - the one configuration table. Every TPU_DIST_* and TPU_* variable is read here, once
 * (configLoad), parsed into tdConfig, and documented by the same table (tpudist-info -c and
 * docs/env.md are generated from it). No other file calls getenv.
 */
#ifndef TD_CONFIG_H_
#define TD_CONFIG_H_

#include "td_base.h"

typedef struct {
  /* core */
  int timeout_ms;        /* TPU_DIST_TIMEOUT_MS */
  int debug_level;       /* TPU_DIST_DEBUG: 0 none, 1 WARN, 2 INFO, 3 TRACE */
  unsigned debug_subsys; /* TPU_DIST_DEBUG_SUBSYS bit mask (TD_SUBSYS_*) */
  int check;             /* TPU_DIST_CHECK */
  int flight_records;    /* TPU_DIST_FLIGHT_RECORDS */
  /* topology and algorithms */
  const char *topology;       /* TPU_DIST_TOPOLOGY */
  const char *algo;           /* TPU_DIST_ALGO */
  const char *sched_dump_dir; /* TPU_DIST_SCHED_DUMP_DIR */
  const char *sched_file;     /* TPU_DIST_SCHED_FILE */
  const char *tpu_accelerator_type, *tpu_topology, *tpu_topology_wrap, *tpu_topology_alt,
      *tpu_chips_per_host_bounds; /* TPU_* runtime variables */
  /* bootstrap */
  const char *comm_id;          /* TPU_DIST_COMM_ID host:port */
  const char *hostid;           /* TPU_DIST_HOSTID */
  const char *comm_secret;      /* TPU_DIST_COMM_SECRET: key of TPU_DIST_COMM_ID jobs */
  const char *comm_secret_file; /* TPU_DIST_COMM_SECRET_FILE: the same, from a private file */
  int handshake_ms;             /* TPU_DIST_HANDSHAKE_MS: per-connection handshake deadline */
  int max_handshakes;           /* TPU_DIST_MAX_HANDSHAKES: handshakes in progress per listener */
  int env_rank, env_world_size; /* RANK, WORLD_SIZE (-1 unset) */
  /* transports and executor */
  const char *transports;    /* TPU_DIST_TRANSPORTS */
  const char *socket_ifname; /* TPU_DIST_SOCKET_IFNAME */
  long chunk_bytes;          /* TPU_DIST_CHUNK_BYTES: pipeline piece size */
  int max_pieces;            /* TPU_DIST_MAX_PIECES: pieces per step at most */
  int small_bytes;           /* TPU_DIST_SMALL_BYTES: slot all-reduce up to this size */
  int shm_cma;               /* TPU_DIST_SHM_CMA: single-copy reads */
  long shm_buf_bytes;        /* TPU_DIST_SHM_BUF_BYTES: per-pair ring size */
  int spin_us;               /* TPU_DIST_SPIN_US: spin before yielding */
  int progress_thread;       /* TPU_DIST_PROGRESS_THREAD */
  long shm_cma_min_bytes;    /* TPU_DIST_SHM_CMA_MIN_BYTES: smallest message read with CMA */
  const char *fault;         /* TPU_DIST_FAULT: fault injection (transport/fault) */
  int shm_cma_pull_ms;       /* TPU_DIST_SHM_CMA_PULL_MS: copy out unmatched CMA messages after */
} tdConfig;

typedef enum { TD_CFG_INT, TD_CFG_STR } tdConfigType;

typedef struct {
  const char *name; /* environment variable */
  tdConfigType type;
  const char *dflt; /* default as text ("" = unset) */
  size_t offset;    /* in tdConfig */
  const char *doc;  /* one line */
} tdConfigVar;

extern const tdConfigVar tdConfigTable[];

/* Parsed once (thread-safe, idempotent); later calls return the same object. */
const tdConfig *configGet(void);
/* Writes the table (name, default, current value, doc) as text or markdown. */
void configPrint(FILE *f, int markdown);

#endif /* TD_CONFIG_H_ */
