/*
 * info_host.c - `tpudist-info --host`: the host model the library reads (hwloc: packages, NUMA
 * nodes, cores, processing units, caches, the piece size derived from them) and, per rank, where
 * it runs: its processing units (sched_getaffinity of every thread of the process), the NUMA node
 * they lie in, and the placement decision (TPU_DIST_BIND, or the launcher's binding left alone).
 * With TPU_DIST_COMM_ID set it joins the job as one rank (tpudistCommInitEnv, which places the
 * process as any communicator does) and rank 0 prints every rank's line and the communicator's
 * NUMA level; else it describes this process alone, and the NUMA level --nranks ranks of this host
 * would form. Both say what a copy across NUMA nodes costs the selection, and where that figure
 * comes from (the host's distances, the default, or TPU_DIST_NUMA_FACTOR_PCT).
 */
#include "info_host.h"

#include <dirent.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm.h"
#include "host_detect.h"
#include "rt_config.h"
#include "rt_topo.h"

#define TD_LINE 320

/* Threads of this process whose affinity differs from the calling thread's; *n: all threads. */
static int threadsApart(int *n) {
  cpu_set_t mine, theirs;
  int apart = 0;
  *n = 0;
  DIR *d = opendir("/proc/self/task");
  if (!d || sched_getaffinity(0, sizeof(mine), &mine) != 0) {
    if (d) closedir(d);
    return 0;
  }
  for (struct dirent *e; (e = readdir(d));) {
    int tid = atoi(e->d_name);
    if (tid <= 0) continue;
    (*n)++;
    apart += sched_getaffinity(tid, sizeof(theirs), &theirs) == 0 && !CPU_EQUAL(&mine, &theirs);
  }
  closedir(d);
  return apart;
}

/* The NUMA node the calling thread's units lie in (-1: several or unknown). */
static int numaNow(const tdHost *h) {
  cpu_set_t set;
  uint8_t *mask = calloc((size_t)TD_MAX(h->npus, 1), 1);
  int node = -1;
  if (mask && sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int i = 0; i < h->npus; i++)
      mask[i] = h->pus[i] < CPU_SETSIZE && CPU_ISSET(h->pus[i], &set);
    node = hostMaskNuma(h, mask);
  }
  free(mask);
  return node;
}

static void rankLine(const tdHost *h, const char *who, const tdHostPlace *p, char *line) {
  char cpus[128], host[64] = "?";
  int nthreads, apart = threadsApart(&nthreads);
  gethostname(host, sizeof(host));
  host[sizeof(host) - 1] = 0;
  snprintf(line, TD_LINE, "%s host %s pid %d pus %s numa %d threads %d apart %d: %s", who, host,
           (int)getpid(), hostCpusNow(cpus, sizeof(cpus)), numaNow(h), nthreads, apart, p->why);
}

/* The NUMA level the library sets for n ranks of one host (k ranks per node on nodes; k = 0: none)
 * and the cost of a copy across the nodes, with where that comes from (host_pct: the host's). */
static void numaLines(int n, const char *nodes, int k, int host_pct) {
  const char *from;
  int pct = configNumaFactorPct(configGet(), host_pct, &from);
  if (k > 0)
    printf("numa level: %d ranks on nodes %s, %d ranks per node\n", n, nodes, k);
  else
    printf("numa level: none for %d ranks\n", n);
  printf("numa factor: %d%% (%s)\n", pct, from);
}

static int jobHost(const tdHost *h) {
  tpudistComm_t comm;
  tpudistResult_t r = tpudistCommInitEnv(&comm, -1, -1, NULL);
  if (r != tpudistSuccess) {
    fprintf(stderr, "tpudist-info: --host: joining the job failed: %s\n", tpudistGetErrorString(r));
    return 1;
  }
  int lr, ls, first, n, me;
  tdHostPlace p;
  char err[TD_ERRLEN], who[64];
  netLocalRank(&comm->c.net, &lr, &ls);
  tpudistCommCount(comm, &n);
  tpudistCommUserRank(comm, &me);
  hostBindOnce(lr, ls, configGet()->bind, &p, &first, err); /* the decision already made */
  char *lines = calloc((size_t)n, TD_LINE);
  if (!lines) return tpudistCommDestroy(comm), 1;
  snprintf(who, sizeof(who), "rank %d local %d/%d", me, lr, ls);
  rankLine(h, who, &p, lines + (size_t)me * TD_LINE);
  r = tpudistAllGather(lines + (size_t)me * TD_LINE, lines, TD_LINE, tpudistChar, comm, NULL);
  if (r == tpudistSuccess && me == 0) {
    hostPrint(h, stdout);
    printf("TPU_DIST_BIND=%s, %d ranks\n", hostBindName(configGet()->bind), n);
    for (int i = 0; i < n; i++) printf("%s\n", lines + (size_t)i * TD_LINE);
    numaLines(n, comm->c.numa_nodes, comm->c.topo.numa, comm->c.numa_pct);
  }
  free(lines);
  tpudistCommDestroy(comm);
  if (r != tpudistSuccess) fprintf(stderr, "tpudist-info: --host: %s\n", tpudistGetErrorString(r));
  return r != tpudistSuccess;
}

/* Outside a job: the level nranks ranks of this host would form, placed under TPU_DIST_BIND. */
static int levelFor(const tdHost *h, int nranks) {
  int *node = calloc((size_t)nranks, sizeof(int));
  char nodes[64];
  if (!node) return 1;
  hostPlaceNodes(h, nranks, configGet()->bind, node);
  int k = hostNumaBlocks(node, nranks);
  printf("TPU_DIST_BIND=%s, %d ranks\n", hostBindName(configGet()->bind), nranks);
  numaLines(nranks, hostNodeList(node, nranks, nodes, sizeof(nodes)), k,
            k > 0 ? hostNumaFactorPct(h, node, nranks) : 0);
  free(node);
  return 0;
}

int infoHost(int nranks) {
  char err[TD_ERRLEN], line[TD_LINE];
  const uint8_t *bound;
  const tdHost *h = hostThis(&bound, err);
  if (!h) {
    fprintf(stderr, "tpudist-info: --host: %s\n", err);
    return 1;
  }
  if (configGet()->comm_id) return jobHost(h);
  tdHostPlace p;
  hostPlace(h, 0, 1, TD_BIND_NONE, bound, &p);
  if (p.action == TD_PLACE_NONE) snprintf(p.why, sizeof(p.why), "not in a job: not placed");
  hostPrint(h, stdout);
  rankLine(h, "this process", &p, line);
  printf("%s\n", line);
  return levelFor(h, nranks > 0 ? nranks : 1);
}
