/*
 * check.c - TPU_DIST_CHECK=1 (and TPU_DIST_MODE=debug): before each collective the ranks all-gather
 * its signature (collective, datatype, op, count, root, sequence) with the communicator's
 * all-gather plan, as a first phase of the same operation. A difference fails the collective on
 * every rank with tpudistInvalidUsage and the same message on each, naming the distinct calls and
 * which ranks made them ("ranks 0-2 called allreduce(count 1000, ...); rank 3 called
 * allreduce(count 1001,
 * ...)"), instead of a deadlock or silently wrong data. Costs one small all-gather per call; every
 * rank must set the same TPU_DIST_CHECK.
 */
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "kernels.h"

#define TD_CHK_WORDS 8
#define TD_CHK_MAGIC 0x7d5c4ec4ull

static tpudistResult_t checkVerify(tdOp *op, char *err);

tpudistResult_t checkPrepare(tdComm *c, tdOp *op, int user_op, char *err) {
  if (!c->check) return tpudistSuccess;
  uint64_t real_seq = c->exec.coll_seq; /* two for a two-phase all-to-all-v */
  c->exec.coll_seq += op->coll == TD_COLL_ALLTOALLV && op->vphase == 0 ? 2 : 1;
  return checkPrepareSeq(c, op, user_op, real_seq, err);
}

tpudistResult_t checkPrepareSeq(tdComm *c, tdOp *op, int user_op, uint64_t real_seq, char *err) {
  size_t n = (size_t)c->net.nranks, need = TD_CHK_WORDS * (n + 1);
  if (need > op->chk_cap) {
    free(op->chk_buf);
    op->chk_buf = calloc(need, sizeof(uint64_t));
    op->chk_cap = op->chk_buf ? need : 0;
    if (!op->chk_buf) return tdErr(err, tpudistNoMemory, "TPU_DIST_CHECK: out of memory");
  }
  const tdSched *ag = c->ag8; /* set at creation: no lookup from the progress thread */
  if (!ag) {
    const char *algo = c->last_algo;
    tpudistResult_t r =
        commGetSched(c, TD_COLL_ALLGATHER, 0, 0, TD_CHK_WORDS, TD_CHK_WORDS * 8 * n, 8, &ag, err);
    c->last_algo = algo;
    TD_CHECK(r);
  }
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
  op->chk_seq = real_seq;
  op->sched = ag;
  op->bufs[TD_BUF_INPUT] = (char *)sig;
  op->bufs[TD_BUF_OUTPUT] = (char *)(sig + TD_CHK_WORDS);
  op->n = TD_CHK_WORDS;
  op->esize = 8;
  op->chk_phase = 1;
  op->chk_phase_next = op->phase; /* the real plan's own next phase */
  op->phase = checkVerify;
  return tpudistSuccess;
}

static void describe(const uint64_t *w, char *buf, size_t len) {
  int op = (int)w[3];
  snprintf(buf, len, "%s(count %llu, %s%s%s, root %d, seq %llu)", schedCollName((tdColl)w[1]),
           (unsigned long long)w[4], kernelDtypeName((tpudistDataType_t)w[2]), op >= 0 ? ", " : "",
           op >= 0 ? kernelOpName((tpudistRedOp_t)op) : "", (int)w[5], (unsigned long long)w[6]);
}

/* Appends the ranks whose signature equals sig ("ranks 0-2,5" / "rank 3") to buf. */
static void rankList(const uint64_t *all, int n, const uint64_t *sig, char *buf, size_t len) {
  size_t u = 0;
  int count = 0;
  for (int r = 0; r < n; r++)
    count += !memcmp(all + (size_t)r * TD_CHK_WORDS, sig, 8 * TD_CHK_WORDS);
  u += (size_t)snprintf(buf, len, "%s ", count > 1 ? "ranks" : "rank");
  for (int r = 0, first = 1; r < n && u < len; r++) {
    if (memcmp(all + (size_t)r * TD_CHK_WORDS, sig, 8 * TD_CHK_WORDS)) continue;
    int e = r;
    while (e + 1 < n && !memcmp(all + (size_t)(e + 1) * TD_CHK_WORDS, sig, 8 * TD_CHK_WORDS)) e++;
    u += (size_t)snprintf(buf + u, len - u, e > r ? "%s%d-%d" : "%s%d", first ? "" : ",", r, e);
    first = 0;
    r = e;
  }
}

/* The same message on every rank: each distinct call (lowest rank first) with its ranks. */
static tpudistResult_t mismatch(const tdComm *c, const uint64_t *all, char *err) {
  char msg[TD_ERRLEN] = "collective mismatch:";
  size_t u = strlen(msg);
  int groups = 0, shown = 0;
  for (int r = 0; r < c->net.nranks; r++) {
    const uint64_t *s = all + (size_t)r * TD_CHK_WORDS;
    int seen = 0;
    for (int q = 0; q < r && !seen; q++) seen = !memcmp(all + (size_t)q * TD_CHK_WORDS, s, 64);
    if (seen) continue;
    groups++;
    if (shown == 2) continue;
    char who[64], what[112];
    rankList(all, c->net.nranks, s, who, sizeof(who));
    if (s[0] == TD_CHK_MAGIC)
      describe(s, what, sizeof(what));
    else
      snprintf(what, sizeof(what), "no check (TPU_DIST_CHECK unset?)");
    u += (size_t)snprintf(msg + u, sizeof(msg) - TD_MIN(u, sizeof(msg)), "%s %s called %s",
                          shown ? ";" : "", who, what);
    shown++;
  }
  if (groups > shown && u < sizeof(msg))
    snprintf(msg + u, sizeof(msg) - u, "; and %d other calls", groups - shown);
  return tdErr(err, tpudistInvalidUsage, "%s", msg);
}

/* Phase callback: every rank's signature agrees with ours, then the real plan. */
static tpudistResult_t checkVerify(tdOp *op, char *err) {
  tdComm *c = commOfOp(op);
  const uint64_t *mine = op->chk_buf, *all = op->chk_buf + TD_CHK_WORDS;
  for (int r = 0; r < c->net.nranks; r++)
    if (memcmp(all + (size_t)r * TD_CHK_WORDS, mine, TD_CHK_WORDS * sizeof(uint64_t)))
      return mismatch(c, all, err);
  op->sched = op->chk_sched;
  op->bufs[TD_BUF_INPUT] = op->chk_bufs[0];
  op->bufs[TD_BUF_OUTPUT] = op->chk_bufs[1];
  op->n = op->chk_n;
  op->esize = op->chk_esize;
  op->seq = op->chk_seq;
  op->chk_phase = 2;
  op->phase = op->chk_phase_next;
  return tpudistSuccess;
}
