/*
 * allgather_direct.c - one-shot all-gather for ranks that share memory.
 *
 * Algorithm (direct.h): rank r places its block in OUTPUT block r (a COPY out of place; nothing
 * in place) and at once sends its INPUT block to every peer and receives every peer's block into
 * its OUTPUT block. One synchronisation step instead of the ring's n-1.
 *
 * Cost: alpha + (n-1) m beta, m = sendcount * elem_size (each rank receives n-1 blocks; on shared
 * memory the transport's single-copy reads run them concurrently).
 *
 * Preconditions: one host (directOneHost: no torus, no DCN), any nranks >= 1, any count, in place
 * (INPUT = OUTPUT block rank) or out of place. No reduction, no scratch. Streams: min(n-1, 8).
 */
#include "allgather.h"
#include "direct.h"

tpudistResult_t genAllgatherDirect(const tdCollArgs *a, tdSched *s, char *err) {
  TD_CHECK(directOneHost(a, err));
  int n = a->nranks, r = a->rank;
  TD_CHECK(allgatherOwnBlock(a, s));
  return directAllgather(s, n, r, schedRef(TD_BUF_INPUT, 0, 1), NULL, NULL);
}
