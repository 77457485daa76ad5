/*
 * check.c - TPU_DIST_CHECK=1 (debug mode): before each collective the ranks all-gather its
 * signature (collective, datatype, op, count, root, sequence) with the communicator's all-gather
 * plan, as a first phase of the same operation. A difference fails the collective on every rank
 * with tpudistInvalidUsage and a message naming both calls, instead of a deadlock or silently
 * wrong data. Costs one small all-gather per call; every rank must set the same TPU_DIST_CHECK.
 */
#include <stdlib.h>
#include <string.h>

#include "comm_priv.h"
#include "kernels.h"

#define TD_CHK_WORDS 8
#define TD_CHK_MAGIC 0x7d5c4ec4ull

tpudistResult_t checkPrepare(tdComm *c, tdOp *op, int user_op, char *err) {
  if (!c->cfg->check) return tpudistSuccess;
  size_t n = (size_t)c->nranks, need = TD_CHK_WORDS * (n + 1);
  if (need > op->chk_cap) {
    free(op->chk_buf);
    op->chk_buf = calloc(need, sizeof(uint64_t));
    op->chk_cap = op->chk_buf ? need : 0;
    if (!op->chk_buf) return tdErr(err, tpudistNoMemory, "TPU_DIST_CHECK: out of memory");
  }
  const char *algo = c->last_algo;
  const tdSched *ag = NULL;
  tpudistResult_t r =
      commGetSched(c, TD_COLL_ALLGATHER, 0, 0, TD_CHK_WORDS, TD_CHK_WORDS * 8 * n, 8, &ag, err);
  c->last_algo = algo;
  TD_CHECK(r);
  uint64_t *sig = op->chk_buf;
  uint64_t w[TD_CHK_WORDS] = {TD_CHK_MAGIC,
                              (uint64_t)op->coll,
                              (uint64_t)op->dtype,
                              (uint64_t)user_op,
                              op->coll == TD_COLL_ALLTOALLV ? 0 : op->n,
                              (uint64_t)op->root,
                              op->seq,
                              0};
  memcpy(sig, w, sizeof(w));
  op->chk_sched = op->sched;
  op->chk_bufs[0] = op->bufs[TD_BUF_INPUT];
  op->chk_bufs[1] = op->bufs[TD_BUF_OUTPUT];
  op->chk_n = op->n;
  op->chk_esize = op->esize;
  op->chk_seq = c->priv->coll_seq; /* the real plan's sequence (two for all-to-all-v) */
  c->priv->coll_seq += op->coll == TD_COLL_ALLTOALLV ? 2 : 1;
  op->sched = ag;
  op->bufs[TD_BUF_INPUT] = (char *)sig;
  op->bufs[TD_BUF_OUTPUT] = (char *)(sig + TD_CHK_WORDS);
  op->n = TD_CHK_WORDS;
  op->esize = 8;
  op->chk_phase = 1;
  return tpudistSuccess;
}

static void describe(const uint64_t *w, char *buf, size_t len) {
  int op = (int)w[3];
  snprintf(buf, len, "%s(count %llu, %s%s%s, root %d, seq %llu)", schedCollName((tdColl)w[1]),
           (unsigned long long)w[4], kernelDtypeName((tpudistDataType_t)w[2]), op >= 0 ? ", " : "",
           op >= 0 ? kernelOpName((tpudistRedOp_t)op) : "", (int)w[5], (unsigned long long)w[6]);
}

tpudistResult_t checkVerify(tdOp *op, char *err) {
  tdComm *c = op->comm;
  const uint64_t *mine = op->chk_buf, *all = op->chk_buf + TD_CHK_WORDS;
  for (int r = 0; r < c->nranks; r++) {
    const uint64_t *o = all + (size_t)r * TD_CHK_WORDS;
    if (!memcmp(o, mine, TD_CHK_WORDS * sizeof(uint64_t))) continue;
    char a[96], b[96];
    describe(mine, a, sizeof(a));
    describe(o, b, sizeof(b));
    return tdErr(err, tpudistInvalidUsage, "collective mismatch: rank %d called %s, rank %d %s",
                 c->rank, a, r, o[0] == TD_CHK_MAGIC ? b : "did not check (TPU_DIST_CHECK unset?)");
  }
  op->sched = op->chk_sched;
  op->bufs[TD_BUF_INPUT] = op->chk_bufs[0];
  op->bufs[TD_BUF_OUTPUT] = op->chk_bufs[1];
  op->n = op->chk_n;
  op->esize = op->chk_esize;
  op->seq = op->chk_seq;
  op->chk_phase = 2;
  return tpudistSuccess;
}
