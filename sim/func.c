/*
 * func.c - the simulator's functional mode: every rank gets real INPUT/OUTPUT/SCRATCH buffers
 * (in-place aliasing applied), each delivered message and local step moves or reduces real
 * elements with the shared kernels (kernels/kernels.h) at the simulated time it completes,
 * and the outputs are checked at the end against a reference computed directly from the
 * collective's definition (not from any schedule).
 *
 * Inputs are small integers (exact in float32 sums), so every dtype/op checked compares exactly.
 * Supported for checking: float32, int32, float64, int64 with sum, max, min.
 */
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "sim_int.h"

#define FUNC_MAX_BYTES (1ull << 30)

double simInputValue(int r, uint64_t i, int fractional) {
  double v = (double)((int)(((uint64_t)r * 131u + i * 7u) % 61u) - 30);
  if (fractional) v = v / 7.0 + (double)((r * 17 + (int)(i % 101)) % 13) / 3.0;
  return v;
}

static double funcVal(int r, uint64_t i) {
  return simInputValue(r, i, 0);
}

static void funcStore(void *p, uint64_t i, double v, tpudistDataType_t dt) {
  switch (dt) {
    case tpudistFloat32:
      ((float *)p)[i] = (float)v;
      break;
    case tpudistFloat64:
      ((double *)p)[i] = v;
      break;
    case tpudistInt32:
      ((int32_t *)p)[i] = (int32_t)v;
      break;
    case tpudistInt64:
      ((int64_t *)p)[i] = (int64_t)v;
      break;
    default:
      break;
  }
}

static double funcLoad(const void *p, uint64_t i, tpudistDataType_t dt) {
  switch (dt) {
    case tpudistFloat32:
      return ((const float *)p)[i];
    case tpudistFloat64:
      return ((const double *)p)[i];
    case tpudistInt32:
      return ((const int32_t *)p)[i];
    case tpudistInt64:
      return (double)((const int64_t *)p)[i];
    default:
      return 0;
  }
}

/* Where logical buffer buf of rank r lives: space and element shift (schedAlias). */
static void funcAlias(const simEngine *e, int r, int buf, int *space, uint64_t *shift) {
  const tdSched *l = &e->ranks[r].lay;
  tdBufKind sp;
  uint32_t block;
  schedAlias(l, (tdBufKind)buf, &sp, &block);
  *space = (int)sp;
  *shift = (uint64_t)block * l->count;
}

tpudistResult_t funcInit(simEngine *e) {
  tpudistDataType_t dt = e->cfg->dtype;
  if (dt != tpudistFloat32 && dt != tpudistFloat64 && dt != tpudistInt32 && dt != tpudistInt64)
    return tdErr(e->err, tpudistNotSupported, "sim: functional mode checks float32/64, int32/64");
  uint64_t total = 0;
  for (int r = 0; r < e->nranks; r++) {
    simRankState *rs = &e->ranks[r];
    for (int b = 0; b < TD_NUM_BUFS; b++) {
      int sp;
      uint64_t sh;
      funcAlias(e, r, b, &sp, &sh);
      if (sp != b) continue;
      uint64_t n = schedBufElems(&rs->lay, (tdBufKind)b, rs->lay.count);
      total += n * e->es;
      if (total > FUNC_MAX_BYTES)
        return tdErr(e->err, tpudistInvalidArgument, "sim: functional buffers over 1 GiB");
      rs->buf[b] = malloc(n ? n * e->es : 1);
      if (!rs->buf[b]) return tdErr(e->err, tpudistNoMemory, "sim: functional buffers");
      memset(rs->buf[b], 0x7f, n * e->es);
    }
    int sp;
    uint64_t sh, n = schedBufElems(&rs->lay, TD_BUF_INPUT, rs->lay.count);
    funcAlias(e, r, TD_BUF_INPUT, &sp, &sh);
    for (uint64_t i = 0; i < n; i++)
      funcStore(rs->buf[sp], sh + i, simInputValue(r, i, e->cfg->fractional), dt);
  }
  return tpudistSuccess;
}

void funcFree(simEngine *e) {
  for (int r = 0; e->ranks && r < e->nranks; r++)
    for (int b = 0; b < TD_NUM_BUFS; b++) {
      free(e->ranks[r].buf[b]);
      e->ranks[r].buf[b] = NULL;
    }
}

static tpudistResult_t funcPtr(simEngine *e, int r, tdBufRef ref, char **p, uint64_t *n) {
  const tdSched *l = &e->ranks[r].lay;
  tdSpan sp;
  TD_CHECK(schedRefSpan(l, ref, l->count, &sp));
  *p = (char *)e->ranks[r].buf[sp.space] + sp.b * e->es;
  *n = sp.e - sp.b;
  return tpudistSuccess;
}

/* The effect of step st of rank r (tdStepSemTable): dst <- a, or dst <- a (+) b; the message
 * received (in, nin elements) is the WIRE operand. */
static tpudistResult_t funcApply(simEngine *e, int r, const tdStep *st, char *in, uint64_t nin) {
  const tdStepSem *m = &tdStepSemTable[st->op];
  const uint8_t opnd[2] = {m->a, m->b};
  char *dst, *x[2] = {NULL, NULL};
  uint64_t nd, nx;
  TD_CHECK(funcPtr(e, r, st->dst, &dst, &nd));
  for (int i = 0; i < (m->effect == TD_EFFECT_REDUCE ? 2 : 1); i++) {
    if (opnd[i] == TD_OPND_WIRE)
      x[i] = in, nx = nin;
    else
      TD_CHECK(funcPtr(e, r, schedOpndRef(st, opnd[i]), &x[i], &nx));
    if (nx != nd)
      return tdErr(e->err, tpudistInternalError, "sim: %s operand size mismatch", m->name);
  }
  if (m->effect == TD_EFFECT_REDUCE)
    kernelReduce(dst, x[0], x[1], nd, e->cfg->dtype, e->cfg->op);
  else if (nd)
    memmove(dst, x[0], nd * e->es);
  return tpudistSuccess;
}

tpudistResult_t funcDeliver(simEngine *e, const simSlot *ss, const simSlot *rs) {
  char *in;
  uint64_t n;
  TD_CHECK(funcPtr(e, ss->rank, schedWireRef(&ss->step.t), &in, &n));
  return funcApply(e, rs->rank, &rs->step.t, in, n);
}

tpudistResult_t funcLocal(simEngine *e, const simSlot *s) {
  return funcApply(e, s->rank, &s->step.t, NULL, 0);
}

static double funcRed(double a, double b, tpudistRedOp_t op) {
  if (op == tpudistMax) return a > b ? a : b;
  if (op == tpudistMin) return a < b ? a : b;
  return a + b;
}

/* Expected value of output element i (of nout) on rank r; returns 0 if r has no output. */
static int funcExpect(const simEngine *e, int r, uint64_t i, double *v) {
  const tdCollArgs *a = &e->args;
  uint64_t c = a->count;
  int n = e->nranks;
  switch (a->coll) {
    case TD_COLL_REDUCE:
      if (r != a->root) return 0;
      /* fall through */
    case TD_COLL_ALLREDUCE:
    case TD_COLL_REDUCESCATTER: {
      uint64_t idx = a->coll == TD_COLL_REDUCESCATTER ? (uint64_t)r * c + i : i;
      double acc = funcVal(0, idx);
      for (int s = 1; s < n; s++) acc = funcRed(acc, funcVal(s, idx), e->cfg->op);
      *v = acc;
      return 1;
    }
    case TD_COLL_BROADCAST:
      *v = funcVal(a->root, i);
      return 1;
    case TD_COLL_ALLGATHER:
      *v = funcVal((int)(i / c), i % c);
      return 1;
    case TD_COLL_ALLTOALL:
      *v = funcVal((int)(i / c), (uint64_t)r * c + i % c);
      return 1;
    default:
      return 0;
  }
}

int funcCheck(simEngine *e, char *msg) {
  const tdCollArgs *a = &e->args;
  if (e->cfg->on_output)
    for (int r = 0; r < e->nranks; r++) {
      int sp;
      uint64_t sh;
      funcAlias(e, r, TD_BUF_OUTPUT, &sp, &sh);
      uint64_t n = schedBufElems(&e->ranks[r].lay, TD_BUF_OUTPUT, e->ranks[r].lay.count);
      if (sp != TD_BUF_OUTPUT) n = a->count;
      e->cfg->on_output(e->cfg->output_ctx, r, (const char *)e->ranks[r].buf[sp] + sh * e->es,
                        (size_t)(n * e->es));
    }
  if (e->cfg->fractional) {
    snprintf(msg, TD_ERRLEN, "functional: fractional inputs (not self-checked)");
    return 1;
  }
  if (a->coll == TD_COLL_ALLTOALLV || a->coll == TD_COLL_SENDRECV) {
    snprintf(msg, TD_ERRLEN, "functional: %s is not checked", schedCollName(a->coll));
    return 0;
  }
  if (e->cfg->op != tpudistSum && e->cfg->op != tpudistMax && e->cfg->op != tpudistMin) {
    snprintf(msg, TD_ERRLEN, "functional: only sum, max, min are checked");
    return 0;
  }
  uint64_t nout = a->count;
  if (a->coll == TD_COLL_ALLGATHER || a->coll == TD_COLL_ALLTOALL) nout *= (uint64_t)e->nranks;
  uint64_t checked = 0;
  for (int r = 0; r < e->nranks; r++) {
    int sp;
    uint64_t sh;
    funcAlias(e, r, TD_BUF_OUTPUT, &sp, &sh);
    for (uint64_t i = 0; i < nout; i++) {
      double want;
      if (!funcExpect(e, r, i, &want)) break;
      double got = funcLoad(e->ranks[r].buf[sp], sh + i, e->cfg->dtype);
      if (got != want) {
        snprintf(msg, TD_ERRLEN, "functional: rank %d output[%llu] = %g, expected %g", r,
                 (unsigned long long)i, got, want);
        return 0;
      }
      checked++;
    }
  }
  snprintf(msg, TD_ERRLEN, "functional: %llu output elements on %d ranks match",
           (unsigned long long)checked, e->nranks);
  return 1;
}
