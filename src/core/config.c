/*
 * config.c - the configuration table and its one reader. Add a variable by adding a field to
 * tdConfig and one row here; docs/env.md is regenerated with `tools/tpudist-info -c --markdown`.
 */
#include "config.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define TD_OFF(field) offsetof(tdConfig, field)

const tdConfigVar tdConfigTable[] = {
    {"TPU_DIST_TIMEOUT_MS", TD_CFG_INT, "300000", TD_OFF(timeout_ms),
     "Bound on every wait (ms); a timeout names op, sequence number and peer."},
    {"TPU_DIST_DEBUG", TD_CFG_STR, "", TD_OFF(debug_level),
     "Log level: WARN, INFO or TRACE (default: errors only)."},
    {"TPU_DIST_DEBUG_SUBSYS", TD_CFG_STR, "", TD_OFF(debug_subsys),
     "Comma list of INIT,BOOT,COLL,EXEC,SHM,SOCK,IB,TOPO,TUNE (default all)."},
    {"TPU_DIST_CHECK", TD_CFG_INT, "0", TD_OFF(check),
     "1: ranks compare op, dtype, count, root and sequence before each collective."},
    {"TPU_DIST_FAULT", TD_CFG_STR, "", TD_OFF(fault),
     "Fault injection for tests: delay=MS,drop=N,corrupt=N[,rank=R] (see src/transport/fault)."},
    {"TPU_DIST_FLIGHT_RECORDS", TD_CFG_INT, "16", TD_OFF(flight_records),
     "Operations per communicator the flight recorder keeps and logs when it fails (0: off)."},
    {"TPU_DIST_TOPOLOGY", TD_CFG_STR, "", TD_OFF(topology),
     "Logical torus AxB[xC[xD]][:wrap=1,1,0][:twist]; overrides TPU_* variables; unset = flat."},
    {"TPU_DIST_ALGO", TD_CFG_STR, "", TD_OFF(algo),
     "Per-collective algorithm override, e.g. allreduce=torus,alltoall=pairwise."},
    {"TPU_DIST_SCHED_DUMP_DIR", TD_CFG_STR, "", TD_OFF(sched_dump_dir),
     "Directory to dump every new schedule to (text format v1)."},
    {"TPU_DIST_SCHED_FILE", TD_CFG_STR, "", TD_OFF(sched_file),
     "Schedule file to run instead of generated schedules (one per rank)."},
    {"TPU_ACCELERATOR_TYPE", TD_CFG_STR, "", TD_OFF(tpu_accelerator_type),
     "TPU runtime: accelerator type (e.g. v5p-128); selects the generation's wrap rule."},
    {"TPU_TOPOLOGY", TD_CFG_STR, "", TD_OFF(tpu_topology),
     "TPU runtime: slice topology, e.g. 4x4x4."},
    {"TPU_TOPOLOGY_WRAP", TD_CFG_STR, "", TD_OFF(tpu_topology_wrap),
     "TPU runtime: per-axis wrap, e.g. true,true,true."},
    {"TPU_TOPOLOGY_ALT", TD_CFG_STR, "", TD_OFF(tpu_topology_alt),
     "TPU runtime: 'true' for a twisted torus."},
    {"TPU_CHIPS_PER_HOST_BOUNDS", TD_CFG_STR, "", TD_OFF(tpu_chips_per_host_bounds),
     "TPU runtime: chips per host per axis, e.g. 2,2,1 (ranks are host-blocked)."},
    {"TPU_DIST_COMM_ID", TD_CFG_STR, "", TD_OFF(comm_id),
     "host:port of rank 0 for bootstrap without MPI (as NCCL_COMM_ID)."},
    {"TPU_DIST_HOSTID", TD_CFG_STR, "", TD_OFF(hostid),
     "Overrides the host identity (hostname+boot id+netns hash) that decides who shares memory."},
    {"TPU_DIST_COMM_SECRET", TD_CFG_STR, "", TD_OFF(comm_secret),
     "Job secret of TPU_DIST_COMM_ID jobs (the handshake key is derived from it; without it or "
     "TPU_DIST_COMM_SECRET_FILE anyone who can reach host:port can join)."},
    {"TPU_DIST_COMM_SECRET_FILE", TD_CFG_STR, "", TD_OFF(comm_secret_file),
     "File holding the job secret of TPU_DIST_COMM_ID jobs (read once; refused if group or others "
     "may read it)."},
    {"TPU_DIST_HANDSHAKE_MS", TD_CFG_INT, "5000", TD_OFF(handshake_ms),
     "A connection that has not finished its authentication handshake in this many ms is "
     "dropped."},
    {"TPU_DIST_MAX_HANDSHAKES", TD_CFG_INT, "64", TD_OFF(max_handshakes),
     "Connections kept in their handshake at once per listener; a new one beyond drops the "
     "oldest that has not sent its hello (bounds a flood's memory and descriptors)."},
    {"RANK", TD_CFG_INT, "-1", TD_OFF(env_rank), "Rank for tpudistCommInitEnv (torchrun style)."},
    {"WORLD_SIZE", TD_CFG_INT, "-1", TD_OFF(env_world_size),
     "Rank count for tpudistCommInitEnv (torchrun style)."},
    {"TPU_DIST_TRANSPORTS", TD_CFG_STR, "", TD_OFF(transports),
     "Comma list overriding the transport order, e.g. socket or self,shm,socket."},
    {"TPU_DIST_SOCKET_IFNAME", TD_CFG_STR, "", TD_OFF(socket_ifname),
     "Interface (prefix) for TCP; loopback is allowed (default: first up interface, else lo)."},
    {"TPU_DIST_CHUNK_BYTES", TD_CFG_INT, "131072", TD_OFF(chunk_bytes),
     "Pipeline piece size in bytes: the executor slices each step into pieces of this size."},
    {"TPU_DIST_MAX_PIECES", TD_CFG_INT, "32", TD_OFF(max_pieces),
     "Most pieces per step: longer steps get proportionally larger pieces (0: no limit)."},
    {"TPU_DIST_SMALL_BYTES", TD_CFG_INT, "2048", TD_OFF(small_bytes),
     "All-reduces of at most this many bytes, and all-gathers and all-to-alls of blocks this small "
     "(2104 at most), among 2-8 ranks of one host use the shm slots (flag in the data) instead of "
     "a schedule (0: never)."},
    {"TPU_DIST_SHM_CMA", TD_CFG_INT, "1", TD_OFF(shm_cma),
     "1: large shm messages are read single-copy with process_vm_readv (falls back if refused)."},
    {"TPU_DIST_SHM_BUF_BYTES", TD_CFG_INT, "1048576", TD_OFF(shm_buf_bytes),
     "Per-pair shared-memory ring size in bytes."},
    {"TPU_DIST_SPIN_US", TD_CFG_INT, "0", TD_OFF(spin_us),
     "Microseconds a wait spins before it starts yielding (sched_yield for 2 ms, then short "
     "sleeps). Ignored (0) when the ranks on this host outnumber the cores this process may use."},
    {"TPU_DIST_PROGRESS_THREAD", TD_CFG_INT, "1", TD_OFF(progress_thread),
     "1: a background progress thread per communicator drives non-blocking requests."},
    {"TPU_DIST_SHM_CMA_MIN_BYTES", TD_CFG_INT, "16384", TD_OFF(shm_cma_min_bytes),
     "Smallest shm message sent single-copy (process_vm_readv); smaller ones go through the ring "
     "(sends of reducing collectives: at least 64 KiB)."},
    {"TPU_DIST_SHM_CMA_PULL_MS", TD_CFG_INT, "5", TD_OFF(shm_cma_pull_ms),
     "A single-copy shm message still unmatched after this many ms is copied out, so its send "
     "completes."},
    {NULL, TD_CFG_INT, NULL, 0, NULL},
};

static tdConfig gConfig;
static pthread_once_t gOnce = PTHREAD_ONCE_INIT;

static int parseLevel(const char *v) {
  if (!v || !*v) return 0;
  if (!strcasecmp(v, "WARN")) return 1;
  if (!strcasecmp(v, "INFO")) return 2;
  if (!strcasecmp(v, "TRACE")) return 3;
  return atoi(v);
}

static unsigned parseSubsys(const char *v) {
  static const char *names[] = {"INIT", "BOOT", "COLL", "EXEC", "SHM",
                                "SOCK", "IB",   "TOPO", "TUNE"};
  if (!v || !*v) return ~0u;
  unsigned mask = 0;
  for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
    if (strcasestr(v, names[i])) mask |= 1u << i;
  return mask;
}

static void configLoadOnce(void) {
  for (const tdConfigVar *v = tdConfigTable; v->name; v++) {
    const char *val = getenv(v->name);
    if (!val || !*val) val = v->dflt;
    char *field = (char *)&gConfig + v->offset;
    if (v->offset == TD_OFF(debug_level)) {
      *(int *)field = parseLevel(val);
    } else if (v->offset == TD_OFF(debug_subsys)) {
      *(unsigned *)field = parseSubsys(val);
    } else if (v->type == TD_CFG_INT) {
      if (v->offset == TD_OFF(chunk_bytes) || v->offset == TD_OFF(shm_buf_bytes) ||
          v->offset == TD_OFF(shm_cma_min_bytes))
        *(long *)field = atol(val);
      else
        *(int *)field = atoi(val);
    } else {
      *(const char **)field = (val && *val) ? val : NULL;
    }
  }
}

const tdConfig *configGet(void) {
  pthread_once(&gOnce, configLoadOnce);
  return &gConfig;
}

void configPrint(FILE *f, int markdown) {
  if (markdown) fprintf(f, "| variable | default | meaning |\n|---|---|---|\n");
  for (const tdConfigVar *v = tdConfigTable; v->name; v++) {
    if (markdown)
      fprintf(f, "| `%s` | %s | %s |\n", v->name, *v->dflt ? v->dflt : "(unset)", v->doc);
    else
      fprintf(f, "%-26s default=%-10s %s\n", v->name, *v->dflt ? v->dflt : "(unset)", v->doc);
  }
}
