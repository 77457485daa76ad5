/*
 * sched_ir.h - the schedule IR: one rank's plan for one collective, as plain data.
 * docs/schedule-ir.md is the specification; this header is its C form.
 *
 * A schedule has up to TD_MAX_STREAMS streams; each is an ordered list of steps. Buffers are
 * symbolic (INPUT, OUTPUT, SCRATCH) and addressed in chunks; chunk -> element ranges bind at
 * execution time through the buffer's layout (schedChunkRange). Nothing here is a pointer to
 * user memory or a connection. What each op reads, writes and sends is the step-semantics table
 * (step_sem.h, which builds on this header).
 */
#ifndef TD_SCHED_H_
#define TD_SCHED_H_

#include "td_base.h"
#include "torus.h"

#define TD_MAX_STREAMS 16
#define TD_NO_DEP 0xffffu

typedef enum {
  TD_COLL_ALLREDUCE = 0,
  TD_COLL_BROADCAST,
  TD_COLL_REDUCE,
  TD_COLL_ALLGATHER,
  TD_COLL_REDUCESCATTER,
  TD_COLL_ALLTOALL,
  TD_COLL_ALLTOALLV,
  TD_COLL_SENDRECV,
  TD_NUM_COLLS
} tdColl;

typedef enum { TD_BUF_INPUT = 0, TD_BUF_OUTPUT = 1, TD_BUF_SCRATCH = 2, TD_NUM_BUFS = 3 } tdBufKind;

typedef enum {
  TD_STEP_SEND = 0,         /* wire(peer)  <- src                                 */
  TD_STEP_RECV,             /* dst         <- wire(peer)                          */
  TD_STEP_RECV_REDUCE,      /* dst         <- src (+) wire(peer)                  */
  TD_STEP_COPY,             /* dst         <- src                                 */
  TD_STEP_REDUCE,           /* dst         <- dst (+) src                         */
  TD_STEP_RECV_REDUCE_SEND, /* dst <- src (+) wire(peer); wire(peer2) <- dst      */
  TD_STEP_RECV_COPY_SEND,   /* dst <- wire(peer);          wire(peer2) <- dst     */
  TD_NUM_STEP_OPS
} tdStepOp;

/* A run of nchunks consecutive chunks of one buffer; must be contiguous in memory. */
typedef struct {
  uint8_t buf; /* tdBufKind */
  uint32_t chunk;
  uint32_t nchunks;
} tdBufRef;

typedef struct {
  uint16_t stream; /* TD_NO_DEP = none */
  uint32_t step;
} tdDep;

typedef struct {
  uint8_t op;    /* tdStepOp */
  int32_t peer;  /* SEND: destination; RECV*: source */
  int32_t peer2; /* fused ops: where dst is forwarded; else -1 */
  tdBufRef src;  /* SEND, COPY, REDUCE, RECV_REDUCE(_SEND): the local operand */
  tdBufRef dst;  /* RECV*, COPY, REDUCE: written */
  tdDep deps[2]; /* steps of other streams that must complete first */
} tdStep;

typedef struct {
  tdStep *steps;
  uint32_t nsteps, cap;
} tdStream;

/*
 * Layout of one buffer: nblocks blocks, each split into k = chunks_per_block chunks, chunk index
 * c = block * k + sub. Uniform layout (offsets == NULL): block b covers elements
 * [b * n, (b+1) * n) where n = the schedule's block count bound at execution time. Explicit layout
 * (v-collectives, known counts): block b covers [offsets[b], offsets[b] + counts[b]).
 * Within a block of n elements, sub-chunk s covers [p(s), p(s+1)) with
 * p(s) = s * (n / k) + min(s, n % k): balanced, earlier chunks one element longer, empty when
 * n < k.
 */
typedef struct {
  uint32_t nblocks;
  uint32_t chunks_per_block;
  uint64_t *offsets; /* NULL for uniform; else nblocks entries, owned by the schedule */
  uint64_t *counts;
} tdLayout;

/* What the generator was asked for. */
typedef struct {
  tdColl coll;
  int nranks;
  int rank;
  int root;       /* broadcast/reduce; peer for sendrecv */
  int inplace;    /* NCCL in-place form (see docs/schedule-ir.md) */
  uint64_t count; /* per-block element count: allreduce/bcast/reduce: count; allgather: sendcount;
                     reducescatter: recvcount; alltoall: count per peer */
  /* all-to-all-v only: nranks x nranks matrices in elements, row = sender, col = receiver;
     counts[s * nranks + r]. Every rank's generator sees the whole matrix (the plan includes a
     counts exchange); sdispls/rdispls for this rank only. NULL otherwise. */
  const uint64_t *v_counts;
  const uint64_t *v_sdispls;
  const uint64_t *v_rdispls;
  /* all-to-all-v, local form (v_local = 1; only generators flagged TD_ALGO_V_LOCAL accept it):
     v_counts is NULL and the generator sees this rank's row, v_sendcounts[j] (elements to j), and
     column, v_recvcounts[j] (elements from j), nothing more (no counts exchange). Every pair then
     exchanges a message, empty ones included, so that counts two ranks disagree on meet as a
     length mismatch at the receiver instead of a message that never comes; the steps are then the
     same for all counts (the self COPY too), only the explicit layouts carry them. */
  int v_local;
  const uint64_t *v_sendcounts;
  const uint64_t *v_recvcounts;
  const tdTopo *topo;
  uint32_t elem_size; /* bytes per element: only for cost/pipelining, never for semantics */
} tdCollArgs;

typedef struct {
  uint32_t version; /* TD_SCHED_VERSION */
  tdColl coll;
  char algo[16];
  int nranks, rank, root, inplace;
  uint64_t count; /* as tdCollArgs.count (0 for alltoallv) */
  tdLayout layout[TD_NUM_BUFS];
  uint32_t nstreams;
  tdStream streams[TD_MAX_STREAMS];
  int needs_reduce; /* uses RECV_REDUCE/REDUCE steps (op matters) */
  /* set by a generator whose every element is reduced x_0 (+) x_1 (+) ... (+) x_{n-1}, in rank
     order whatever its position and the count (the direct family): its bits do not depend on
     where chunks start, so deferred operations on it may be fused (src/core/defer.c). Not
     carried by dump/load: a loaded plan counts as not in rank order. */
  int rank_order;
} tdSched;

#define TD_SCHED_VERSION 1

/* A generator: builds rank args->rank's schedule into out (initialised by schedInit by the
 * caller), or returns tpudistNotSupported with a reason in err. */
typedef tpudistResult_t (*tdGenFn)(const tdCollArgs *args, tdSched *out, char *err);

/* ---- construction (sched.c) ---- */
void schedInit(tdSched *s, const tdCollArgs *args, const char *algo);
void schedFree(tdSched *s);
/* 1 if a and b name the same buffer range. */
int schedSameRef(tdBufRef a, tdBufRef b);
/* 1 if a and b have the same streams and steps (ops, peers, references, dependencies) and, when
 * with_layouts, the same uniform layouts and needs_reduce. Field by field: steps have padding. */
int schedSameSteps(const tdSched *a, const tdSched *b, int with_layouts);
/* Uniform layout for buffer buf. */
void schedSetLayout(tdSched *s, tdBufKind buf, uint32_t nblocks, uint32_t chunks_per_block);
/* Explicit layout (copies offsets/counts). */
tpudistResult_t schedSetLayoutExplicit(tdSched *s, tdBufKind buf, uint32_t nblocks,
                                       uint32_t chunks_per_block, const uint64_t *offsets,
                                       const uint64_t *counts);
/* Appends a step to stream (streams are created on first use); returns its index via idx. */
tpudistResult_t schedAppend(tdSched *s, uint32_t stream, const tdStep *step, uint32_t *idx);
/* Gives back the room appended steps were growing into (every stream's steps exactly): a plan
 * of many steps would otherwise hold up to twice its size while it lives. */
void schedTrim(tdSched *s);
/* Appends st to stream 0 (the one stream of most generators). */
static inline tpudistResult_t schedPush(tdSched *s, tdStep st) {
  return schedAppend(s, 0, &st, NULL);
}
/* Step builders (no deps). */
tdStep schedSend(int peer, tdBufRef src);
tdStep schedRecv(int peer, tdBufRef dst);
tdStep schedRecvReduce(int peer, tdBufRef src, tdBufRef dst);
tdStep schedCopy(tdBufRef src, tdBufRef dst);
tdStep schedReduce(tdBufRef src, tdBufRef dst);
static inline tdBufRef schedRef(tdBufKind buf, uint32_t chunk, uint32_t nchunks) {
  tdBufRef r = {(uint8_t)buf, chunk, nchunks};
  return r;
}

/* ---- binding (layout.c) ---- */
/* First element of sub-chunk s of a block of n elements split into k chunks (balanced: the first
 * n % k chunks have one element more). */
uint64_t schedSubStart(uint64_t n, uint32_t k, uint32_t s);
/* Element range [*begin, *end) of ref under the layout, for block count n. Returns
 * tpudistInternalError if the ref is out of range or not contiguous. */
tpudistResult_t schedRefRange(const tdSched *s, tdBufRef ref, uint64_t n, uint64_t *begin,
                              uint64_t *end);
/* Total elements of buffer buf for block count n. */
uint64_t schedBufElems(const tdSched *s, tdBufKind buf, uint64_t n);

/* ---- names ---- */
const char *schedCollName(tdColl c);
int schedCollFromName(const char *name); /* -1 if unknown */
const char *schedBufName(tdBufKind b);

/* ---- passes ---- */
/* Fuses RECV(_REDUCE) + SEND of the same chunk into RECV_*_SEND (fuse.c). */
void schedFuse(tdSched *s);

#endif /* TD_SCHED_H_ */
