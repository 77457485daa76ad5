/*
 * direct.h - the one-shot (direct) exchange shared by the direct generators
 * (alltoall_direct.c, reducescatter_direct.c, allgather_direct.c, allreduce_direct.c,
 * broadcast_direct.c): every message of a phase is posted at once, the exchange with peer
 * distance i = 1..n-1 (send to r+i, receive from r-i) on stream (i-1) mod S, S = min(n-1, 8), so
 * both ends of a message use the same stream and the executor progresses S streams together. A
 * phase is one synchronisation step whatever n, against n-1 for a ring.
 *
 * Chunk j of INPUT and OUTPUT is rank j's part: the reduce-scatter's blocks (n blocks of
 * one chunk) or the all-reduce's chunks (one block of n chunks) alike.
 */
#ifndef TD_DIRECT_H_
#define TD_DIRECT_H_

#include "generator.h"

#define TD_DIRECT_STREAMS 8

/* The stream of the exchange at peer distance i (1 <= i < n). */
static inline uint32_t directStream(int n, int i) {
  int S = TD_MAX(1, TD_MIN(n - 1, TD_DIRECT_STREAMS));
  return (uint32_t)((i - 1) % S);
}

/* The reduce-scatter, all-gather, all-reduce and broadcast of this family are for ranks that
 * share one host's memory: tpudistNotSupported on a torus (a one-shot exchange would send most
 * messages over several ICI hops) and on a topology with DCN (several hosts or slices: hier is the
 * plan there). All-to-all direct, which every plan of its kind resembles, accepts any topology. */
static inline tpudistResult_t directOneHost(const tdCollArgs *a, char *err) {
  if (a->topo && a->topo->nranks == a->nranks && (a->topo->ndims > 0 || topoHasDcn(a->topo)))
    return tdErr(err, tpudistNotSupported,
                 "%s direct: for ranks of one host's shared memory (not a torus, not several "
                 "hosts or slices)",
                 schedCollName(a->coll));
  return tpudistSuccess;
}

/* Where a step went: its stream and its index there. */
typedef struct {
  uint32_t stream, step;
} tdDirectAt;

/* Reduce-scatter phase: sends INPUT chunk j to every rank j at once (every send posted before
 * any receive), then folds the n parts of chunk r into out in rank order, x_0 (+) x_1 (+) ...
 * (+) x_{n-1}, the same order on every rank and in every run: each received part is reduced as it
 * is received (a receive-reduce into out), one after the other, from senders whose messages are
 * all posted. In place (out aliases INPUT chunk r) INPUT chunk r is first copied to stash (a
 * SCRATCH chunk the size of chunk r; unused otherwise). sent[j] (n entries, or NULL) gets the
 * send to rank j; *done the step that completes out. */
tpudistResult_t directReduceScatter(tdSched *s, int n, int r, int inplace, tdBufRef out,
                                    tdBufRef stash, tdDirectAt *sent, tdDirectAt *done);

/* All-gather phase: receives OUTPUT chunk j from every rank j and sends src to every rank at once.
 * Each receive from rank j first waits for after[j] where after is given (the reduce-scatter's
 * send to j, which read that chunk in place), each send for *ready where given (the step that
 * wrote src). */
tpudistResult_t directAllgather(tdSched *s, int n, int r, tdBufRef src, const tdDirectAt *after,
                                const tdDirectAt *ready);

#endif /* TD_DIRECT_H_ */
