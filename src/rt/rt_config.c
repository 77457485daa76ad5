/*
 * rt_config.c - the configuration table and its one reader. Add a variable by adding a field to
 * tdConfig and one row here (its parser, default and range); docs/env.md is regenerated with
 * `tools/tpudist-info -c --markdown`.
 */
#include "rt_config.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "rt_subsys.h"

#define TD_OFF(field) offsetof(tdConfig, field)

static int cfgInt(const tdConfigVar *v, const char *text, void *dst, char *err);
static int cfgLong(const tdConfigVar *v, const char *text, void *dst, char *err);
static int cfgStr(const tdConfigVar *v, const char *text, void *dst, char *err);
static int cfgLevel(const tdConfigVar *v, const char *text, void *dst, char *err);
static int cfgSubsys(const tdConfigVar *v, const char *text, void *dst, char *err);
static int cfgMode(const tdConfigVar *v, const char *text, void *dst, char *err);
static int cfgBind(const tdConfigVar *v, const char *text, void *dst, char *err);

const tdConfigVar tdConfigTable[] = {
    {"TPU_DIST_TIMEOUT_MS", cfgInt, "300000", TD_OFF(timeout_ms), 1, INT_MAX,
     "Bound on every wait (ms); a timeout names op, sequence number and peer."},
    {"TPU_DIST_AGREE_TIMEOUT_MS", cfgInt, "10000", TD_OFF(agree_timeout_ms), 1, INT_MAX,
     "tpudistCommShrink with no exclude list: a survivor waits this long (ms) for a silent "
     "coordinator, the coordinator twice this for silent survivors (docs/reliability.md)."},
    {"TPU_DIST_DEBUG", cfgLevel, "", TD_OFF(debug_level), 0, 0,
     "Log level: WARN, INFO or TRACE (default: errors only)."},
    {"TPU_DIST_DEBUG_SUBSYS", cfgSubsys, "", TD_OFF(debug_subsys), 0, 0,
     "Comma list of INIT,BOOT,COLL,EXEC,SHM,SOCK,IB,TOPO,TUNE (default all)."},
    {"TPU_DIST_CHECK", cfgInt, "0", TD_OFF(check), 0, 1,
     "1: ranks compare op, dtype, count, root and sequence before each collective."},
    {"TPU_DIST_MODE", cfgMode, "strict", TD_OFF(mode), 0, 0,
     "Execution mode: strict (each operation starts when issued), debug (every collective "
     "completes before its call returns and runs the TPU_DIST_CHECK signature check; errors name "
     "the call's arguments) or defer (non-blocking collectives wait for a flush point and "
     "compatible ones run fused; docs/runtime.md). Per communicator: tpudistConfig_t.mode."},
    {"TPU_DIST_DEFER_OPS", cfgInt, "256", TD_OFF(defer_ops), 1, 1 << 20,
     "Defer mode: a flush starts once this many non-blocking collectives were issued since the "
     "last flush point."},
    {"TPU_DIST_DEFER_BYTES", cfgLong, "4194304", TD_OFF(defer_bytes), 1, 1LL << 40,
     "Defer mode: a flush starts once the non-blocking collectives issued since the last flush "
     "point hold this many bytes."},
    {"TPU_DIST_DEFER_US", cfgInt, "1000", TD_OFF(defer_us), 0, INT_MAX,
     "Defer mode: a flush starts this long after the first queued operation even if the caller "
     "never waits (agreed with the peers; 0: no timer)."},
    {"TPU_DIST_DEFER_FUSE_BYTES", cfgLong, "65536", TD_OFF(defer_fuse_bytes), 0, 1LL << 40,
     "Defer mode: the largest operation fused with others (copied into one buffer); larger ones "
     "run on their own buffers in the flush's group."},
    {"TPU_DIST_FAULT", cfgStr, "", TD_OFF(fault), 0, 0,
     "Fault injection for tests: delay=MS,drop=N,corrupt=N[,rank=R] (see src/transport/fault)."},
    {"TPU_DIST_FLIGHT_RECORDS", cfgInt, "16", TD_OFF(flight_records), 0, 4096,
     "Operations per communicator the flight recorder keeps and logs when it fails (0: off)."},
    {"TPU_DIST_FR_DUMP_DIR", cfgStr, "", TD_OFF(fr_dump_dir), 0, 0,
     "Directory where each rank writes its flight record as JSON (torch flight recorder entries) "
     "when a communicator fails or times out, and on tpudistCommDumpFlightRecord."},
    {"TPU_DIST_STATUS", cfgInt, "1", TD_OFF(status), 0, 1,
     "1: rank 0 of a TPU_DIST_COMM_ID communicator keeps listening on that address and answers "
     "`tpudist-info --status host:port` (authenticated with the job's secret); 0: off."},
    {"TPU_DIST_TOPOLOGY", cfgStr, "", TD_OFF(topology), 0, 0,
     "Logical torus AxB[xC[xD]][:wrap=1,1,0][:twist][:hosts=..][:slices=S] or flat[(N)]; "
     "overrides TPU_* variables; unset = flat (docs/topology.md)."},
    {"TPU_DIST_ALGO", cfgStr, "", TD_OFF(algo), 0, 0,
     "Per-collective algorithm override, e.g. allreduce=torus,alltoall=pairwise."},
    {"TPU_DIST_SCHED_DUMP_DIR", cfgStr, "", TD_OFF(sched_dump_dir), 0, 0,
     "Directory to dump every new schedule to (text format v1)."},
    {"TPU_DIST_SCHED_FILE", cfgStr, "", TD_OFF(sched_file), 0, 0,
     "Schedule file to run instead of generated schedules (one per rank)."},
    {"TPU_ACCELERATOR_TYPE", cfgStr, "", TD_OFF(tpu_accelerator_type), 0, 0,
     "TPU runtime: accelerator type (e.g. v5p-128); selects the generation's wrap rule."},
    {"TPU_TOPOLOGY", cfgStr, "", TD_OFF(tpu_topology), 0, 0,
     "TPU runtime: slice topology, e.g. 4x4x4."},
    {"TPU_TOPOLOGY_WRAP", cfgStr, "", TD_OFF(tpu_topology_wrap), 0, 0,
     "TPU runtime: per-axis wrap, e.g. true,true,true."},
    {"TPU_TOPOLOGY_ALT", cfgStr, "", TD_OFF(tpu_topology_alt), 0, 0,
     "TPU runtime: 'true' for a twisted torus."},
    {"TPU_CHIPS_PER_HOST_BOUNDS", cfgStr, "", TD_OFF(tpu_chips_per_host_bounds), 0, 0,
     "TPU runtime: chips per host per axis, e.g. 2,2,1 (ranks are host-blocked)."},
    {"MEGASCALE_NUM_SLICES", cfgInt, "0", TD_OFF(megascale_num_slices), 0, 4096,
     "TPU runtime (multislice): slices joined by DCN; the topology gains a slice level "
     "(docs/topology.md)."},
    {"MEGASCALE_SLICE_ID", cfgInt, "-1", TD_OFF(megascale_slice_id), -1, 4095,
     "TPU runtime (multislice): this process's slice; must match its rank's slice (ranks are "
     "slice-major)."},
    {"TPU_DIST_DCN_GBPS", cfgInt, "0", TD_OFF(dcn_gbps), 0, 1000000,
     "Bandwidth of one host's DCN NIC in Gbit/s, each direction, shared by the host's ranks, as "
     "the cost model sees it (selection): messages between slices, or between hosts of a flat "
     "communicator, take it. 0: the default, 50 Gbit/s per chip of the host on a TPU topology "
     "(v5p's DCN egress per chip), 10 Gbit/s per host on a flat one (docs/results/multi-host.md)."},
    {"TPU_DIST_DCN_LATENCY_US", cfgInt, "-1", TD_OFF(dcn_latency_us), -1, 10000000,
     "Latency of one message across DCN in microseconds, as the cost model sees it. -1: the "
     "default, 10 on a TPU topology, 20 on a flat one (TCP)."},
    {"TPU_DIST_SHM_SYNC_NS", cfgInt, "-1", TD_OFF(shm_sync_ns), -1, 1000000000,
     "Cost of one synchronisation step on shared memory in nanoseconds, as the cost model sees "
     "it (selection on a flat topology): every round of dependent messages within a host pays it "
     "once, so plans with fewer rounds (direct: 2 for an all-reduce, ring: 2(p-1)) gain as it "
     "grows. -1: the default, 3500 times the host's ranks per online core when that exceeds 1 "
     "(a waiting peer must first be scheduled; docs/algorithms.md, \"Cost model\")."},
    {"TPU_DIST_NUMA_FACTOR_PCT", cfgInt, "-1", TD_OFF(numa_factor_pct), -1, 100000,
     "Cost of a copy between two NUMA nodes of a host against one within a node, in percent, as "
     "the cost model sees it (selection on a flat topology with a NUMA level): every byte a "
     "message moves between ranks on different nodes takes this much longer, so plans that keep "
     "traffic inside a node (hier, grouped by NUMA node) gain as it grows; 100 makes the nodes "
     "alike. -1: from the host's NUMA distances where hwloc has them (the mean distance between "
     "two of the nodes the communicator's ranks use over a node's own: 210 for an ACPI SLIT of "
     "21 to 10), else 200 (the ratio of Linux's default SLIT distances, 20 to 10; docs/host.md, "
     "\"NUMA level\")."},
    {"TPU_DIST_DCN_FLOWS", cfgInt, "0", TD_OFF(dcn_flows), 0, 64,
     "Connections (sender-receiver pairs) one host NIC direction carries at once at its rate, as "
     "the cost model sees it: a message that starts while this many other pairs' messages are "
     "unfinished on the sending host's NIC out or the receiving host's NIC in costs twice its "
     "time there (a switch port whose shallow queue drops and makes TCP resend: incast), so "
     "selection prefers plans that pace their messages across hosts (all-to-all: hier or "
     "pairwise instead of direct). 0: no limit (docs/results/multi-host.md)."},
    {"TPU_DIST_COMM_ID", cfgStr, "", TD_OFF(comm_id), 0, 0,
     "host:port of rank 0 for bootstrap without MPI (as NCCL_COMM_ID)."},
    {"TPU_DIST_HOSTID", cfgStr, "", TD_OFF(hostid), 0, 0,
     "Overrides the host identity (hostname+boot id+netns hash) that decides who shares memory."},
    {"TPU_DIST_COMM_SECRET", cfgStr, "", TD_OFF(comm_secret), 0, 0,
     "Job secret of TPU_DIST_COMM_ID jobs (the handshake key is derived from it; without it or "
     "TPU_DIST_COMM_SECRET_FILE anyone who can reach host:port can join)."},
    {"TPU_DIST_COMM_SECRET_FILE", cfgStr, "", TD_OFF(comm_secret_file), 0, 0,
     "File holding the job secret of TPU_DIST_COMM_ID jobs (read once; refused if group or others "
     "may read it)."},
    {"TPU_DIST_HANDSHAKE_MS", cfgInt, "5000", TD_OFF(handshake_ms), 1, INT_MAX,
     "A connection that has not finished its authentication handshake in this many ms is "
     "dropped."},
    {"TPU_DIST_MAX_HANDSHAKES", cfgInt, "64", TD_OFF(max_handshakes), 1, 65536,
     "Connections kept in their handshake at once per listener (at least one per rank that is to "
     "join); a new one beyond drops the oldest that has not sent its hello (bounds a flood's "
     "memory and descriptors)."},
    {"RANK", cfgInt, "-1", TD_OFF(env_rank), -1, INT_MAX,
     "Rank for tpudistCommInitEnv (torchrun style)."},
    {"WORLD_SIZE", cfgInt, "-1", TD_OFF(env_world_size), -1, INT_MAX,
     "Rank count for tpudistCommInitEnv (torchrun style)."},
    {"OMPI_COMM_WORLD_RANK", cfgInt, "-1", TD_OFF(ompi_rank), -1, INT_MAX,
     "Rank for tpudistCommInitEnv when RANK is unset (mpirun)."},
    {"OMPI_COMM_WORLD_SIZE", cfgInt, "-1", TD_OFF(ompi_size), -1, INT_MAX,
     "Rank count for tpudistCommInitEnv when WORLD_SIZE is unset (mpirun)."},
    {"SLURM_PROCID", cfgInt, "-1", TD_OFF(slurm_procid), -1, INT_MAX,
     "Rank for tpudistCommInitEnv when RANK and OMPI_COMM_WORLD_RANK are unset (srun)."},
    {"SLURM_NTASKS", cfgInt, "-1", TD_OFF(slurm_ntasks), -1, INT_MAX,
     "Rank count for tpudistCommInitEnv when WORLD_SIZE and OMPI_COMM_WORLD_SIZE are unset "
     "(srun)."},
    {"SLURM_LOCALID", cfgInt, "-1", TD_OFF(slurm_localid), -1, INT_MAX,
     "Rank inside its host under srun (logged by tpudistCommInitEnv)."},
    {"TPU_DIST_TRANSPORTS", cfgStr, "", TD_OFF(transports), 0, 0,
     "Comma list overriding the transport order (default shm,ofi,socket; self is always first), "
     "e.g. socket or ofi."},
    {"TPU_DIST_SOCKET_IFNAME", cfgStr, "", TD_OFF(socket_ifname), 0, 0,
     "Interface (prefix) for TCP; loopback is allowed (default: first up interface, else lo)."},
    {"TPU_DIST_SOCKET_NSTREAMS", cfgInt, "1", TD_OFF(socket_nstreams), 1, 16,
     "TCP connections (streams) per peer pair (a pair uses the smaller of its two ranks' values); "
     "messages of 128 KiB and more are split across them. 1: measured best on links one "
     "connection fills (docs/results/multi-host.md); raise it where one flow cannot fill the "
     "link (a per-flow rate cap, a long fat pipe)."},
    {"TPU_DIST_TLS", cfgInt, "0", TD_OFF(tls), 0, 1,
     "1: the socket transport's streams run TLS 1.3 (libssl): certificates both ways when "
     "TPU_DIST_TLS_CERT, TPU_DIST_TLS_KEY and TPU_DIST_TLS_CA are set, else a pre-shared key "
     "derived from the job secret. Every rank of a job must agree (docs/transports.md, TLS)."},
    {"TPU_DIST_TLS_CERT", cfgStr, "", TD_OFF(tls_cert), 0, 0,
     "PEM certificate (chain) this rank presents with TPU_DIST_TLS=1."},
    {"TPU_DIST_TLS_KEY", cfgStr, "", TD_OFF(tls_key), 0, 0,
     "PEM private key of TPU_DIST_TLS_CERT."},
    {"TPU_DIST_TLS_CA", cfgStr, "", TD_OFF(tls_ca), 0, 0,
     "PEM certificate authorities a peer's certificate must chain to (checked both ways)."},
    {"TPU_DIST_CHUNK_BYTES", cfgLong, "0", TD_OFF(chunk_bytes), 0, 1LL << 40,
     "Pipeline piece size in bytes: the executor slices each step into pieces of this size. 0: "
     "from the host's caches, an eighth of a core's share of L2 as a power of two in 64 KiB-1 "
     "MiB (128 KiB on a 1 MiB L2, or when the caches are unknown; docs/host.md)."},
    {"TPU_DIST_MAX_PIECES", cfgInt, "32", TD_OFF(max_pieces), 0, 1 << 20,
     "Most pieces per step: longer steps get proportionally larger pieces (0: no limit)."},
    {"TPU_DIST_SMALL_BYTES", cfgInt, "2048", TD_OFF(small_bytes), 0, INT_MAX,
     "All-reduces of at most this many bytes, and all-gathers and all-to-alls of blocks this small "
     "(2104 at most), among 2-8 ranks of one host use the shm slots (flag in the data) instead of "
     "a schedule (0: never)."},
    {"TPU_DIST_SHM_CMA", cfgInt, "1", TD_OFF(shm_cma), 0, 1,
     "1: large shm messages are read single-copy with process_vm_readv (falls back if refused)."},
    {"TPU_DIST_SHM_BUF_BYTES", cfgLong, "1048576", TD_OFF(shm_buf_bytes), 4096, 1LL << 34,
     "Largest shared-memory ring per pair and direction, in bytes (see TPU_DIST_SHM_RANK_BYTES)."},
    {"TPU_DIST_SHM_RANK_BYTES", cfgLong, "16777216", TD_OFF(shm_rank_bytes), 65536, 1LL << 40,
     "Ring bytes one rank may send through in all: a ring is this divided by the other ranks of "
     "the host, at most TPU_DIST_SHM_BUF_BYTES and at least 64 KiB (16 MiB: 1 MiB rings up to 17 "
     "ranks a host, 256 KiB at 64, 64 KiB at 256 and more)."},
    {"TPU_DIST_BIND", cfgBind, "none", TD_OFF(bind), 0, 0,
     "Binding of each process at its first communicator: none (the default: left where the "
     "launcher or the OS put it, right for torch jobs whose processes need their cores for "
     "compute), core (local rank r of L on core r*C/L of the host's C cores), numa (on NUMA node "
     "r*N/L of N) or auto (numa on a host of several NUMA nodes, else none). A process the "
     "launcher already bound (mpirun --bind-to, taskset, a cpuset narrower than the host) is left "
     "alone and says so at INFO (docs/host.md)."},
    {"TPU_DIST_SPIN_US", cfgInt, "20", TD_OFF(spin_us), 0, 10000000,
     "Microseconds a wait spins before it starts yielding (sched_yield for 2 ms, then short "
     "sleeps): a spinning waiter sees its peer's flag within a fraction of a microsecond, a "
     "yielding one only after its system call returns. Ignored (0) when the ranks on this host "
     "outnumber the processing units this process could use before the library bound it "
     "(TPU_DIST_BIND); the background progress thread never spins."},
    {"TPU_DIST_PROGRESS_THREAD", cfgInt, "1", TD_OFF(progress_thread), 0, 1,
     "1: a background progress thread per communicator drives non-blocking requests."},
    {"TPU_DIST_SHM_CMA_MIN_BYTES", cfgLong, "16384", TD_OFF(shm_cma_min_bytes), 1, 1LL << 40,
     "Smallest shm message sent single-copy (process_vm_readv); smaller ones go through the ring "
     "(sends of reducing collectives: at least 64 KiB)."},
    {"TPU_DIST_SHM_CMA_PULL_MS", cfgInt, "5", TD_OFF(shm_cma_pull_ms), 0, INT_MAX,
     "A single-copy shm message still unmatched after this many ms is copied out, so its send "
     "completes."},
    {"TPU_DIST_OFI_PROVIDER", cfgStr, "", TD_OFF(ofi_provider), 0, 0,
     "libfabric provider of the ofi transport, e.g. verbs;ofi_rxm, efa, tcp;ofi_rxm or shm "
     "(default: the fabric's first RDMA provider (verbs, efa, psm2, psm3, cxi) where an RDMA "
     "device is present, else none: ofi stays off and sockets carry the traffic)."},
    {"TPU_DIST_OFI_RMA_MIN_BYTES", cfgLong, "262144", TD_OFF(ofi_rma_min_bytes), 0, 1LL << 40,
     "Smallest ofi message the receiver reads from the sender's registered memory (RMA) instead "
     "of a tagged message, where the provider has RMA (0: tagged messages only)."},
    {"TPU_DIST_OFI_MR_CACHE", cfgInt, "16", TD_OFF(ofi_mr_cache), 0, 4096,
     "Memory registrations of ofi RMA send buffers kept for reuse (0: register every message)."},
    {NULL, NULL, NULL, 0, 0, 0, NULL},
};

static tdConfig gConfig;
static pthread_once_t gOnce = PTHREAD_ONCE_INIT;
static char gError[TD_ERRLEN];

/* strtoll with the whole text consumed, errno checked and the row's range enforced. */
static int cfgInteger(const tdConfigVar *v, const char *text, long long *out, char *err) {
  char *end;
  errno = 0;
  long long x = strtoll(text, &end, 0);
  if (end == text || *end || errno == ERANGE)
    return snprintf(err, TD_ERRLEN, "%s=%s: not an integer", v->name, text), -1;
  if (x < v->min || x > v->max)
    return snprintf(err, TD_ERRLEN, "%s=%s: out of range [%lld, %lld]", v->name, text, v->min,
                    v->max),
           -1;
  *out = x;
  return 0;
}

static int cfgInt(const tdConfigVar *v, const char *text, void *dst, char *err) {
  long long x;
  if (cfgInteger(v, text, &x, err)) return -1;
  *(int *)dst = (int)x;
  return 0;
}

static int cfgLong(const tdConfigVar *v, const char *text, void *dst, char *err) {
  long long x;
  if (cfgInteger(v, text, &x, err)) return -1;
  *(long *)dst = (long)x;
  return 0;
}

static int cfgStr(const tdConfigVar *v, const char *text, void *dst, char *err) {
  (void)v, (void)err;
  *(const char **)dst = *text ? text : NULL;
  return 0;
}

/* TPU_DIST_DEBUG: WARN, INFO, TRACE or a number 0..3; unset: errors only. */
static int cfgLevel(const tdConfigVar *v, const char *text, void *dst, char *err) {
  static const char *names[] = {"", "WARN", "INFO", "TRACE"};
  for (int i = 0; i < (int)TD_ARRAY_SIZE(names); i++)
    if (!strcasecmp(text, names[i])) return *(int *)dst = i, 0;
  long long x;
  tdConfigVar r = *v;
  r.min = 0, r.max = 3;
  if (cfgInteger(&r, text, &x, err)) {
    snprintf(err, TD_ERRLEN, "%s=%s: not WARN, INFO, TRACE or 0..3", v->name, text);
    return -1;
  }
  *(int *)dst = (int)x;
  return 0;
}

/* TPU_DIST_DEBUG_SUBSYS: comma list of subsystem names (logSubsysName); unset: all. */
static int cfgSubsys(const tdConfigVar *v, const char *text, void *dst, char *err) {
  unsigned mask = 0;
  if (!*text) return *(unsigned *)dst = ~0u, 0;
  for (const char *p = text; *p;) {
    size_t n = strcspn(p, ",");
    int bit = logSubsysParse(p, n);
    if (bit < 0 && n > 0)
      return snprintf(err, TD_ERRLEN, "%s=%s: unknown subsystem '%.*s'", v->name, text, (int)n, p),
             -1;
    if (bit >= 0) mask |= 1u << bit;
    p += n + (p[n] == ',');
  }
  *(unsigned *)dst = mask;
  return 0;
}

/* TPU_DIST_MODE: the names of include/tpu_dist.h's TPUDIST_MODE_* values. */
static int cfgMode(const tdConfigVar *v, const char *text, void *dst, char *err) {
  int m = configModeParse(text);
  if (m < 0)
    return snprintf(err, TD_ERRLEN, "%s=%s: not strict, debug or defer", v->name, text), -1;
  *(int *)dst = m;
  return 0;
}

/* TPU_DIST_BIND: none, core, numa or auto (host.h). */
static int cfgBind(const tdConfigVar *v, const char *text, void *dst, char *err) {
  int m = hostBindParse(text);
  if (m < 0)
    return snprintf(err, TD_ERRLEN, "%s=%s: not none, core, numa or auto", v->name, text), -1;
  *(int *)dst = m;
  return 0;
}

int configModeParse(const char *name) {
  if (!strcasecmp(name, "strict")) return TPUDIST_MODE_STRICT;
  if (!strcasecmp(name, "debug")) return TPUDIST_MODE_DEBUG;
  if (!strcasecmp(name, "defer")) return TPUDIST_MODE_DEFER;
  return -1;
}

const char *configModeName(int mode) {
  return mode == TPUDIST_MODE_DEBUG ? "debug" : mode == TPUDIST_MODE_DEFER ? "defer" : "strict";
}

static void configLoadOnce(void) {
  for (const tdConfigVar *v = tdConfigTable; v->name; v++) {
    const char *val = getenv(v->name);
    char *field = (char *)&gConfig + v->offset;
    char err[TD_ERRLEN];
    if (val && *val && v->parse(v, val, field, err) == 0) continue;
    if (val && *val && !gError[0]) snprintf(gError, sizeof(gError), "%s", err);
    v->parse(v, v->dflt, field, err); /* every default parses (unit-config) */
  }
}

const tdConfig *configGet(void) {
  pthread_once(&gOnce, configLoadOnce);
  return &gConfig;
}

const char *configError(void) {
  configGet();
  return gError[0] ? gError : NULL;
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
