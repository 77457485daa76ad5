/*
 * rt_config.h - the one configuration table (runtime base). Every TPU_DIST_* and TPU_* variable is
 * read here, once, parsed by its row's parser into tdConfig, and documented by the same table
 * (tpudist-info -c and docs/env.md are generated from it). Each default is written once, in its
 * row; a value that does not parse or is out of range is reported by configError() (and makes
 * communicator creation fail with that message) instead of being read as something else. No other
 * file calls getenv.
 */
#ifndef TD_RT_CONFIG_H_
#define TD_RT_CONFIG_H_

#include "td_base.h"

typedef struct {
  /* core */
  int timeout_ms;          /* TPU_DIST_TIMEOUT_MS */
  int agree_timeout_ms;    /* TPU_DIST_AGREE_TIMEOUT_MS */
  int debug_level;         /* TPU_DIST_DEBUG: 0 none, 1 WARN, 2 INFO, 3 TRACE */
  unsigned debug_subsys;   /* TPU_DIST_DEBUG_SUBSYS bit mask (TD_SUBSYS_*) */
  int check;               /* TPU_DIST_CHECK */
  int mode;                /* TPU_DIST_MODE: TPUDIST_MODE_STRICT, _DEBUG or _DEFER */
  int defer_ops;           /* TPU_DIST_DEFER_OPS: flush after this many deferred operations */
  long defer_bytes;        /* TPU_DIST_DEFER_BYTES: flush after this many deferred bytes */
  int defer_us;            /* TPU_DIST_DEFER_US: flush this long after the first (0: never) */
  long defer_fuse_bytes;   /* TPU_DIST_DEFER_FUSE_BYTES: largest operation fused by copying */
  int flight_records;      /* TPU_DIST_FLIGHT_RECORDS */
  const char *fr_dump_dir; /* TPU_DIST_FR_DUMP_DIR: JSON flight records (exec_flight.c) */
  int status;              /* TPU_DIST_STATUS: answer health queries (comm_status.c) */
  /* topology and algorithms */
  const char *topology;       /* TPU_DIST_TOPOLOGY */
  const char *algo;           /* TPU_DIST_ALGO */
  const char *sched_dump_dir; /* TPU_DIST_SCHED_DUMP_DIR */
  const char *sched_file;     /* TPU_DIST_SCHED_FILE */
  const char *tpu_accelerator_type, *tpu_topology, *tpu_topology_wrap, *tpu_topology_alt,
      *tpu_chips_per_host_bounds; /* TPU_* runtime variables */
  int megascale_num_slices;       /* MEGASCALE_NUM_SLICES (0 unset) */
  int megascale_slice_id;         /* MEGASCALE_SLICE_ID (-1 unset) */
  int dcn_gbps;                   /* TPU_DIST_DCN_GBPS: host NIC, Gbit/s (0: the default) */
  int dcn_latency_us;             /* TPU_DIST_DCN_LATENCY_US: per message (< 0: the default) */
  int dcn_flows;                  /* TPU_DIST_DCN_FLOWS: pairs per NIC direction (0: no limit) */
  int shm_sync_ns;     /* TPU_DIST_SHM_SYNC_NS: shm synchronisation step (< 0: default) */
  int numa_factor_pct; /* TPU_DIST_NUMA_FACTOR_PCT: copy cost across NUMA nodes (< 0: default) */
  /* bootstrap */
  const char *comm_id;          /* TPU_DIST_COMM_ID host:port */
  const char *hostid;           /* TPU_DIST_HOSTID */
  const char *comm_secret;      /* TPU_DIST_COMM_SECRET: key of TPU_DIST_COMM_ID jobs */
  const char *comm_secret_file; /* TPU_DIST_COMM_SECRET_FILE: the same, from a private file */
  int handshake_ms;             /* TPU_DIST_HANDSHAKE_MS: per-connection handshake deadline */
  int max_handshakes;           /* TPU_DIST_MAX_HANDSHAKES: handshakes in progress per listener */
  int env_rank, env_world_size; /* RANK, WORLD_SIZE (-1 unset) */
  int ompi_rank, ompi_size;     /* OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE (-1 unset) */
  int slurm_procid, slurm_ntasks, slurm_localid; /* SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID */
  /* transports and executor */
  const char *transports;    /* TPU_DIST_TRANSPORTS */
  const char *socket_ifname; /* TPU_DIST_SOCKET_IFNAME */
  int socket_nstreams;       /* TPU_DIST_SOCKET_NSTREAMS: TCP connections per peer pair */
  int tls;                   /* TPU_DIST_TLS: TLS 1.3 on the socket transport's streams */
  const char *tls_cert;      /* TPU_DIST_TLS_CERT: PEM certificate (chain) */
  const char *tls_key;       /* TPU_DIST_TLS_KEY: its private key */
  const char *tls_ca;        /* TPU_DIST_TLS_CA: PEM CAs a peer's certificate chains to */
  long chunk_bytes;          /* TPU_DIST_CHUNK_BYTES: pipeline piece size (0: from the caches) */
  int bind;                  /* TPU_DIST_BIND: TD_BIND_* (host.h) */
  int max_pieces;            /* TPU_DIST_MAX_PIECES: pieces per step at most */
  int small_bytes;           /* TPU_DIST_SMALL_BYTES: slot all-reduce up to this size */
  int shm_cma;               /* TPU_DIST_SHM_CMA: single-copy reads */
  long shm_buf_bytes;        /* TPU_DIST_SHM_BUF_BYTES: largest ring per pair and direction */
  long shm_rank_bytes;       /* TPU_DIST_SHM_RANK_BYTES: one rank's rings in all */
  int spin_us;               /* TPU_DIST_SPIN_US: spin before yielding */
  int progress_thread;       /* TPU_DIST_PROGRESS_THREAD */
  long shm_cma_min_bytes;    /* TPU_DIST_SHM_CMA_MIN_BYTES: smallest message read with CMA */
  const char *fault;         /* TPU_DIST_FAULT: fault injection (transport/fault) */
  int shm_cma_pull_ms;       /* TPU_DIST_SHM_CMA_PULL_MS: copy out unmatched CMA messages after */
  const char *ofi_provider;  /* TPU_DIST_OFI_PROVIDER: libfabric provider ("": an RDMA one) */
  long ofi_rma_min_bytes; /* TPU_DIST_OFI_RMA_MIN_BYTES: smallest message read by RMA (0 never) */
  int ofi_mr_cache;       /* TPU_DIST_OFI_MR_CACHE: memory registrations kept for reuse */
} tdConfig;

struct tdConfigVar;
/* Parses text (never NULL; "" = unset) into the field at dst; writes a reason into err on failure.
 */
typedef int (*tdConfigParser)(const struct tdConfigVar *v, const char *text, void *dst, char *err);

typedef struct tdConfigVar {
  const char *name; /* environment variable */
  tdConfigParser parse;
  const char *dflt;   /* default as text ("" = unset) */
  size_t offset;      /* in tdConfig */
  long long min, max; /* integer rows: accepted range (0, 0 for the other rows) */
  const char *doc;    /* one line */
} tdConfigVar;

extern const tdConfigVar tdConfigTable[];

/* Parsed once (thread-safe, idempotent); later calls return the same object. A variable whose
 * value is not valid keeps its default there, and configError() says which and why. */
const tdConfig *configGet(void);
/* TPUDIST_MODE_* for "strict" / "debug" (any case), -1 for anything else; and back. */
int configModeParse(const char *name);
const char *configModeName(int mode);
/* NULL, or the first invalid variable ("TPU_DIST_TIMEOUT_MS=abc: not an integer"). */
const char *configError(void);
/* Writes the table (name, default, current value, doc) as text or markdown. */
void configPrint(FILE *f, int markdown);

#endif /* TD_RT_CONFIG_H_ */
