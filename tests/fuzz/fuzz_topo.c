/*
 * fuzz_topo.c - fuzz target over the topology parsers (topology/): TPU_DIST_TOPOLOGY and the TPU
 * runtime's variables. The first byte picks the rank count (0: no check; else 1..255); the rest
 * is split at newlines into TPU_DIST_TOPOLOGY, TPU_ACCELERATOR_TYPE, TPU_TOPOLOGY,
 * TPU_TOPOLOGY_WRAP, TPU_TOPOLOGY_ALT and TPU_CHIPS_PER_HOST_BOUNDS (a missing line: unset). An
 * accepted topology must be consistent: its rank count as asked, at most TD_TOPO_MAX_RANKS, rank
 * -> coordinates -> rank the identity, neighbours and routes inside it (a route as long as its hop
 * count), a formatted name that
 * parses back to the same shape; a rejection must say why. A violation aborts. Built with clang
 * -fsanitize=fuzzer by tests/fuzz/run.sh; replay.c runs the committed corpus under gcc.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "torus.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void checkTopo(const tdTopo *t, int nranks) {
  char name[128], err[TD_ERRLEN];
  if (t->ndims == 0 && nranks <= 0 && t->nranks == 0) return; /* "flat" of an unknown count */
  if (t->nranks < 1 || t->nranks > TD_TOPO_MAX_RANKS) abort();
  if (nranks > 0 && t->nranks != nranks) abort();
  int probe = t->nranks < 64 ? t->nranks : 64;
  for (int i = 0; i < probe; i++) {
    int r = i * (t->nranks / probe), coords[TD_MAX_DIMS];
    topoRankToCoords(t, r, coords);
    if (t->ndims > 0 && topoCoordsToRank(t, coords) != r) abort();
    for (int ax = 0; ax < t->ndims; ax++)
      for (int dir = -1; dir <= 1; dir += 2) {
        int nb = topoNeighbor(t, r, ax, dir);
        if (nb < -1 || nb >= t->nranks) abort();
      }
    tdHop hops[64];
    int far = t->nranks - 1 - r, nh = topoHops(t, r, far);
    if (nh < 0 || (far != r && nh == 0)) abort();
    if (nh <= 4096) { /* a route is linear in its hops: walk the short ones */
      int k = topoPaths(t, r, far);
      if (k < 1 || k > TD_MAX_PATHS) abort();
      for (int j = 0; j < k; j++) {
        if (topoRoute(t, r, far, j, hops, 64) != nh) abort();
        for (int h = 0; h < nh && h < 64; h++)
          if (hops[h].to < 0 || hops[h].to >= t->nranks) abort();
      }
    }
    int host = topoHostOf(t, r);
    if (host < 0 || host >= t->nranks) abort();
  }
  topoFormat(t, name, sizeof(name));
  if (!memchr(name, 0, sizeof(name))) abort();
  tdTopo back;
  if (t->ndims > 0 && topoParse(name, t->nranks, &back, err) == tpudistSuccess &&
      (back.ndims != t->ndims || back.nranks != t->nranks ||
       memcmp(back.dims, t->dims, sizeof(back.dims)) != 0))
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char buf[4096], err[TD_ERRLEN] = "";
  const char *field[6] = {NULL};
  if (size < 1 || size > sizeof(buf)) return 0;
  int nranks = data[0];
  memcpy(buf, data + 1, size - 1);
  buf[size - 1] = 0;
  char *p = buf;
  for (int i = 0; i < 6 && p; i++) {
    field[i] = p;
    p = strchr(p, '\n');
    if (p) *p++ = 0;
  }
  tdTopo t;
  if (field[0]) {
    tpudistResult_t r = topoParse(field[0], nranks, &t, err);
    if (r == tpudistSuccess)
      checkTopo(&t, nranks);
    else if (!err[0])
      abort();
  }
  tdTpuEnv env = {field[1], field[2], field[3], field[4], field[5]};
  err[0] = 0;
  tpudistResult_t r = topoFromTpuEnv(&env, nranks, &t, err);
  if (r == tpudistSuccess)
    checkTopo(&t, nranks);
  else if (r != tpudistNotSupported && !err[0])
    abort();
  return 0;
}
