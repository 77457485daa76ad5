/*
 * selcheck.c - does the library's selection pick what the simulator finds fastest? For every cell
 * of a grid (preset, shape, collective, size) it builds the selection table with the preset's
 * figures (simCostModel), takes the selected algorithm (the table's first candidate for the size)
 * and simulates every candidate the table lists; the cell's ratio is the selected one's time
 * over the fastest one's. Both sides see the same figures, so a ratio above 1 is the cost
 * model's error, not the link model's.
 */
#include <stdio.h>
#include <string.h>

#include "algos.h"
#include "select.h"
#include "sim.h"

void simCostModel(const simConfig *cfg, tdCostModel *m) {
  costModelDefault(cfg->topo, m);
  if (!cfg->topo || cfg->topo->ndims <= 0) return; /* flat: hosts, not a TPU torus */
  m->hop_latency = cfg->p.hop_latency;
  m->link_bw = cfg->p.link_bw;
  m->mem_bw = cfg->p.mem_bw;
  m->msg_overhead = 0; /* the simulator's synchronisation delays a message, it is not serialised */
  m->msg_latency = cfg->p.msg_overhead;
  m->piece_bytes = cfg->piece_bytes;
  m->dcn_bw = cfg->dcn_bw;
  m->dcn_latency = cfg->dcn_latency;
}

static tpudistResult_t runAlgo(const simConfig *cfg, tdColl coll, const char *algo, uint64_t bytes,
                               double *t, char *err) {
  tdCollArgs a;
  memset(&a, 0, sizeof(a));
  a.coll = coll;
  a.nranks = cfg->topo->nranks;
  a.elem_size = 4;
  a.count = simCountForBytes(coll, a.nranks, bytes, 4);
  a.topo = cfg->topo;
  simResult r;
  TD_CHECK(simRun(cfg, &a, algo, &r, err));
  *t = r.time;
  return tpudistSuccess;
}

tpudistResult_t simCheckCell(const simConfig *cfg, const tdSelectTable *tab, tdColl coll,
                             uint64_t bytes, simSelCell *out, char *err) {
  const char *names[TD_SELECT_MAX_CANDIDATES];
  int n = selectCandidates(tab, coll, bytes, names, TD_SELECT_MAX_CANDIDATES);
  memset(out, 0, sizeof(*out));
  if (n < 1)
    return tdErr(err, tpudistNotSupported, "sim: no candidate for %s", schedCollName(coll));
  out->t_best = -1;
  for (int i = 0; i < n; i++) {
    double t;
    tpudistResult_t r = runAlgo(cfg, coll, names[i], bytes, &t, err);
    if (r == tpudistNoMemory) return r;
    if (r != tpudistSuccess) {
      if (i == 0) return r; /* the selected one must run */
      continue;
    }
    if (i == 0) {
      snprintf(out->selected, sizeof(out->selected), "%s", names[0]);
      out->t_selected = t;
    }
    if (out->t_best < 0 || t < out->t_best) {
      out->t_best = t;
      snprintf(out->best, sizeof(out->best), "%s", names[i]);
    }
  }
  out->ratio = out->t_selected / out->t_best;
  return tpudistSuccess;
}

/* The grid: presets and shapes (plain, twisted, sub-blocks: a z-plane and a sub-cube, slices);
 * a spec with ':' is the torus model's own syntax, else the preset's wrap rule applies. */
typedef struct {
  const char *preset, *spec;
} simGridShape;

static const simGridShape kShapes[] = {
    /* the small grid (level 0) uses the first five: up to 64 ranks */
    {"v5e", "4x4"},
    {"v5p", "4x4:wrap=1,1"}, /* a z-plane of a cube (a sub-block) */
    {"v5p", "2x2x4:hosts=2,2,1:slices=2"},
    {"v5p", "2x4x4"}, /* a sub-cube slice: no wrap */
    {"v5p", "4x4x4"},
    {"v4", "4x4x8"},
    {"v4", "4x4x8:twist:hosts=2,2,1"},
    {"v6e", "8x16"},
};
#define SIM_GRID_SMALL_SHAPES 5
static const tdColl kColls[] = {TD_COLL_ALLREDUCE, TD_COLL_ALLGATHER, TD_COLL_REDUCESCATTER,
                                TD_COLL_ALLTOALL, TD_COLL_BROADCAST};

static tpudistResult_t gridTopo(const simGridShape *g, const simPreset *p, tdTopo *t, char *err) {
  TD_CHECK(topoParse(g->spec, 0, t, err));
  if (strchr(g->spec, ':')) return tpudistSuccess;
  int dims[TD_MAX_DIMS];
  memcpy(dims, t->dims, sizeof(dims));
  return simPresetTopo(p, t->ndims, dims, 0, t, err);
}

/* One shape: every collective and size of the grid at level. */
static tpudistResult_t checkShape(const simGridShape *g, int level, FILE *f, simSelSummary *sum,
                                  char *err) {
  const simPreset *p = simPresetFind(g->preset);
  tdTopo t;
  if (!p) return tdErr(err, tpudistInternalError, "sim: no preset %s", g->preset);
  TD_CHECK(gridTopo(g, p, &t, err));
  simConfig cfg;
  simConfigDefault(&cfg, p, &t);
  tdCostModel m;
  simCostModel(&cfg, &m);
  tdSelectTable *tab;
  TD_CHECK(selectBuild(&t, t.nranks, NULL, &m, &tab, err));
  tpudistResult_t r = tpudistSuccess;
  uint64_t lo = 4096, hi = level == 2 ? 256ull << 20 : 16ull << 20, step = level == 2 ? 4 : 16;
  for (size_t c = 0; c < TD_ARRAY_SIZE(kColls) && r == tpudistSuccess; c++)
    for (uint64_t b = lo; b <= hi && r == tpudistSuccess; b *= step) {
      simSelCell cell;
      r = simCheckCell(&cfg, tab, kColls[c], b, &cell, err);
      if (r != tpudistSuccess) break;
      sum->cells++;
      sum->within5 += cell.ratio <= 1.05;
      if (cell.ratio > sum->worst) {
        sum->worst = cell.ratio;
        snprintf(sum->worst_cell, sizeof(sum->worst_cell), "%s %s %s %llu", g->preset, g->spec,
                 schedCollName(kColls[c]), (unsigned long long)b);
      }
      if (f)
        fprintf(f,
                "%-4s %-26s %-13s %10llu  selected %-12s %11.3f us  best %-12s %11.3f us  x%.3f\n",
                g->preset, g->spec, schedCollName(kColls[c]), (unsigned long long)b, cell.selected,
                cell.t_selected * 1e6, cell.best, cell.t_best * 1e6, cell.ratio);
      if (f) fflush(f);
    }
  selectFree(tab);
  return r;
}

tpudistResult_t simCheckSelection(int level, FILE *f, simSelSummary *sum, char *err) {
  memset(sum, 0, sizeof(*sum));
  size_t n = level == 0 ? SIM_GRID_SMALL_SHAPES : TD_ARRAY_SIZE(kShapes);
  for (size_t i = 0; i < n; i++) TD_CHECK(checkShape(&kShapes[i], level, f, sum, err));
  return tpudistSuccess;
}
