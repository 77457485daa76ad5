/*
 * tpudist-info - what this build of tpu_dist knows:
 *
 *   tpudist-info -c [--markdown]     the configuration table (docs/env.md is `-c --markdown`)
 *   tpudist-info -a                  collectives and their algorithms
 *   tpudist-info -d --coll C [--algo A] (--nranks N | --topology T) --rank R [--root R]
 *                [--count N] [--inplace] [--summary]
 *                                    one rank's schedule in the text format (or a summary:
 *                                    streams, steps, bytes per peer); without --algo, the one the
 *                                    selection table picks for the size
 *   tpudist-info -s (--topology T | --nranks N) [--algo-override SPEC]
 *                                    the selection table (collective x size bucket)
 *   tpudist-info --status HOST:PORT [--dump] [--timeout MS]
 *                                    a running TPU_DIST_COMM_ID job's health: per rank the
 *                                    operation in flight, its sequence number and the rank it
 *                                    waits for (the job's secret from TPU_DIST_COMM_SECRET or
 *                                    TPU_DIST_COMM_SECRET_FILE); --dump: every rank also writes
 *                                    its flight record to its TPU_DIST_FR_DUMP_DIR
 *   tpudist-info --host [--nranks N]   the host as the library reads it (hwloc: packages, NUMA
 *                                    nodes and their distances, cores, caches), where this
 *                                    process runs, and the NUMA level N ranks of this host would
 *                                    form under TPU_DIST_BIND with the cost of a copy across
 *                                    nodes and its source; run as every rank of a
 *                                    TPU_DIST_COMM_ID job, rank 0 prints where each rank runs,
 *                                    how it was placed, and the communicator's NUMA level
 *
 * Without --topology the tool sees what the library sees: TPU_DIST_TOPOLOGY, else the TPU
 * runtime's variables, else flat over --nranks; without --algo-override, TPU_DIST_ALGO. -s and
 * -d cost copies across NUMA nodes at TPU_DIST_NUMA_FACTOR_PCT or the default, not from a host.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algos.h"
#include "boot_status.h"
#include "info_host.h"
#include "rt_config.h"
#include "rt_topo.h"
#include "sched_io.h"
#include "select.h"
#include "step_sem.h"

typedef struct {
  char mode;
  int markdown, summary, inplace, nranks, rank, root, dump, timeout_ms;
  const char *coll, *algo, *topology, *override, *status;
  uint64_t count;
} tdInfoArgs;

static int usage(void) {
  fprintf(stderr,
          "usage: tpudist-info -c [--markdown] | -a |\n"
          "       -d --coll C [--algo A] (--nranks N | --topology T) --rank R [--root R]\n"
          "          [--count N] [--inplace] [--summary] |\n"
          "       -s (--topology T | --nranks N) [--algo-override SPEC] |\n"
          "       --status HOST:PORT [--dump] [--timeout MS] | --host [--nranks N]\n");
  return 2;
}

static int parseArgs(int argc, char **argv, tdInfoArgs *a) {
  memset(a, 0, sizeof(*a));
  a->count = 1u << 20;
  a->timeout_ms = 15000;
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(s, "-c") || !strcmp(s, "-a") || !strcmp(s, "-d") || !strcmp(s, "-s"))
      a->mode = s[1];
    else if (!strcmp(s, "--markdown"))
      a->markdown = 1;
    else if (!strcmp(s, "--summary"))
      a->summary = 1;
    else if (!strcmp(s, "--inplace"))
      a->inplace = 1;
    else if (!strcmp(s, "--dump"))
      a->dump = 1;
    else if (!strcmp(s, "--host"))
      a->mode = 'H';
    else if (!v)
      return usage();
    else if (!strcmp(s, "--coll"))
      a->coll = argv[++i];
    else if (!strcmp(s, "--algo"))
      a->algo = argv[++i];
    else if (!strcmp(s, "--topology"))
      a->topology = argv[++i];
    else if (!strcmp(s, "--algo-override"))
      a->override = argv[++i];
    else if (!strcmp(s, "--nranks"))
      a->nranks = atoi(argv[++i]);
    else if (!strcmp(s, "--rank"))
      a->rank = atoi(argv[++i]);
    else if (!strcmp(s, "--root"))
      a->root = atoi(argv[++i]);
    else if (!strcmp(s, "--status"))
      a->status = argv[++i], a->mode = 'S';
    else if (!strcmp(s, "--timeout"))
      a->timeout_ms = atoi(argv[++i]);
    else if (!strcmp(s, "--count"))
      a->count = strtoull(argv[++i], NULL, 10);
    else
      return usage();
  }
  if (!a->override) a->override = configGet()->algo; /* TPU_DIST_ALGO, as the library reads it */
  return a->mode ? 0 : usage();
}

static int listAlgos(void) {
  for (int c = 0; c < TD_NUM_COLLS; c++) {
    printf("%-14s", schedCollName((tdColl)c));
    for (const tdAlgo *a = tdAlgoTable; a->name; a++)
      if (a->coll == (tdColl)c) printf(" %s%s", a->name, a->gen ? "" : "(not built)");
    printf("\n");
  }
  return 0;
}

/* --topology, else --nranks flat, else what the library would use (TPU_DIST_TOPOLOGY or the TPU
 * runtime's variables, rt_topo.h). */
static int makeTopo(const tdInfoArgs *a, tdTopo *t) {
  char err[TD_ERRLEN] = "";
  const char *source = "--topology";
  tpudistResult_t r;
  if (a->topology) {
    r = topoParse(a->topology, a->nranks, t, err);
  } else {
    r = configTopology(configGet(), a->nranks, t, &source, err);
    if (r == tpudistInvalidArgument && a->nranks < 1)
      snprintf(err, sizeof(err), "give --nranks N or --topology T (or set TPU_DIST_TOPOLOGY)");
  }
  if (r == tpudistSuccess) {
    char name[64];
    topoFormat(t, name, sizeof(name));
    if (strcmp(source, "--topology") && strcmp(source, "flat"))
      fprintf(stderr, "tpudist-info: topology %s (from %s)\n", name, source);
    return 0;
  }
  fprintf(stderr, "tpudist-info: topology: %s\n", err);
  return 1;
}

static int selection(const tdInfoArgs *a) {
  tdTopo t;
  char err[TD_ERRLEN] = "";
  tdSelectTable *tab = NULL;
  if (makeTopo(a, &t)) return 1;
  tdCostModel m;
  configCostModel(configGet(), &t, 0, &m);
  if (selectBuild(&t, t.nranks, a->override, &m, &tab, err) != tpudistSuccess) {
    fprintf(stderr, "tpudist-info: selection: %s\n", err);
    return 1;
  }
  selectPrint(tab, stdout);
  selectFree(tab);
  return 0;
}

/* Bytes a ref covers for block count n with 4-byte elements. */
static uint64_t refBytes(const tdSched *s, tdBufRef r, uint64_t n) {
  uint64_t b = 0, e = 0;
  if (schedRefRange(s, r, n, &b, &e) != tpudistSuccess) return 0;
  return (e - b) * 4;
}

static void summary(const tdSched *s, uint64_t n) {
  uint64_t *out = calloc((size_t)s->nranks, sizeof(uint64_t));
  uint64_t *in = calloc((size_t)s->nranks, sizeof(uint64_t));
  unsigned ops[TD_NUM_STEP_OPS] = {0};
  uint64_t steps = 0;
  printf("%s/%s nranks %d rank %d root %d inplace %d count %llu (4-byte elements)\n",
         schedCollName(s->coll), s->algo, s->nranks, s->rank, s->root, s->inplace,
         (unsigned long long)n);
  printf("scratch %llu bytes\n", (unsigned long long)schedBufElems(s, TD_BUF_SCRATCH, n) * 4);
  for (uint32_t i = 0; i < s->nstreams; i++) {
    printf("stream %u: %u steps\n", i, s->streams[i].nsteps);
    for (uint32_t j = 0; j < s->streams[i].nsteps; j++) {
      const tdStep *st = &s->streams[i].steps[j];
      int rp = schedRecvPeer(st), sp = schedSendPeer(st);
      steps++;
      ops[st->op]++;
      if (rp >= 0 && rp < s->nranks) in[rp] += refBytes(s, st->dst, n);
      if (sp >= 0 && sp < s->nranks) out[sp] += refBytes(s, schedWireRef(st), n);
    }
  }
  printf("steps %llu:", (unsigned long long)steps);
  for (int o = 0; o < TD_NUM_STEP_OPS; o++)
    if (ops[o]) printf(" %s=%u", tdStepSemTable[o].name, ops[o]);
  printf("\n");
  uint64_t tin = 0, tout = 0;
  for (int p = 0; out && in && p < s->nranks; p++) {
    if (!in[p] && !out[p]) continue;
    printf("peer %d: sends %llu bytes, receives %llu bytes\n", p, (unsigned long long)out[p],
           (unsigned long long)in[p]);
    tin += in[p];
    tout += out[p];
  }
  printf("total: sends %llu bytes, receives %llu bytes\n", (unsigned long long)tout,
         (unsigned long long)tin);
  free(out);
  free(in);
}

static int dumpOne(const tdInfoArgs *a) {
  tdTopo t;
  char err[TD_ERRLEN] = "";
  int coll = a->coll ? schedCollFromName(a->coll) : -1;
  if (coll < 0 || coll == TD_COLL_ALLTOALLV) {
    fprintf(stderr, "tpudist-info: --coll must name a collective (not alltoallv)\n");
    return 2;
  }
  if (makeTopo(a, &t)) return 1;
  if (a->rank < 0 || a->rank >= t.nranks) {
    fprintf(stderr, "tpudist-info: --rank %d out of range for %d ranks\n", a->rank, t.nranks);
    return 2;
  }
  tdCollArgs args = {.coll = (tdColl)coll,
                     .nranks = t.nranks,
                     .rank = a->rank,
                     .root = a->root,
                     .inplace = a->inplace,
                     .count = a->count,
                     .topo = &t,
                     .elem_size = 4};
  const char *names[TD_SELECT_MAX_CANDIDATES] = {a->algo};
  int nc = a->algo ? 1 : 0;
  tdSelectTable *tab = NULL;
  if (!a->algo) {
    tdCostModel m;
    configCostModel(configGet(), &t, 0, &m);
    if (selectBuild(&t, t.nranks, a->override, &m, &tab, err) != tpudistSuccess) {
      fprintf(stderr, "tpudist-info: selection: %s\n", err);
      return 1;
    }
    uint64_t blocks =
        coll == TD_COLL_ALLGATHER || coll == TD_COLL_REDUCESCATTER || coll == TD_COLL_ALLTOALL
            ? (uint64_t)t.nranks
            : 1;
    nc =
        selectCandidates(tab, (tdColl)coll, a->count * 4 * blocks, names, TD_SELECT_MAX_CANDIDATES);
  }
  tdSched s;
  tpudistResult_t r = tpudistNotSupported;
  snprintf(err, sizeof(err), "no candidate");
  for (int i = 0; i < nc && r != tpudistSuccess; i++) r = algoGenerate(&args, names[i], &s, err);
  if (tab) selectFree(tab);
  if (r != tpudistSuccess) {
    fprintf(stderr, "tpudist-info: %s\n", err);
    return 1;
  }
  schedFuse(&s);
  if (a->summary)
    summary(&s, a->count);
  else if (schedDump(&s, stdout, err) != tpudistSuccess)
    fprintf(stderr, "tpudist-info: dump: %s\n", err);
  schedFree(&s);
  return 0;
}

/* --status: asks rank 0 of the job at a->status for every rank's state. */
static int status(const tdInfoArgs *a) {
  tdNetAddr addr;
  tdKey key;
  char err[TD_ERRLEN] = "", *body = NULL;
  size_t len = 0;
  if (a->timeout_ms <= 0) {
    fprintf(stderr, "tpudist-info: --timeout must be positive\n");
    return 2;
  }
  tpudistResult_t r = bootstrapJobKey(a->status, &addr, &key, err);
  if (r == tpudistSuccess)
    r = bootstrapStatusQuery(&addr, &key, a->dump ? TD_STATUS_JOB_DUMP : TD_STATUS_JOB,
                             netNowMs() + a->timeout_ms, NULL, &body, &len, err);
  if (r != tpudistSuccess) {
    fprintf(stderr, "tpudist-info: --status %s: %s\n", a->status, err);
    return 1;
  }
  fwrite(body, 1, len, stdout);
  free(body);
  return 0;
}

int main(int argc, char **argv) {
  tdInfoArgs a;
  int rc = parseArgs(argc, argv, &a);
  if (rc) return rc;
  switch (a.mode) {
    case 'c':
      if (a.markdown)
        printf(
            "# Environment variables\n\nGenerated by `tools/tpudist-info -c --markdown` from the "
            "configuration table (src/rt/rt_config.c). Every variable is read once, at the "
            "first communicator.\n\n");
      configPrint(stdout, a.markdown);
      if (configError()) { /* communicators would refuse to start: say so */
        fprintf(stderr, "tpudist-info: %s\n", configError());
        return 1;
      }
      return 0;
    case 'a':
      return listAlgos();
    case 's':
      return selection(&a);
    case 'S':
      return status(&a);
    case 'H':
      return infoHost(a.nranks);
    default:
      return dumpOne(&a);
  }
}
