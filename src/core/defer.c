/*
 * defer.c - TPU_DIST_MODE=defer: non-blocking collectives wait in the executor's deferred list
 * until a flush point, then the ranks agree on how many of them to start, and compatible ones run
 * fused into one operation (docs/runtime.md, "Execution modes").
 *
 * Flush points: a wait or test on a deferred request, a blocking or not deferrable call, GroupEnd,
 * CommDestroy, TPU_DIST_DEFER_OPS operations or TPU_DIST_DEFER_BYTES bytes deferred since the
 * caller's last flush point (all of them at the same place in every rank's issue sequence), and the
 * timer, TPU_DIST_DEFER_US after the first deferred operation (not at the same place). Each asks
 * for everything deferred up to now: its target, the last deferred operation. Requests wait in a
 * FIFO while an agreement is in flight.
 *
 * Agreement: a flush is an operation of its own, an all-gather of 8 words per rank (its own
 * sequence numbers, above every collective's) of (first deferred op, target, trigger, proposal):
 * the proposal is the target, or less where a later operation would touch memory an earlier one
 * in it writes (those must not run concurrently). When it completes, every rank starts the
 * operations up to the smallest proposal -- the same ones everywhere -- and keeps requests whose
 * target lies beyond for the next agreement. So a timer that fires on one rank only makes every
 * rank start a shorter prefix, never a different one, and the executor's queue holds the same
 * sequence on every rank. Under TPU_DIST_CHECK, an agreement that no timer asked for must see the
 * same target from every rank; otherwise the ranks' flush points diverge, and every rank fails
 * with the same message naming them.
 *
 * Fusion: among the operations started together, those with the same collective, datatype, op,
 * root and plan (compatible) become one operation over the concatenation of their buffers, block by
 * block, run with the plan each of them would have run. A host that runs a plan addresses its
 * members' buffers directly (the executor binds each step to them piece by piece, no piece crossing
 * a member: src/exec/exec_parts.c); a slot host, whose payload must be one contiguous buffer, and a
 * gathered host (below) copy their members' inputs into a pooled buffer and the results back.
 * Fused: reductions by a plan of whole blocks or one that reduces in rank order (each element is
 * reduced by the same tree whatever its position and the count, so the bits are those of strict
 * mode: see fusable) or through the
 * slots (slot all-reduces too many for one slot are all-gathered by any plan and reduced in rank
 * order at the end, as the slots reduce), broadcast, all-gather and all-to-all by any plan (they
 * only copy). Larger ones (TPU_DIST_DEFER_FUSE_BYTES), other plans and other collectives run on
 * their own, in the same batch. A host's completion or failure completes or fails each operation
 * it carries.
 */
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "kernels.h"
#include "rt_log.h"

#define TD_AGREE_WORDS 8 /* as TPU_DIST_CHECK's signatures: one all-gather plan for both */
#define TD_AGREE_MAGIC 0x7d5cdefe4ull
#define TD_AGREE_SEQ (1ull << 62) /* agreements' sequence numbers, above every collective's */
#define TD_FUSE_KEYS 16           /* fused hosts open at once in one flush */

static const char *triggerName(int k) {
  static const char *names[] = {"?",         "wait",       "test",    "call", "GroupEnd",
                                "ops limit", "byte limit", "destroy", "timer"};
  return k > 0 && k <= TD_FLUSH_TIMER ? names[k] : names[0];
}

int deferApplies(const tdComm *c, tdColl coll, const tpudistRequest_t *req) {
  return c->mode == TPUDIST_MODE_DEFER && req && coll != TD_COLL_ALLTOALLV;
}

/* ---- buffers of an operation ------------------------------------------------------------- */

/* Blocks of count elements in INPUT (in) or OUTPUT of op's collective. */
static uint64_t opBlocks(const tdOp *op, int in) {
  int n = op->net->nranks;
  switch (op->coll) {
    case TD_COLL_ALLGATHER:
      return in ? 1 : (uint64_t)n;
    case TD_COLL_REDUCESCATTER:
      return in ? (uint64_t)n : 1;
    case TD_COLL_ALLTOALL:
      return (uint64_t)n;
    default:
      return 1;
  }
}

static int overlap(const char *a, size_t alen, const char *b, size_t blen) {
  return a && b && alen && blen && a < b + blen && b < a + alen;
}

/* 1 if j may not run concurrently with the earlier i: one writes what the other touches. */
static int hazard(const tdOp *i, const tdOp *j) {
  size_t ii = i->n * i->esize * opBlocks(i, 1), io = i->n * i->esize * opBlocks(i, 0);
  size_t ji = j->n * j->esize * opBlocks(j, 1), jo = j->n * j->esize * opBlocks(j, 0);
  const char *iin = i->bufs[TD_BUF_INPUT], *iout = i->bufs[TD_BUF_OUTPUT];
  const char *jin = j->bufs[TD_BUF_INPUT], *jout = j->bufs[TD_BUF_OUTPUT];
  return overlap(iout, io, jin, ji) || overlap(iout, io, jout, jo) || overlap(iin, ii, jout, jo);
}

/* The last deferred operation up to target that may start together with all before it. */
static uint64_t proposal(tdExec *ex, uint64_t target) {
  uint64_t last = ex->dhead->dseq;
  for (tdOp *j = ex->dhead->next; j && j->dseq <= target; j = j->next) {
    for (tdOp *i = ex->dhead; i != j; i = i->next)
      if (hazard(i, j)) return last;
    last = j->dseq;
  }
  return last;
}

/* ---- agreement --------------------------------------------------------------------------- */

/* Grows *buf (64-byte aligned) to hold bytes, a quarter to spare: 0, or -1 (*buf kept) out of
 * memory. */
static int growAligned(void **buf, size_t *cap, size_t bytes) {
  if (bytes <= *cap) return 0;
  void *p = NULL;
  size_t ncap = bytes + bytes / 4;
  if (posix_memalign(&p, 64, ncap) != 0) return -1;
  memset(p, 0, ncap); /* touched once, reused by later flushes */
  free(*buf);
  *buf = p;
  *cap = ncap;
  return 0;
}

static tpudistResult_t growPack(tdOp *op, size_t bytes) {
  return growAligned(&op->pack, &op->pack_cap, bytes) ? tpudistNoMemory : tpudistSuccess;
}

/* Starts the agreement on the oldest flush request. Lock held. */
static void agreeStart(tdComm *c) {
  tdExec *ex = &c->exec;
  if (!ex->dhead) c->defer.nfifo = 0;
  if (!c->defer.nfifo || ex->dagree || ex->broken) return;
  tdOp *e = execOpAllocLocked(ex);
  size_t n = (size_t)c->net.nranks;
  if (!e || growPack(e, 8 * TD_AGREE_WORDS * (n + 1)) != tpudistSuccess) {
    if (e) e->done = 1, e->internal = 1, e->magic = TD_OP_FREED;
    execFailLocked(ex, tpudistNoMemory, "defer: out of memory for a flush");
    return;
  }
  uint64_t *w = e->pack;
  memset(w, 0, 8 * TD_AGREE_WORDS);
  w[0] = TD_AGREE_MAGIC;
  w[1] = ex->dhead->dseq;
  w[2] = c->defer.fifo_target[0];
  w[3] = (uint64_t)c->defer.fifo_kind[0];
  w[4] = proposal(ex, c->defer.fifo_target[0]);
  w[5] = c->defer.agree_no;
  e->kind = TD_OP_COLL;
  e->coll = TD_COLL_ALLGATHER;
  e->internal = 1;
  e->settle = 1; /* deferSettle: the agreed operations start when it ends */
  e->label = "defer flush";
  e->sched = c->ag8;
  e->algo = c->ag8->algo;
  e->seq = TD_AGREE_SEQ + c->defer.agree_no++;
  e->n = TD_AGREE_WORDS;
  e->esize = 8;
  e->dtype = tpudistUint64;
  e->bufs[TD_BUF_INPUT] = (char *)w;
  e->bufs[TD_BUF_OUTPUT] = (char *)(w + TD_AGREE_WORDS);
  if (!c->check && execSmallEligible(ex, TD_COLL_ALLGATHER, 8 * TD_AGREE_WORDS * n))
    execSmallInit(e); /* under the check, the plan: its end means every peer has our words */
  ex->dagree = 1;
  c->defer.stat_agreements++;
  execEnqueueLocked(ex, &e, 1, 0);
}

/* Adds a flush request for everything deferred now. Lock held. */
static void trigger(tdComm *c, tdDeferTrigger why) {
  tdExec *ex = &c->exec;
  if (!ex->dtail) return;
  if (why != TD_FLUSH_TIMER) c->defer.win_ops = c->defer.win_bytes = 0;
  uint64_t target = ex->dtail->dseq;
  if (c->defer.nfifo && c->defer.fifo_target[c->defer.nfifo - 1] >= target)
    return; /* asked for already */
  if (c->defer.nfifo == (int)TD_ARRAY_SIZE(c->defer.fifo_target)) {
    c->defer.fifo_target[c->defer.nfifo - 1] = target; /* full: the last request grows */
  } else {
    c->defer.fifo_target[c->defer.nfifo] = target;
    c->defer.fifo_kind[c->defer.nfifo++] = why;
  }
  agreeStart(c);
}

/* The same message on every rank: each rank's target and trigger. */
static tpudistResult_t divergence(const tdComm *c, const uint64_t *all, char *err) {
  char msg[TD_ERRLEN];
  size_t u = (size_t)snprintf(msg, sizeof(msg), "flush points diverge at deferred operation %llu:",
                              (unsigned long long)all[1]);
  for (int r = 0; r < c->net.nranks && u < sizeof(msg); r++) {
    const uint64_t *w = all + (size_t)r * TD_AGREE_WORDS;
    u += (size_t)snprintf(msg + u, sizeof(msg) - u, "%s rank %d flushes up to %llu (%s)",
                          r ? ";" : "", r, (unsigned long long)w[2], triggerName((int)w[3]));
  }
  return tdErr(err, tpudistInvalidUsage, "%s", msg);
}

static tpudistResult_t startAgreed(tdComm *c, uint64_t last, char *err);

/* An agreement has ended: every rank starts the same prefix of its deferred operations. */
static tpudistResult_t agreeEnded(tdOp *e, char *err) {
  tdComm *c = commOfOp(e);
  tdExec *ex = &c->exec;
  ex->dagree = 0;
  if (e->result != tpudistSuccess) return tpudistSuccess; /* the executor fails everything */
  const uint64_t *mine = e->pack, *all = mine + TD_AGREE_WORDS;
  uint64_t last = mine[4];
  int timer = 0, same = 1;
  for (int r = 0; r < c->net.nranks; r++) {
    const uint64_t *w = all + (size_t)r * TD_AGREE_WORDS;
    if (w[0] != TD_AGREE_MAGIC || w[1] != mine[1] || w[5] != mine[5])
      return tdErr(err, tpudistInvalidUsage,
                   "rank %d is not at the same flush (deferred operation %llu, flush %llu; "
                   "this rank: %llu, %llu); do all ranks use TPU_DIST_MODE=defer?",
                   r, (unsigned long long)w[1], (unsigned long long)w[5],
                   (unsigned long long)mine[1], (unsigned long long)mine[5]);
    last = TD_MIN(last, w[4]);
    timer |= w[3] == TD_FLUSH_TIMER;
    same &= w[2] == mine[2];
  }
  if (c->check && !timer && !same) return divergence(c, all, err);
  TD_CHECK(startAgreed(c, last, err));
  int k = 0;
  while (k < c->defer.nfifo && c->defer.fifo_target[k] <= last) k++;
  memmove(c->defer.fifo_target, c->defer.fifo_target + k,
          sizeof(uint64_t) * (size_t)(c->defer.nfifo - k));
  memmove(c->defer.fifo_kind, c->defer.fifo_kind + k, sizeof(int) * (size_t)(c->defer.nfifo - k));
  c->defer.nfifo -= k;
  ex->timer_ns =
      ex->dhead && c->net.cfg->defer_us ? clockNowNs() + 1000ull * c->net.cfg->defer_us : 0;
  agreeStart(c);
  return tpudistSuccess;
}

/* ---- fusion ------------------------------------------------------------------------------ */

/* 1 if every buffer of plan s is whole blocks (uniform layouts, one chunk per block): then every
 * step moves or reduces whole blocks, so each element goes through the same reductions in the
 * same order as every other element of its block, whatever its position and the count. */
static int blockwise(const tdSched *s) {
  for (int b = 0; b < TD_NUM_BUFS; b++)
    if (s->layout[b].offsets || s->layout[b].chunks_per_block > 1) return 0;
  return 1;
}

/* 1 if op may be fused with others of its key (concatenated block by block, so each element keeps
 * its block): the slots (reduced in rank order), a collective that only copies, or a reduction by
 * a blockwise plan (recursive doubling all-reduce; ring and recursive halving reduce-scatter, in
 * place or not; reduce by a tree of whole blocks) or by a plan that reduces every element in rank
 * order (the direct family), whose bits then are those of strict mode. Not ring all-reduce and
 * the other chunked plans: chunk c of a ring is reduced starting at rank c. */
static int fusable(const tdComm *c, const tdOp *op) {
  if (op->dbytes > (uint64_t)c->net.cfg->defer_fuse_bytes) return 0;
  if (op->kind == TD_OP_SMALL) return 1;
  switch (op->coll) {
    case TD_COLL_ALLREDUCE:
    case TD_COLL_REDUCE:
    case TD_COLL_REDUCESCATTER: /* in place too: each member's OUTPUT is in its own INPUT */
      return blockwise(op->sched) || op->sched->rank_order;
    case TD_COLL_BROADCAST:
    case TD_COLL_ALLGATHER:
    case TD_COLL_ALLTOALL:
      return 1;
    default:
      return 0;
  }
}

static int sameKey(const tdOp *a, const tdOp *b) {
  return a->kind == b->kind && a->coll == b->coll && a->dtype == b->dtype &&
         a->user_op == b->user_op && a->root == b->root && a->sched == b->sched;
}

/* A pool buffer of at least bytes (the smallest free one that fits, else one grown or added);
 * *slot names it. */
static void *poolTake(tdComm *c, size_t bytes, int *slot) {
  long best = -1;
  for (size_t i = 0; i < c->defer.npacks; i++)
    if (!c->defer.packs[i].used && c->defer.packs[i].cap >= bytes &&
        (best < 0 || c->defer.packs[i].cap < c->defer.packs[best].cap))
      best = (long)i;
  for (size_t i = 0; best < 0 && i < c->defer.npacks; i++)
    if (!c->defer.packs[i].used) best = (long)i;
  if (best < 0) {
    if (tdGrow(&c->defer.packs, &c->defer.packs_cap, c->defer.npacks + 1, sizeof(tdPackBuf), 4))
      return NULL;
    best = (long)c->defer.npacks++;
    c->defer.packs[best] = (tdPackBuf){NULL, 0, 0};
  }
  tdPackBuf *b = &c->defer.packs[best];
  if (growAligned(&b->buf, &b->cap, bytes)) return NULL;
  b->used = 1;
  *slot = (int)best;
  return b->buf;
}

/* Copies between the host's buffer (region at base, blocks of h->n) and member m's (blocks of
 * m->n at off elements into each host block): in = 1 packs m's INPUT, 0 unpacks into its OUTPUT. */
static void copyMember(const tdOp *h, tdOp *m, uint64_t off, int in) {
  size_t es = h->esize, mb = m->n * es;
  char *base = h->bufs[in ? TD_BUF_INPUT : TD_BUF_OUTPUT];
  char *mine = m->bufs[in ? TD_BUF_INPUT : TD_BUF_OUTPUT];
  if (!mb || !mine) return;
  uint64_t nb = opBlocks(h, in);
  for (uint64_t b = 0; b < nb; b++) {
    char *hp = base + (b * h->n + off) * es, *mp = mine + b * mb;
    if (in)
      memcpy(hp, mp, mb);
    else
      memcpy(mp, hp, mb);
  }
}

/* Exchanges host h's plan scratch with the communicator's where that leaves the larger one with h
 * at its start and with the communicator at its end: the hosts' plan scratch stays with the
 * communicator instead of with whichever operation objects once ran a host. */
static void scratchSwap(tdComm *c, tdOp *h, int start) {
  if (start ? c->defer.host_scratch_cap <= h->scratch_cap
            : h->scratch_cap <= c->defer.host_scratch_cap)
    return;
  void *p = h->scratch;
  size_t cap = h->scratch_cap;
  h->scratch = c->defer.host_scratch;
  h->scratch_cap = c->defer.host_scratch_cap;
  c->defer.host_scratch = p;
  c->defer.host_scratch_cap = cap;
}

/* Binds host h to its members' buffers, which the executor addresses directly (exec_parts.c):
 * one part per member with elements, in order. */
static tpudistResult_t hostParts(tdComm *c, tdOp *h) {
  size_t n = 0;
  for (tdOp *m = h->members; m; m = m->next) n++;
  if (tdGrow(&h->parts, &h->parts_cap, n, sizeof(tdPart), 16)) return tpudistNoMemory;
  h->nparts = 0;
  uint64_t off = 0;
  for (tdOp *m = h->members; m; m = m->next) {
    if (!m->n) continue;
    h->parts[h->nparts++] = (tdPart){{m->bufs[TD_BUF_INPUT], m->bufs[TD_BUF_OUTPUT]}, off, m->n};
    off += m->n;
  }
  h->parted = 1;
  c->defer.stat_direct++;
  c->defer.stat_direct_colls |= 1u << h->coll;
  return tpudistSuccess;
}

/* Binds host h (a slot or gathered host, fields copied from its first member) to a packed buffer
 * and packs the members. Slot hosts never run in place (the slots copy their input first). */
static tpudistResult_t hostPack(tdComm *c, tdOp *h) {
  size_t es = h->esize;
  size_t inb = h->n * es * opBlocks(h, 1), outb = h->n * es * opBlocks(h, 0);
  inb = (inb + 63) & ~(size_t)63;
  char *base = poolTake(c, inb + outb + 64, &h->pool_slot);
  if (!base) return tpudistNoMemory;
  h->bufs[TD_BUF_OUTPUT] = base + inb;
  h->bufs[TD_BUF_INPUT] = base;
  uint64_t off = 0;
  for (tdOp *m = h->members; m; m = m->next) {
    copyMember(h, m, off, 1);
    off += m->n;
  }
  return tpudistSuccess;
}

/* A gathered host (gatherHost) has ended: each member's output is the ranks' blocks reduced in
 * rank order, as the slots reduce them (so the bits are those of strict mode). */
static void gatheredReduce(const tdComm *c, const tdOp *h) {
  size_t es = h->esize, block = h->n * es;
  const char *g = h->bufs[TD_BUF_OUTPUT];
  uint64_t off = 0;
  for (tdOp *m = h->members; m; off += m->n, m = m->next) {
    char *out = m->bufs[TD_BUF_OUTPUT];
    if (!m->n) continue;
    memcpy(out, g + off * es, m->n * es);
    for (int r = 1; r < c->net.nranks; r++)
      kernelReduce(out, out, g + (size_t)r * block + off * es, m->n, (tpudistDataType_t)m->dtype,
                   (tpudistRedOp_t)m->redop);
    if (m->avg_count)
      kernelFinishAvg(out, m->avg_count, (tpudistDataType_t)m->dtype, c->net.nranks);
  }
}

/* A fused host's end: a gathered host's reduction, a slot host's results copied back, Avg's
 * division of each member's output; then each member completes with the host's result. */
static void hostSettle(tdComm *c, tdOp *h) {
  if (h->result == tpudistSuccess && h->coll != h->members->coll) {
    gatheredReduce(c, h);
  } else if (h->parted) {
    if (h->result == tpudistSuccess && h->user_op == tpudistAvg &&
        (h->coll != TD_COLL_REDUCE || h->root == c->net.rank))
      for (tdOp *m = h->members; m; m = m->next) /* the reductions' output: one block of m->n */
        if (m->n) kernelFinishAvg(m->bufs[TD_BUF_OUTPUT], m->n, h->dtype, h->net->nranks);
  } else if (h->result == tpudistSuccess) { /* a slot host: all-reduce, all-gather, all-to-all */
    if (h->user_op == tpudistAvg)           /* the reductions' output: one block of h->n */
      kernelFinishAvg(h->bufs[TD_BUF_OUTPUT], h->n, h->dtype, h->net->nranks);
    uint64_t off = 0;
    for (tdOp *m = h->members; m; m = m->next) {
      copyMember(h, m, off, 0);
      off += m->n;
    }
  }
  if (h->pool_slot >= 0) c->defer.packs[h->pool_slot].used = 0;
  if (h->result == tpudistSuccess && h->kind == TD_OP_COLL) /* no transfer can still use it */
    scratchSwap(c, h, 0);
  tdOp *m = h->members;
  h->members = NULL;
  while (m) {
    tdOp *next = m->next;
    m->next = NULL;
    m->deferred = 0;
    m->result = h->result;
    m->done = 1;
    m = next;
  }
}

/* 1 if a slot host of n elements fits one slot (all-reduce: the whole; others: a block). */
static int slotFits(const tdComm *c, uint64_t n, size_t esize) {
  return n * esize <= TD_MIN((uint64_t)c->net.cfg->small_bytes, (uint64_t)TD_SMALL_MAX_BYTES);
}

/* Slot all-reduces too many for one slot: the host all-gathers the members' inputs by the
 * communicator's all-gather plan (it only copies) and gatheredReduce reduces them in rank order. */
static tpudistResult_t gatherHost(tdComm *c, tdOp *h, char *err) {
  uint64_t n = (uint64_t)c->net.nranks;
  const char *algo = c->last_algo; /* tpudistLastAlgorithm names the caller's, not ours */
  tpudistResult_t r = commGetSched(c, TD_COLL_ALLGATHER, 0, 0, h->n, h->n * h->esize * n,
                                   (uint32_t)h->esize, &h->sched, err);
  c->last_algo = algo;
  if (r != tpudistSuccess) return r;
  h->kind = TD_OP_COLL;
  h->coll = TD_COLL_ALLGATHER;
  h->algo = h->sched->algo;
  c->defer.stat_gathered++;
  return tpudistSuccess;
}

/* A host carrying the members listed from first (linked through next). */
static tpudistResult_t hostMake(tdComm *c, tdOp *first, tdOp **out, char *err) {
  tdOp *h = execOpAllocLocked(&c->exec);
  if (!h) return tpudistNoMemory;
  h->kind = first->kind;
  h->coll = first->coll;
  h->sched = first->sched;
  h->algo = first->algo;
  h->seq = first->seq;
  h->dchk_seq = first->dchk_seq;
  h->esize = first->esize;
  h->dtype = first->dtype;
  h->redop = first->redop;
  h->user_op = first->user_op;
  h->root = first->root;
  h->internal = 1;
  h->settle = 1; /* deferSettle: completes the members */
  h->members = first;
  h->pool_slot = -1;
  h->n = 0;
  for (tdOp *m = first; m; m = m->next) h->n += m->n;
  tpudistResult_t r = tpudistSuccess;
  if (h->kind == TD_OP_SMALL && !slotFits(c, h->n, h->esize)) r = gatherHost(c, h, err);
  int direct = h->kind == TD_OP_COLL && h->coll == first->coll; /* neither slot nor gathered */
  if (r == tpudistSuccess && (direct ? hostParts(c, h) : hostPack(c, h)) != tpudistSuccess)
    r = tdErr(err, tpudistNoMemory, "defer: out of memory for a fused operation");
  if (r != tpudistSuccess) {
    h->members = NULL;
    h->done = 1; /* kept aside (lock held): freed with the communicator */
    h->magic = TD_OP_FREED;
    return r;
  }
  if (h->kind == TD_OP_SMALL)
    execSmallInit(h);
  else
    scratchSwap(c, h, 1);
  c->defer.stat_hosts++;
  c->defer.stat_host_colls |= 1u << first->coll;
  for (tdOp *m = first; m; m = m->next) c->defer.stat_fused++;
  *out = h;
  return tpudistSuccess;
}

/* Adds op to the flush's batch (checked first under TPU_DIST_CHECK). */
static tpudistResult_t batchAdd(tdComm *c, tdOp *op, int *n, char *err) {
  if (c->check && op->kind == TD_OP_COLL)
    TD_CHECK(checkPrepareSeq(c, op, op->user_op, op->dchk_seq, err));
  c->defer.batch[(*n)++] = op;
  return tpudistSuccess;
}

/* The slot path's limit on a fused host: what one slot carries to each peer. A slot all-reduce has
 * none: a host too large for a slot is gathered (gatherHost). */
static int fitsSlot(const tdComm *c, const tdOp *h, const tdOp *m) {
  return h->kind != TD_OP_SMALL || h->coll == TD_COLL_ALLREDUCE ||
         slotFits(c, h->n + m->n, h->esize);
}

/* Queues the operations of one key (first, linked through next): alone, or fused. */
static tpudistResult_t fuseFlushKey(tdComm *c, tdOp *first, int *n, char *err) {
  tdOp *op = first;
  if (first->next) TD_CHECK(hostMake(c, first, &op, err));
  tpudistResult_t r = batchAdd(c, op, n, err);
  if (r != tpudistSuccess && op != first) { /* never queued: its members fail, its buffer returns */
    op->result = r;
    hostSettle(c, op);
  }
  return r;
}

/* Groups the taken operations (list in issue order) into hosts and single operations. */
static tpudistResult_t fuseAndQueue(tdComm *c, tdOp *list, size_t count, char *err) {
  if (tdGrow(&c->defer.batch, &c->defer.batch_cap, count, sizeof(tdOp *), 64))
    return tdErr(err, tpudistNoMemory, "defer: out of memory for %zu operations", count);
  tdOp *keyFirst[TD_FUSE_KEYS], *keyLast[TD_FUSE_KEYS];
  uint64_t keyN[TD_FUSE_KEYS];
  int nkeys = 0, n = 0;
  for (tdOp *op = list, *next; op; op = next) {
    next = op->next;
    op->next = NULL;
    op->deferred = 2;
    int k = 0;
    while (k < nkeys && !sameKey(keyFirst[k], op)) k++;
    if (!fusable(c, op)) {
      TD_CHECK(batchAdd(c, op, &n, err));
      continue;
    }
    if (k == nkeys && nkeys == TD_FUSE_KEYS) { /* all open: the oldest key's host goes first */
      TD_CHECK(fuseFlushKey(c, keyFirst[0], &n, err));
      nkeys--;
      memmove(keyFirst, keyFirst + 1, sizeof(tdOp *) * (size_t)nkeys);
      memmove(keyLast, keyLast + 1, sizeof(tdOp *) * (size_t)nkeys);
      memmove(keyN, keyN + 1, sizeof(uint64_t) * (size_t)nkeys);
      k = nkeys;
    }
    tdOp probe = {.kind = op->kind, .coll = op->coll, .esize = op->esize};
    if (k < nkeys) {
      probe.n = keyN[k];
      if (fitsSlot(c, &probe, op)) {
        keyLast[k]->next = op;
        keyLast[k] = op;
        keyN[k] += op->n;
        continue;
      }
      TD_CHECK(fuseFlushKey(c, keyFirst[k], &n, err)); /* full: this key starts again */
      keyFirst[k] = keyLast[k] = op;
      keyN[k] = op->n;
      continue;
    }
    keyFirst[nkeys] = keyLast[nkeys] = op;
    keyN[nkeys++] = op->n;
  }
  for (int k = 0; k < nkeys; k++) TD_CHECK(fuseFlushKey(c, keyFirst[k], &n, err));
  execEnqueueLocked(&c->exec, c->defer.batch, n, 0);
  return tpudistSuccess;
}

/* Takes the deferred operations up to last (agreed by every rank) and queues them as one batch.
 * On failure every taken operation that did not reach the queue fails with the error. */
static tpudistResult_t startAgreed(tdComm *c, uint64_t last, char *err) {
  tdExec *ex = &c->exec;
  tdOp *list = ex->dhead, *tail = NULL;
  size_t count = 0;
  for (tdOp *op = ex->dhead; op && op->dseq <= last; op = op->next) tail = op, count++;
  if (!tail) return tpudistSuccess;
  ex->dhead = tail->next;
  if (!ex->dhead) ex->dtail = NULL;
  tail->next = NULL;
  if (tdGrow(&c->defer.taken, &c->defer.taken_cap, count, sizeof(tdOp *), 64))
    return tdErr(err, tpudistNoMemory, "defer: out of memory for %zu operations", count);
  size_t i = 0;
  for (tdOp *op = list; op; op = op->next) c->defer.taken[i++] = op;
  tpudistResult_t r = fuseAndQueue(c, list, count, err);
  for (i = 0; r != tpudistSuccess && i < count; i++) {
    tdOp *op = c->defer.taken[i];
    if (op->done || op->queued) continue;
    op->deferred = 0;
    op->result = r;
    op->done = 1;
  }
  return r;
}

/* ---- the calls ------------------------------------------------------------------------------ */

/* The executor's hook when a host or an agreement ends (lock held). */
static tpudistResult_t deferSettle(tdOp *op, char *err) {
  if (!op->members) return agreeEnded(op, err);
  hostSettle(commOfOp(op), op);
  return tpudistSuccess;
}

static void deferOnTimer(tdExec *ex) {
  trigger(commOfExec(ex), TD_FLUSH_TIMER);
}

void deferFree(tdDefer *d) {
  free(d->batch);
  free(d->taken);
  d->batch = d->taken = NULL;
  d->batch_cap = d->taken_cap = 0;
  for (size_t i = 0; i < d->npacks; i++) free(d->packs[i].buf);
  free(d->packs);
  d->packs = NULL;
  d->npacks = d->packs_cap = 0;
  free(d->host_scratch);
  d->host_scratch = NULL;
  d->host_scratch_cap = 0;
}

tpudistResult_t deferInit(tdComm *c, char *err) {
  c->exec.on_timer = deferOnTimer;
  c->exec.on_settle = deferSettle;
  if (c->mode != TPUDIST_MODE_DEFER && !c->check) return tpudistSuccess;
  uint64_t n = (uint64_t)c->net.nranks;
  const char *algo = c->last_algo;
  tpudistResult_t r = commGetSched(c, TD_COLL_ALLGATHER, 0, 0, TD_AGREE_WORDS,
                                   TD_AGREE_WORDS * 8 * n, 8, &c->ag8, err);
  c->last_algo = algo;
  return r;
}

/* A flush point of the caller: the byte and operation windows start again (in every rank's issue
 * sequence alike, whatever has been agreed meanwhile), and everything deferred is asked for. */
static void flushPoint(tdComm *c, tdDeferTrigger why) {
  c->defer.win_ops = c->defer.win_bytes = 0;
  trigger(c, why);
}

void deferAdd(tdComm *c, tdOp *op, uint64_t bytes) {
  tdExec *ex = &c->exec;
  const tdConfig *cfg = c->net.cfg;
  pthread_mutex_lock(&ex->lock);
  op->dseq = c->defer.next_dseq++;
  op->dbytes = bytes;
  op->next = NULL;
  if (ex->broken || c->net.aborted) { /* fails at once, as a queued operation would */
    op->result = c->net.aborted ? tpudistAborted : ex->async_error;
    op->done = 1;
    pthread_mutex_unlock(&ex->lock);
    return;
  }
  op->deferred = 1;
  if (ex->dtail)
    ex->dtail->next = op;
  else
    ex->dhead = op;
  ex->dtail = op;
  if (!ex->timer_ns && cfg->defer_us) {
    uint64_t now = clockNowNs();
    ex->timer_ns = now + 1000ull * (uint64_t)cfg->defer_us;
    ex->poll_ns = 1000ull * (uint64_t)cfg->defer_us;
    ex->poll_until_ns = now + 1000000000ull; /* the progress thread polls for a second */
    if (ex->sleeping) pthread_cond_signal(&ex->cond);
  }
  c->defer.win_ops++;
  c->defer.win_bytes += bytes;
  if (c->defer.win_ops >= (uint64_t)cfg->defer_ops)
    flushPoint(c, TD_FLUSH_OPS);
  else if (c->defer.win_bytes >= (uint64_t)cfg->defer_bytes)
    flushPoint(c, TD_FLUSH_BYTES);
  pthread_mutex_unlock(&ex->lock);
}

tpudistResult_t deferFlush(tdComm *c, tdDeferTrigger why) {
  tdExec *ex = &c->exec;
  tpudistResult_t r = tpudistSuccess;
  pthread_mutex_lock(&ex->lock);
  flushPoint(c, why);
  if (ex->dhead || ex->dagree) r = execWaitDeferredLocked(ex);
  pthread_mutex_unlock(&ex->lock);
  return r;
}

void deferTouch(tdOp *op, tdDeferTrigger why) {
  tdComm *c = commOfOp(op);
  if (c->mode != TPUDIST_MODE_DEFER) return;
  pthread_mutex_lock(&c->exec.lock);
  flushPoint(c, why);
  pthread_mutex_unlock(&c->exec.lock);
}
