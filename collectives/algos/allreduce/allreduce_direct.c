/*
 * allreduce_direct.c - all-reduce in two synchronisation steps for ranks that share memory.
 *
 * Algorithm (direct.h): the buffer is n chunks; the direct reduce-scatter (every rank sends chunk
 * j to rank j at once, then receive-reduces the n parts of its chunk r in rank order into OUTPUT
 * chunk r),
 * then the direct all-gather of the reduced chunks (OUTPUT chunk r to every rank at once). Each
 * element is reduced once, on its owner, in the order x_0 (+) ... (+) x_{n-1}, so every rank holds
 * the same bits. In place a receive of the all-gather into chunk j waits for the reduce-scatter's
 * send of chunk j; each all-gather send waits for the last reduction.
 *
 * Cost: 2 alpha + 2 (n-1)/n M beta + (n-1)/n M gamma, M = count * elem_size, against the ring's
 * 2(n-1) alpha and the same bytes.
 *
 * Preconditions: one host (directOneHost: no torus, no DCN), any nranks >= 1, any count, in place
 * (INPUT = OUTPUT; SCRATCH one block of n chunks, chunk rank the stash) or out of place (no
 * scratch). Streams: min(n-1, 8).
 */
#include <stdlib.h>

#include "allreduce.h"
#include "direct.h"

tpudistResult_t genAllreduceDirect(const tdCollArgs *a, tdSched *s, char *err) {
  TD_CHECK(directOneHost(a, err));
  int n = a->nranks, r = a->rank;
  schedSetLayout(s, TD_BUF_INPUT, 1, (uint32_t)n);
  schedSetLayout(s, TD_BUF_OUTPUT, 1, (uint32_t)n);
  schedSetLayout(s, TD_BUF_SCRATCH, a->inplace ? 1 : 0, (uint32_t)n);
  tdDirectAt *sent = calloc((size_t)n, sizeof(*sent)), done;
  if (!sent) return tdErr(err, tpudistSystemError, "allreduce direct: out of memory");
  tdBufRef own = schedRef(TD_BUF_OUTPUT, (uint32_t)r, 1);
  tpudistResult_t res = directReduceScatter(s, n, r, a->inplace, own,
                                            schedRef(TD_BUF_SCRATCH, (uint32_t)r, 1), sent, &done);
  if (res == tpudistSuccess) res = directAllgather(s, n, r, own, a->inplace ? sent : NULL, &done);
  free(sent);
  return res;
}
