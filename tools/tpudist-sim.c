/*
 * tpudist-sim - runs the library's schedules on the pod-scale simulator (sim/, docs/simulator.md).
 *
 *   tpudist-sim --preset v5p --topology 16x16x24 --coll allreduce --bytes 1G --algo torus
 *   tpudist-sim ... --sweep [--min 1K --max 1G --algos ring,tree,torus --csv F --plot F.png]
 *   tpudist-sim ... --compare-algos
 *   tpudist-sim --check-selection [--full]      selection against the simulator over a grid
 *   tpudist-sim ... --functional --bytes 4K [--dtype int32 --op max]
 *   tpudist-sim --preset v7 --topology 16x16x32 --moe [--moe-tokens 2048 --algos a,b --csv F
 *     --moe-cases spread:zipf]
 *   tpudist-sim --preset v5p --topology 4x4x4 --slices 4 [--dcn-bw B/s --dcn-latency S] ...
 *
 * Prints time, algbw, busbw (NCCL conventions) and link utilisation. A shape that is not a slice
 * the preset's generation sells is simulated with a warning.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "algos.h"
#include "kernels.h"
#include "sim.h"
#include "sim_moe.h"

typedef struct {
  const char *preset, *topology, *coll, *algo, *algos, *csv, *plot, *fail, *dump;
  uint64_t bytes, min, max;
  int twist, sweep, compare, functional, root, window, depth, dma, quiet, step, fractional, moe;
  int every_rank; /* --every-rank: no translation quotient */
  int check_sel;  /* --check-selection [--full]: selection against the simulator over a grid */
  int full;
  int slices; /* --slices S: S slices of --topology joined by DCN */
  double dcn_bw, dcn_latency;
  double settle; /* --settle F: leaves may wait F x the simulated time for re-levelling */
  uint64_t moe_tokens;
  const char *moe_cases; /* --moe-cases place:skew,..: the MoE cases to run (NULL: all four) */
  double link_bw, latency, inj_bw, overhead, piece;
  tpudistDataType_t dtype;
  tpudistRedOp_t op;
} Opts;

static void usage(FILE *f) {
  fprintf(f,
          "usage: tpudist-sim [--preset v4|v5e|v5p|v6e|v7] --topology AxBxC[:wrap=..|:twist] "
          "[--twist]\n"
          "         --coll allreduce|allgather|reducescatter|broadcast|reduce|alltoall\n"
          "         [--bytes N[K|M|G]] [--algo NAME|auto] [--root R]\n"
          "         [--sweep [--min N] [--max N] [--step F] [--algos a,b,c] [--csv FILE] [--plot "
          "FILE.png]]\n"
          "         [--compare-algos] [--moe [--moe-tokens N] [--algos a,b] [--csv FILE]\n"
          "         [--moe-cases local|spread:uniform|zipf,...]]\n"
          "       tpudist-sim --check-selection [--full]\n"
          "         [--functional [--dtype float32|int32|float64|int64]\n"
          "         [--op sum|max|min] [--fractional] [--dump-outputs FILE]]\n"
          "         [--fail-links R:AXIS:DIR,...]\n"
          "         [--slices S [--dcn-bw B/s per host NIC] [--dcn-latency S]]\n"
          "         [--link-bw B/s] [--latency S] [--overhead S] [--inj-bw B/s] [--piece BYTES]\n"
          "         [--window STEPS] [--depth STEPS] [--dma N] [--settle F] [--every-rank] "
          "[--quiet]\n");
}

static int parseSize(const char *s, uint64_t *out) {
  char *end;
  double v = strtod(s, &end);
  if (end == s || v < 0) return -1;
  double m = 1;
  if (*end == 'K' || *end == 'k')
    m = 1024.0, end++;
  else if (*end == 'M' || *end == 'm')
    m = 1048576.0, end++;
  else if (*end == 'G' || *end == 'g')
    m = 1073741824.0, end++;
  if (*end == 'B' || *end == 'b') end++;
  if (*end) return -1;
  *out = (uint64_t)(v * m);
  return 0;
}

static int parseDtype(const char *s, tpudistDataType_t *dt) {
  for (int d = 0; kernelDtypeValid(d); d++)
    if (!strcmp(kernelDtypeName((tpudistDataType_t)d), s)) return *dt = (tpudistDataType_t)d, 0;
  return -1;
}

static int parseOp(const char *s, tpudistRedOp_t *op) {
  for (int o = 0; kernelOpValid(o); o++)
    if (!strcmp(kernelOpName((tpudistRedOp_t)o), s)) return *op = (tpudistRedOp_t)o, 0;
  return -1;
}

static int parseArgs(int argc, char **argv, Opts *o) {
  memset(o, 0, sizeof(*o));
  o->preset = "v5p";
  o->coll = "allreduce";
  o->algo = "auto";
  o->bytes = 1u << 20;
  o->min = 1024;
  o->max = 1u << 30;
  o->dtype = tpudistFloat32;
  o->op = tpudistSum;
  o->link_bw = o->latency = o->inj_bw = o->overhead = o->dcn_bw = o->dcn_latency = -1;
  o->slices = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int need = 1;
    if (!strcmp(a, "--twist"))
      o->twist = 1, need = 0;
    else if (!strcmp(a, "--sweep"))
      o->sweep = 1, need = 0;
    else if (!strcmp(a, "--compare-algos"))
      o->compare = 1, need = 0;
    else if (!strcmp(a, "--functional"))
      o->functional = 1, need = 0;
    else if (!strcmp(a, "--fractional"))
      o->fractional = 1, need = 0;
    else if (!strcmp(a, "--moe"))
      o->moe = 1, need = 0;
    else if (!strcmp(a, "--quiet"))
      o->quiet = 1, need = 0;
    else if (!strcmp(a, "--every-rank"))
      o->every_rank = 1, need = 0;
    else if (!strcmp(a, "--check-selection"))
      o->check_sel = 1, need = 0;
    else if (!strcmp(a, "--full"))
      o->full = 1, need = 0;
    else if (!strcmp(a, "-h") || !strcmp(a, "--help"))
      return usage(stdout), exit(0), 0;
    else if (!v)
      return fprintf(stderr, "tpudist-sim: %s needs a value\n", a), -1;
    else if (!strcmp(a, "--preset"))
      o->preset = v;
    else if (!strcmp(a, "--topology"))
      o->topology = v;
    else if (!strcmp(a, "--coll"))
      o->coll = v;
    else if (!strcmp(a, "--algo"))
      o->algo = v;
    else if (!strcmp(a, "--algos"))
      o->algos = v;
    else if (!strcmp(a, "--moe-cases"))
      o->moe_cases = v;
    else if (!strcmp(a, "--csv"))
      o->csv = v;
    else if (!strcmp(a, "--plot"))
      o->plot = v;
    else if (!strcmp(a, "--fail-links"))
      o->fail = v;
    else if (!strcmp(a, "--root"))
      o->root = atoi(v);
    else if (!strcmp(a, "--window"))
      o->window = atoi(v);
    else if (!strcmp(a, "--depth"))
      o->depth = atoi(v);
    else if (!strcmp(a, "--dump-outputs"))
      o->dump = v;
    else if (!strcmp(a, "--step"))
      o->step = atoi(v);
    else if (!strcmp(a, "--dma"))
      o->dma = atoi(v);
    else if (!strcmp(a, "--slices")) {
      if ((o->slices = atoi(v)) < 1 || o->slices > 4096)
        return fprintf(stderr, "tpudist-sim: --slices %s: 1 to 4096\n", v), -1;
    } else if (!strcmp(a, "--dcn-bw")) {
      if (!((o->dcn_bw = atof(v)) > 0))
        return fprintf(stderr, "tpudist-sim: --dcn-bw %s: bytes/s > 0\n", v), -1;
    } else if (!strcmp(a, "--dcn-latency")) {
      if (!((o->dcn_latency = atof(v)) >= 0))
        return fprintf(stderr, "tpudist-sim: --dcn-latency %s: seconds >= 0\n", v), -1;
    } else if (!strcmp(a, "--settle")) {
      if (!((o->settle = atof(v)) >= 0) || o->settle > 0.1)
        return fprintf(stderr, "tpudist-sim: --settle %s: a fraction, 0 to 0.1\n", v), -1;
    } else if (!strcmp(a, "--link-bw"))
      o->link_bw = atof(v);
    else if (!strcmp(a, "--latency"))
      o->latency = atof(v);
    else if (!strcmp(a, "--overhead"))
      o->overhead = atof(v);
    else if (!strcmp(a, "--inj-bw"))
      o->inj_bw = atof(v);
    else if (!strcmp(a, "--piece"))
      o->piece = atof(v);
    else if (!strcmp(a, "--dtype")) {
      if (parseDtype(v, &o->dtype)) return fprintf(stderr, "tpudist-sim: dtype %s?\n", v), -1;
    } else if (!strcmp(a, "--op")) {
      if (parseOp(v, &o->op)) return fprintf(stderr, "tpudist-sim: op %s?\n", v), -1;
    } else if (!strcmp(a, "--moe-tokens")) {
      if (parseSize(v, &o->moe_tokens) || !o->moe_tokens)
        return fprintf(stderr, "tpudist-sim: tokens %s?\n", v), -1;
    } else if (!strcmp(a, "--bytes") || !strcmp(a, "--min") || !strcmp(a, "--max")) {
      uint64_t *dst = a[2] == 'b' ? &o->bytes : a[3] == 'i' ? &o->min : &o->max;
      if (parseSize(v, dst)) return fprintf(stderr, "tpudist-sim: size %s?\n", v), -1;
    } else {
      fprintf(stderr, "tpudist-sim: unknown option %s\n", a);
      return usage(stderr), -1;
    }
    i += need;
  }
  if (!o->topology && !o->check_sel)
    return fprintf(stderr, "tpudist-sim: --topology is required\n"), -1;
  return 0;
}

static int buildSlice(const Opts *o, const simPreset *p, tdTopo *t);

/* --topology, then --slices: S such slices joined by DCN. */
static int buildTopo(const Opts *o, const simPreset *p, tdTopo *t) {
  char err[TD_ERRLEN];
  if (buildSlice(o, p, t)) return -1;
  if (o->slices > 1 && topoSetSlices(t, o->slices, err) != tpudistSuccess)
    return fprintf(stderr, "tpudist-sim: --slices %d: %s\n", o->slices, err), -1;
  return 0;
}

/* --topology: a plain AxBxC takes the preset's wrap rule and host bounds; a spec with ':' is the
 * torus model's own syntax (explicit wraps, twist, hosts, slices). */
static int buildSlice(const Opts *o, const simPreset *p, tdTopo *t) {
  char err[TD_ERRLEN];
  int dims[TD_MAX_DIMS], nd = 0;
  tdTopo parsed;
  if (topoParse(o->topology, 0, &parsed, err) != tpudistSuccess)
    return fprintf(stderr, "tpudist-sim: topology %s: %s\n", o->topology, err), -1;
  if (parsed.ndims == 0) { /* flat(N): every pair linked, each chip's injection shared */
    *t = parsed;
    return 0;
  }
  nd = parsed.ndims;
  memcpy(dims, parsed.dims, sizeof(dims));
  int twisted = o->twist || parsed.twisted;
  if (strchr(o->topology, ':')) {
    *t = parsed;
    if (o->twist && !t->twisted)
      return fprintf(stderr, "tpudist-sim: use :twist in the spec with explicit wraps\n"), -1;
  } else if (simPresetTopo(p, nd, dims, twisted, t, err) != tpudistSuccess) {
    return fprintf(stderr, "tpudist-sim: %s\n", err), -1;
  }
  char why[160];
  if (!simPresetSold(p, nd, dims, twisted, why, sizeof(why)))
    fprintf(stderr, "tpudist-sim: warning: %s is not a %s slice: %s\n", o->topology, p->name, why);
  return 0;
}

/* --dump-outputs: every rank's OUTPUT, rank after rank, raw bytes (the differential test). */
static void dumpOutput(void *ctx, int rank, const void *buf, size_t bytes) {
  (void)rank;
  if (fwrite(buf, 1, bytes, (FILE *)ctx) != bytes) fprintf(stderr, "tpudist-sim: dump failed\n");
}

static int parseFails(const char *s, simFailedLink **out, int *n) {
  *n = 0;
  *out = NULL;
  if (!s) return 0;
  int cap = 1;
  for (const char *c = s; *c; c++) cap += *c == ',';
  *out = calloc((size_t)cap, sizeof(simFailedLink));
  for (const char *c = s; c && *c; c = strchr(c, ',') ? strchr(c, ',') + 1 : NULL) {
    simFailedLink *f = &(*out)[*n];
    if (sscanf(c, "%d:%d:%d", &f->rank, &f->axis, &f->dir) != 3) {
      fprintf(stderr, "tpudist-sim: --fail-links wants RANK:AXIS:DIR (DIR 1 or -1)\n");
      return -1;
    }
    (*n)++;
  }
  return 0;
}

static double wallNow(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static long maxRssMiB(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024;
}

static int runOne(const simConfig *cfg, tdColl coll, const char *algo, uint64_t bytes, int root,
                  simResult *res, int print) {
  tdCollArgs a;
  memset(&a, 0, sizeof(a));
  a.coll = coll;
  a.nranks = cfg->topo->nranks;
  a.root = root;
  a.elem_size = cfg->functional ? (uint32_t)kernelDtypeSize(cfg->dtype) : 4;
  a.count = simCountForBytes(coll, a.nranks, bytes, a.elem_size);
  a.topo = cfg->topo;
  char err[TD_ERRLEN] = "";
  double w0 = wallNow();
  if (simRun(cfg, &a, algo, res, err) != tpudistSuccess) {
    if (print) fprintf(stderr, "tpudist-sim: %s %s: %s\n", schedCollName(coll), algo, err);
    return -1;
  }
  if (!print) return 0;
  double s = simAlgBytes(coll, a.nranks, a.count, a.elem_size), t = res->time;
  double alg = t > 0 ? s / t : 0, bus = alg * simBusFactor(coll, a.nranks);
  printf("%s %s %.0f bytes: time %.3f us  algbw %.2f GB/s  busbw %.2f GB/s\n", schedCollName(coll),
         algo, s, t * 1e6, alg / 1e9, bus / 1e9);
  printf("  links %d  util mean %.1f%% max %.1f%%  messages %llu  wire %.3g B  link-bytes %.3g B\n",
         res->nlinks, 100 * res->util_mean, 100 * res->util_max, (unsigned long long)res->messages,
         res->wire_bytes, res->link_bytes);
  printf("  flows max %llu  steps held max %llu  generations %llu  wall %.2f s  rss %ld MiB\n",
         (unsigned long long)res->max_flows, (unsigned long long)res->max_steps,
         (unsigned long long)res->generations, wallNow() - w0, maxRssMiB());
  if (res->dcn_bytes > 0)
    printf(
        "  dcn: %.3g B through host NICs, span %.3f us (first DCN byte to last delivery), "
        "busiest NIC %.1f%%\n",
        res->dcn_bytes, res->dcn_span * 1e6, 100 * res->dcn_util_max);
  if (res->symmetric)
    printf("  symmetric: %d ranks stood for all %d (their translates; %d plans checked)\n",
           res->sym_ranks, a.nranks, res->sym_samples);
  if (cfg->functional) printf("  %s\n", res->check_msg);
  return cfg->functional && !res->functional_ok ? -1 : 0;
}

/* Algorithms of coll: the --algos list, or every registered one. */
static int listAlgos(const Opts *o, tdColl coll, const char **names, int max) {
  int n = 0;
  if (o->algos) {
    static char buf[256];
    snprintf(buf, sizeof(buf), "%s", o->algos);
    for (char *tok = strtok(buf, ","); tok && n < max; tok = strtok(NULL, ",")) names[n++] = tok;
    return n;
  }
  for (const tdAlgo *a = tdAlgoTable; a->name && n < max; a++)
    if (a->coll == coll) names[n++] = a->name;
  return n;
}

static int compareAlgos(const Opts *o, const simConfig *cfg, tdColl coll) {
  const char *names[16];
  double times[16];
  int n = listAlgos(o, coll, names, 16), order[16], m = 0;
  for (int i = 0; i < n; i++) {
    simResult r;
    if (runOne(cfg, coll, names[i], o->bytes, o->root, &r, 0)) {
      printf("  %-13s refused on this shape\n", names[i]);
      continue;
    }
    times[i] = r.time;
    order[m++] = i;
  }
  for (int i = 1; i < m; i++) /* insertion sort by time */
    for (int j = i; j > 0 && times[order[j]] < times[order[j - 1]]; j--) {
      int t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  double s = simAlgBytes(coll, cfg->topo->nranks,
                         simCountForBytes(coll, cfg->topo->nranks, o->bytes, 4), 4);
  for (int k = 0; k < m; k++) {
    int i = order[k];
    double bus = s / times[i] * simBusFactor(coll, cfg->topo->nranks);
    printf("%d. %-13s time %12.3f us  busbw %9.2f GB/s  x%.2f\n", k + 1, names[i], times[i] * 1e6,
           bus / 1e9, times[i] / times[order[0]]);
  }
  return m ? 0 : -1;
}

/* --sweep: a table on stdout, the CSV (--csv, default tpudist-sim-sweep.csv) and its plot (--plot,
 * default tpudist-sim-sweep.png; --plot none skips it). */
static int sweep(const Opts *oin, const simConfig *cfg, tdColl coll, const char *argv0) {
  Opts oc = *oin, *o = &oc;
  if (!o->csv) o->csv = "tpudist-sim-sweep.csv";
  if (!o->plot) o->plot = "tpudist-sim-sweep.png";
  if (!strcmp(o->plot, "none")) o->plot = NULL;
  const char *names[16];
  int n = o->algos || !strcmp(o->algo, "auto") ? listAlgos(o, coll, names, 16) : 1;
  if (n == 1 && !o->algos && strcmp(o->algo, "auto")) names[0] = o->algo;
  FILE *csv = o->csv ? fopen(o->csv, "w") : NULL;
  if (o->csv && !csv) return fprintf(stderr, "tpudist-sim: cannot write %s\n", o->csv), -1;
  if (csv) fprintf(csv, "algo,bytes,time_s,algbw_GBps,busbw_GBps\n");
  printf("%-13s %14s %14s %12s %12s\n", "algo", "bytes", "time_us", "algbw_GB/s", "busbw_GB/s");
  for (int i = 0; i < n; i++)
    for (uint64_t b = o->min; b <= o->max; b *= (uint64_t)(o->step > 1 ? o->step : 4)) {
      simResult r;
      if (runOne(cfg, coll, names[i], b, o->root, &r, 0)) break;
      int nr = cfg->topo->nranks;
      double s = simAlgBytes(coll, nr, simCountForBytes(coll, nr, b, 4), 4);
      double alg = s / r.time, bus = alg * simBusFactor(coll, nr);
      printf("%-13s %14.0f %14.3f %12.2f %12.2f\n", names[i], s, r.time * 1e6, alg / 1e9,
             bus / 1e9);
      if (csv) fprintf(csv, "%s,%.0f,%.9g,%.6g,%.6g\n", names[i], s, r.time, alg / 1e9, bus / 1e9);
      fflush(stdout);
    }
  if (csv) fclose(csv);
  if (!o->plot) return 0;
  printf("csv %s, plot %s\n", o->csv, o->plot);
  char script[1024], cmd[4096];
  snprintf(script, sizeof(script), "%s", argv0);
  char *slash = strrchr(script, '/');
  if (slash) snprintf(slash + 1, sizeof(script) - (size_t)(slash + 1 - script), "sim_plot.py");
  if (!slash || access(script, R_OK)) snprintf(script, sizeof(script), "tools/sim_plot.py");
  /* the system interpreter carries matplotlib; a virtualenv's python3 may not */
  const char *py = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
  snprintf(cmd, sizeof(cmd), "%s '%s' '%s' '%s' '%s %s %s'", py, script, o->csv, o->plot,
           cfg->p.name, o->topology, o->coll);
  return system(cmd) == 0 ? 0 : -1;
}

/* --check-selection: a line per cell, then the summary; fails when the selected plan is worse
 * than 1.25x the best anywhere or within 5% of it in fewer than 95% of the cells. */
static int checkSelection(const Opts *o) {
  simSelSummary sum;
  char err[TD_ERRLEN];
  if (simCheckSelection(o->full ? 2 : 1, stdout, &sum, err) != tpudistSuccess)
    return fprintf(stderr, "tpudist-sim: %s\n", err), 1;
  printf("cells %d  within 5%% of the best %d (%.1f%%)  worst x%.3f (%s)\n", sum.cells, sum.within5,
         100.0 * sum.within5 / sum.cells, sum.worst, sum.worst_cell);
  return sum.worst <= 1.25 && sum.within5 >= 0.95 * sum.cells ? 0 : 1;
}

int main(int argc, char **argv) {
  Opts o;
  if (parseArgs(argc, argv, &o)) return 2;
  if (o.check_sel) return checkSelection(&o);
  const simPreset *p = simPresetFind(o.preset);
  if (!p) return fprintf(stderr, "tpudist-sim: unknown preset %s\n", o.preset), 2;
  int coll = schedCollFromName(o.coll);
  if (coll < 0) return fprintf(stderr, "tpudist-sim: unknown collective %s\n", o.coll), 2;
  tdTopo t;
  if (buildTopo(&o, p, &t)) return 2;
  simConfig cfg;
  simConfigDefault(&cfg, p, &t);
  if (o.link_bw > 0) cfg.p.link_bw = o.link_bw;
  if (o.latency >= 0) cfg.p.hop_latency = o.latency;
  if (o.overhead >= 0) cfg.p.msg_overhead = o.overhead;
  if (o.inj_bw > 0) cfg.p.inj_bw = o.inj_bw;
  if (o.window > 0) cfg.window = o.window;
  if (o.depth > 0) cfg.max_inflight = o.depth;
  if (o.dma > 0) cfg.max_dma = o.dma;
  if (o.piece > 0) cfg.piece_bytes = o.piece;
  if (o.dcn_bw > 0) cfg.dcn_bw = o.dcn_bw;
  if (o.dcn_latency >= 0) cfg.dcn_latency = o.dcn_latency;
  cfg.settle = o.settle;
  cfg.symmetric = !o.every_rank;
  cfg.functional = o.functional || o.dump;
  cfg.fractional = o.fractional;
  FILE *dump = o.dump ? fopen(o.dump, "wb") : NULL;
  if (o.dump && !dump) return fprintf(stderr, "tpudist-sim: cannot write %s\n", o.dump), 2;
  cfg.on_output = dump ? dumpOutput : NULL;
  cfg.output_ctx = dump;
  cfg.dtype = o.dtype;
  cfg.op = o.op;
  simFailedLink *fails;
  if (parseFails(o.fail, &fails, &cfg.nfailed)) return 2;
  cfg.failed = fails;
  char topo[64], algo[32], err[TD_ERRLEN];
  topoFormat(&t, topo, sizeof(topo));
  if (!o.quiet)
    printf("preset %s (link %.3g B/s per direction, %.3g s per hop)  topology %s  %d chips\n",
           p->name, cfg.p.link_bw, cfg.p.hop_latency, topo, t.nranks);
  if (!o.quiet && topoHasDcn(&t))
    printf("dcn: %d hosts, NIC %.3g B/s per direction, %.3g s per message\n", topoNumHosts(&t),
           cfg.dcn_bw, cfg.dcn_latency);
  int rc;
  if (o.moe) {
    rc = simMoe(&cfg, o.algos, o.moe_cases, o.moe_tokens ? o.moe_tokens : 2048, o.csv);
  } else if (o.compare) {
    rc = compareAlgos(&o, &cfg, (tdColl)coll);
  } else if (o.sweep) {
    rc = sweep(&o, &cfg, (tdColl)coll, argv[0]);
  } else {
    snprintf(algo, sizeof(algo), "%s", o.algo);
    tdCostModel m;
    simCostModel(&cfg, &m);
    if (!strcmp(o.algo, "auto") &&
        simSelectAlgo(&t, &m, (tdColl)coll, o.bytes, algo, sizeof(algo), err) != tpudistSuccess)
      return fprintf(stderr, "tpudist-sim: %s\n", err), 1;
    simResult r;
    rc = runOne(&cfg, (tdColl)coll, algo, o.bytes, o.root, &r, 1);
  }
  free(fails);
  if (dump) fclose(dump);
  return rc ? 1 : 0;
}
