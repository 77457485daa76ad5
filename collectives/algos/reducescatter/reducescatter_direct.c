/*
 * reducescatter_direct.c - one-shot reduce-scatter for ranks that share memory.
 *
 * Algorithm (direct.h): every rank sends INPUT block j to rank j at once, then receives its own
 * block from every peer in rank order, reducing each into OUTPUT as it arrives (x_0 (+) x_1 (+)
 * ... (+) x_{n-1}: the same order in every run). One synchronisation step instead of the ring's
 * n-1: every message is posted before any is awaited.
 *
 * Cost: alpha + (n-1) m beta (each rank receives n-1 blocks, on shared memory by single-copy
 * reads) + (n-1) m gamma, m = recvcount * elem_size.
 *
 * Preconditions: one host (directOneHost: no torus, no DCN), any nranks >= 1, any count, in place
 * (OUTPUT = INPUT block rank, first copied to SCRATCH, one block) or out of place (no scratch).
 * Streams: min(n-1, 8).
 */
#include "direct.h"
#include "reducescatter.h"

tpudistResult_t genReducescatterDirect(const tdCollArgs *a, tdSched *s, char *err) {
  TD_CHECK(directOneHost(a, err));
  schedSetLayout(s, TD_BUF_INPUT, (uint32_t)a->nranks, 1);
  schedSetLayout(s, TD_BUF_OUTPUT, 1, 1);
  schedSetLayout(s, TD_BUF_SCRATCH, a->inplace ? 1 : 0, 1);
  tdDirectAt done;
  return directReduceScatter(s, a->nranks, a->rank, a->inplace, schedRef(TD_BUF_OUTPUT, 0, 1),
                             schedRef(TD_BUF_SCRATCH, 0, 1), NULL, &done);
}
