/*
 * window.c - per-rank schedules on demand: a rank's schedule is generated when the simulation
 * needs it, a window of each stream's steps (from the stream's issue cursor on) is copied out with
 * the match ordinals of its message ends, and the schedule is freed at once. When a stream runs
 * past its window the rank is generated again. Memory is the windows, not the plans.
 */
#include <stdlib.h>
#include <string.h>

#include "algos.h"
#include "sim_int.h"

/* Ordinals of the message ends of steps [0, end) of stream ts; only [first, end) are stored. */
static void winOrdinals(simEngine *e, const tdStream *ts, simStep *win, uint32_t first,
                        uint32_t end) {
  tdOrdCount c = {e->ordcnt, e->ordcnt + e->nranks, e->nranks};
  for (uint32_t i = 0; i < end; i++) {
    uint32_t so, ro;
    schedOrdNext(&c, &ts->steps[i], &so, &ro);
    if (i >= first) {
      win[i - first].sord = so;
      win[i - first].rord = ro;
    }
  }
  schedOrdReset(&c, ts->steps, end);
}

static tpudistResult_t winFirst(simRankState *rs, tdSched *s) {
  rs->lay = *s;
  memset(rs->lay.streams, 0, sizeof(rs->lay.streams));
  rs->lay.nstreams = 0;
  for (int b = 0; b < TD_NUM_BUFS; b++) { /* explicit tables now belong to the rank state */
    s->layout[b].offsets = NULL;
    s->layout[b].counts = NULL;
  }
  rs->nstreams = s->nstreams;
  rs->st = calloc(s->nstreams ? s->nstreams : 1, sizeof(simStreamState));
  if (!rs->st) return tpudistNoMemory;
  rs->live = 0;
  for (uint32_t i = 0; i < s->nstreams; i++) {
    simStreamState *ss = &rs->st[i];
    ss->nsteps = s->streams[i].nsteps;
    ss->done = calloc(ss->nsteps / 8 + 1, 1);
    if (!ss->done) return tpudistNoMemory;
    if (ss->nsteps) rs->live++;
  }
  rs->loaded = 1;
  return tpudistSuccess;
}

static tpudistResult_t winFill(simEngine *e, simRankState *rs, const tdSched *s) {
  uint32_t w = (uint32_t)e->cfg->window;
  for (uint32_t i = 0; i < rs->nstreams; i++) {
    simStreamState *ss = &rs->st[i];
    /* keep a window that still has more than half of its steps ahead: streams that advance
     * together then reload together, one generation for all */
    if (ss->win && ss->cursor < ss->win_first + ss->win_n / 2) continue;
    if (ss->win && ss->win_first + ss->win_n >= ss->nsteps) continue;    /* covers the rest */
    if (s->streams[i].nsteps != ss->nsteps) return tpudistInternalError; /* not deterministic */
    uint32_t first = ss->cursor, end = TD_MIN(ss->nsteps, first + w);
    e->held -= ss->win_n;
    free(ss->win);
    ss->win = NULL;
    ss->win_first = first;
    ss->win_n = end - first;
    if (!ss->win_n) continue;
    ss->win = malloc(sizeof(simStep) * ss->win_n);
    if (!ss->win) return tpudistNoMemory;
    for (uint32_t k = first; k < end; k++) ss->win[k - first].t = s->streams[i].steps[k];
    winOrdinals(e, &s->streams[i], ss->win, first, end);
    e->held += ss->win_n;
  }
  if (e->held > e->max_held) e->max_held = e->held;
  return tpudistSuccess;
}

tpudistResult_t winGenerate(simEngine *e, int r, tdSched *s) {
  tdCollArgs a = e->args;
  a.rank = r;
  memset(s, 0, sizeof(*s));
  uint64_t *dis = NULL; /* all-to-all-v from a count matrix: this rank's packed displacements */
  if (a.coll == TD_COLL_ALLTOALLV && a.v_counts && !a.v_local) {
    if (!(dis = malloc(sizeof(uint64_t) * 2 * (size_t)e->nranks))) return tpudistNoMemory;
    for (int q = 0; q < e->nranks; q++) {
      dis[q] = q ? dis[q - 1] + a.v_counts[(size_t)r * (size_t)e->nranks + (size_t)q - 1] : 0;
      dis[e->nranks + q] =
          q ? dis[e->nranks + q - 1] + a.v_counts[(size_t)(q - 1) * (size_t)e->nranks + (size_t)r]
            : 0;
    }
    a.v_sdispls = dis;
    a.v_rdispls = dis + e->nranks;
  }
  tpudistResult_t res = algoGenerate(&a, e->algo, s, e->err);
  free(dis);
  if (res == tpudistSuccess && e->cfg->fuse) schedFuse(s);
  if (res == tpudistSuccess && (s->nranks != e->nranks || s->nstreams > TD_MAX_STREAMS))
    res = tdErr(e->err, tpudistInternalError, "sim: rank %d's schedule has a bad shape", r);
  if (res != tpudistSuccess) schedFree(s);
  return res;
}

tpudistResult_t winLoad(simEngine *e, int r, uint32_t stream_needing) {
  (void)stream_needing;
  simRankState *rs = &e->ranks[r];
  tdSched s;
  tpudistResult_t res = winGenerate(e, r, &s);
  e->generations++;
  if (res != tpudistSuccess) return res;
  if (!rs->loaded) res = winFirst(rs, &s);
  if (res == tpudistSuccess) res = winFill(e, rs, &s);
  schedFree(&s);
  if (res != tpudistSuccess && !e->err[0])
    tdErr(e->err, res, "sim: cannot hold rank %d's steps", r);
  return res;
}
