/*
 * comm_sched.c - schedules for a communicator: the first selected candidate that accepts the
 * shape, generated once per (collective, algorithm, root, in-place) and cached (refusals too);
 * TPU_DIST_SCHED_DUMP_DIR dumps each new schedule; TPU_DIST_SCHED_FILE runs a hand-written one.
 * Two-phase all-to-all-v plans are generated per call from the exchanged count matrix (not cached);
 * the single-phase one once per communicator, its counts bound per call as layouts.
 */
#include <stdlib.h>
#include <string.h>

#include "algos.h"
#include "comm.h"
#include "rt_log.h"
#include "sched_io.h"

static void commDumpSched(tdComm *comm, const tdSched *s) {
  const char *dir = comm->net.cfg->sched_dump_dir;
  if (!dir) return;
  char path[512];
  snprintf(path, sizeof(path), "%s/%s-%s-n%d-r%d.sched", dir, schedCollName(s->coll), s->algo,
           s->nranks, s->rank);
  FILE *f = fopen(path, "w");
  if (!f) {
    TD_WARN(TD_SUBSYS_COLL, "cannot write schedule dump %s", path);
    return;
  }
  char err[TD_ERRLEN] = "";
  if (schedDump(s, f, err) != tpudistSuccess)
    TD_WARN(TD_SUBSYS_COLL, "schedule dump %s: %s", path, err);
  fclose(f);
}

/* Generator arguments for this rank of comm; the caller fills the collective's own fields. */
static tdCollArgs commCollArgs(const tdComm *comm, tdColl coll, uint32_t esize) {
  tdCollArgs a;
  memset(&a, 0, sizeof(a));
  a.coll = coll;
  a.nranks = comm->net.nranks;
  a.rank = comm->net.rank;
  a.topo = &comm->topo;
  a.elem_size = esize;
  return a;
}

static tdSchedEntry *cacheFind(tdComm *p, tdColl coll, int root, int inplace, const char *algo) {
  for (int i = 0; i < p->ncache; i++) {
    tdSchedEntry *e = p->cache[i];
    if (e->coll == coll && e->root == root && e->inplace == inplace && !strcmp(e->algo, algo))
      return e;
  }
  return NULL;
}

static tdSchedEntry *cacheGenerate(tdComm *comm, tdColl coll, int root, int inplace, uint64_t count,
                                   uint32_t esize, const char *algo, char *err) {
  tdComm *p = comm;
  if (tdGrow(&p->cache, &p->cache_cap, (size_t)p->ncache + 1, sizeof(*p->cache), 16)) return NULL;
  tdSchedEntry *e = calloc(1, sizeof(*e));
  if (!e) return NULL;
  e->coll = coll;
  e->root = root;
  e->inplace = inplace;
  snprintf(e->algo, sizeof(e->algo), "%s", algo);
  tdCollArgs a = commCollArgs(comm, coll, esize);
  a.root = root;
  a.inplace = inplace;
  a.count = count;
  e->gen_res = algoGenerate(&a, algo, &e->sched, err);
  if (e->gen_res == tpudistSuccess) {
    schedFuse(&e->sched);
    commDumpSched(comm, &e->sched);
    TD_INFO(TD_SUBSYS_COLL, "%s: generated %s/%s root %d inplace %d (%u streams)", comm->net.name,
            schedCollName(coll), algo, root, inplace, e->sched.nstreams);
  }
  p->cache[p->ncache++] = e;
  return e;
}

static tpudistResult_t loadFile(const char *path, tdSched **all, int *n, char *err) {
  FILE *f = fopen(path, "r");
  if (!f) return tdErr(err, tpudistInvalidArgument, "TPU_DIST_SCHED_FILE %s: cannot open", path);
  char *text = NULL;
  size_t len = 0, cap = 0, got;
  int oom = 0;
  do {
    if ((oom = tdGrow(&text, &cap, len + 4096, 1, 8192)) != 0) break;
    got = fread(text + len, 1, cap - len, f);
    len += got;
  } while (got > 0);
  fclose(f);
  if (oom) {
    free(text);
    return tdErr(err, tpudistNoMemory, "TPU_DIST_SCHED_FILE: out of memory");
  }
  tpudistResult_t r = schedLoadAll(text, len, all, n, err);
  free(text);
  return r;
}

/* TPU_DIST_SCHED_FILE: this rank's schedule from the file for (coll, root, inplace), if any. */
static tpudistResult_t fileSched(tdComm *comm, tdColl coll, int root, int inplace,
                                 const tdSched **out, char *err) {
  tdComm *p = comm;
  *out = NULL;
  if (!comm->net.cfg->sched_file) return tpudistSuccess;
  if (!p->file_scheds) {
    tdSched *all = NULL;
    int n = 0;
    TD_CHECK(loadFile(comm->net.cfg->sched_file, &all, &n, err));
    p->file_scheds = all;
    p->nfile_scheds = n;
  }
  for (int i = 0; i < p->nfile_scheds; i++) {
    const tdSched *s = &p->file_scheds[i];
    if (s->coll == coll && s->rank == comm->net.rank && s->nranks == comm->net.nranks &&
        s->root == root && s->inplace == inplace)
      *out = s;
  }
  return tpudistSuccess;
}

static tpudistResult_t findSched(tdComm *comm, tdColl coll, int root, int inplace, uint64_t count,
                                 uint64_t bytes, uint32_t esize, const tdSched **out, char *err);

tpudistResult_t commGetSched(tdComm *comm, tdColl coll, int root, int inplace, uint64_t count,
                             uint64_t bytes, uint32_t esize, const tdSched **out, char *err) {
  tdComm *p = comm;
  if ((unsigned)coll < TD_NUM_COLLS) {
    const tdSchedMemo *m = &p->last_sched[coll];
    if (m->valid && m->bytes == bytes && m->root == root && m->inplace == inplace) {
      *out = m->sched;
      comm->last_algo = m->algo;
      return tpudistSuccess;
    }
  }
  TD_CHECK(findSched(comm, coll, root, inplace, count, bytes, esize, out, err));
  if ((unsigned)coll < TD_NUM_COLLS)
    p->last_sched[coll] = (tdSchedMemo){1, root, inplace, bytes, *out, comm->last_algo};
  return tpudistSuccess;
}

/* The cached (or generated) schedule for one call: TPU_DIST_SCHED_FILE, else the selection's
 * candidates in order. */
static tpudistResult_t findSched(tdComm *comm, tdColl coll, int root, int inplace, uint64_t count,
                                 uint64_t bytes, uint32_t esize, const tdSched **out, char *err) {
  tdComm *p = comm;
  const tdSched *fs = NULL;
  TD_CHECK(fileSched(comm, coll, root, inplace, &fs, err));
  if (fs) {
    *out = fs;
    comm->last_algo = "file";
    return tpudistSuccess;
  }
  const char *names[TD_SELECT_MAX_CANDIDATES];
  int nc = commSelectCandidates(comm, coll, bytes, names, TD_SELECT_MAX_CANDIDATES);
  char why[TD_ERRLEN] = "no candidate algorithm";
  for (int i = 0; i < nc; i++) {
    tdSchedEntry *e = cacheFind(p, coll, root, inplace, names[i]);
    if (!e) e = cacheGenerate(comm, coll, root, inplace, count, esize, names[i], why);
    if (!e) return tdErr(err, tpudistNoMemory, "out of memory caching a schedule");
    if (e->gen_res == tpudistSuccess) {
      const tdAlgo *a = algoFind(coll, e->algo);
      comm->last_algo = a ? a->name : "unknown";
      *out = &e->sched;
      return tpudistSuccess;
    }
  }
  return tdErr(err, tpudistNotSupported,
               "no algorithm for %s on %d ranks (root %d, in place %d): %s", schedCollName(coll),
               comm->net.nranks, root, inplace, why);
}

tpudistResult_t commGenAlltoallv(tdComm *comm, const uint64_t *matrix, const uint64_t *sdispls,
                                 const uint64_t *rdispls, uint32_t esize, tdSched *s, char *err) {
  uint64_t total = 0;
  for (int i = 0; i < comm->net.nranks * comm->net.nranks; i++) total += matrix[i];
  uint64_t bytes = total * esize / (uint64_t)comm->net.nranks;
  const char *names[TD_SELECT_MAX_CANDIDATES];
  int nc = commSelectCandidates(comm, TD_COLL_ALLTOALLV, bytes, names, TD_SELECT_MAX_CANDIDATES);
  tdCollArgs a = commCollArgs(comm, TD_COLL_ALLTOALLV, esize);
  a.v_counts = matrix;
  a.v_sdispls = sdispls;
  a.v_rdispls = rdispls;
  tpudistResult_t r = tdErr(err, tpudistNotSupported, "no algorithm for alltoallv");
  for (int i = 0; i < nc; i++) {
    r = algoGenerate(&a, names[i], s, err);
    if (r == tpudistSuccess) {
      schedFuse(s);
      const tdAlgo *al = algoFind(TD_COLL_ALLTOALLV, names[i]);
      comm->last_algo = al ? al->name : "unknown";
      return r;
    }
  }
  return r;
}

/* The local form's steps are the same for every count (TD_ALGO_V_LOCAL), so the plan is generated
 * once, with one element per block, and each call gets a copy whose explicit INPUT/OUTPUT layouts
 * are its own counts and displacements: no generation and no allocation per call. */
static tpudistResult_t localPlan(tdComm *comm, char *err) {
  tdComm *p = comm;
  int n = comm->net.nranks;
  uint64_t *v = malloc(sizeof(uint64_t) * 2 * (size_t)n);
  if (!v) return tdErr(err, tpudistNoMemory, "alltoallv: out of memory");
  for (int i = 0; i < n; i++) v[i] = 1, v[n + i] = (uint64_t)i;
  tdCollArgs a = commCollArgs(comm, TD_COLL_ALLTOALLV, 4);
  a.v_local = 1;
  a.v_sendcounts = a.v_recvcounts = v;
  a.v_sdispls = a.v_rdispls = v + n;
  tpudistResult_t r = algoGenerate(&a, p->a2av_local, &p->a2av_plan, err);
  free(v);
  TD_CHECK(r);
  schedFuse(&p->a2av_plan);
  for (int b = TD_BUF_INPUT; b <= TD_BUF_OUTPUT; b++)
    if (!p->a2av_plan.layout[b].offsets || p->a2av_plan.layout[b].nblocks != (uint32_t)n ||
        p->a2av_plan.layout[b].chunks_per_block != 1) {
      schedFree(&p->a2av_plan);
      return tdErr(err, tpudistInternalError, "alltoallv %s: local form without explicit layouts",
                   p->a2av_local);
    }
  p->a2av_plan_ok = 1;
  TD_INFO(TD_SUBSYS_COLL, "%s: generated alltoallv/%s, local form (%u streams)", comm->net.name,
          p->a2av_local, p->a2av_plan.nstreams);
  return tpudistSuccess;
}

tpudistResult_t commAlltoallvLocal(tdComm *comm, uint64_t *sendcounts, uint64_t *recvcounts,
                                   uint64_t *sdispls, uint64_t *rdispls, tdSched *s, char *err) {
  tdComm *p = comm;
  if (!p->a2av_local) return tdErr(err, tpudistInternalError, "alltoallv: no single-phase plan");
  if (!p->a2av_plan_ok) TD_CHECK(localPlan(comm, err));
  *s = p->a2av_plan;
  s->layout[TD_BUF_INPUT].offsets = sdispls;
  s->layout[TD_BUF_INPUT].counts = sendcounts;
  s->layout[TD_BUF_OUTPUT].offsets = rdispls;
  s->layout[TD_BUF_OUTPUT].counts = recvcounts;
  comm->last_algo = p->a2av_local;
  return tpudistSuccess;
}

void commSchedFree(tdComm *comm) {
  tdComm *p = comm;
  for (int i = 0; i < p->ncache; i++) {
    if (p->cache[i]->gen_res == tpudistSuccess) schedFree(&p->cache[i]->sched);
    free(p->cache[i]);
  }
  free(p->cache);
  p->cache = NULL;
  p->ncache = p->cache_cap = 0;
  if (p->a2av_plan_ok) schedFree(&p->a2av_plan);
  p->a2av_plan_ok = 0;
  for (int i = 0; i < p->nfile_scheds; i++) schedFree(&p->file_scheds[i]);
  free(p->file_scheds);
  p->file_scheds = NULL;
  p->nfile_scheds = 0;
}
