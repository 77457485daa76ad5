/*
 * lineage.c - the line of shrinks a communicator belongs to (tdLineage, comm.h): the view a shrink
 * agrees on, the lineage the shrunk communicator keeps, and its release. comm_shrink.c makes
 * lineages; commRelease (comm_object.c) frees them. Design in docs/reliability.md.
 */
#include <stdlib.h>
#include <string.h>

#include "bootstrap.h"
#include "comm.h"

void lineageFree(tdLineage *l) {
  if (!l) return;
  bootstrapFree(l->bs);
  free(l->peers);
  free(l->map);
  free(l);
}

tpudistResult_t lineageView(tdComm *c, tdLineage *v, int **owned) {
  *owned = NULL;
  if (c->lineage) {
    *v = *c->lineage;
    return tpudistSuccess;
  }
  int *map = malloc(sizeof(int) * (size_t)c->net.nranks);
  if (!map) return tpudistNoMemory;
  for (int r = 0; r < c->net.nranks; r++) map[r] = r;
  *v = (tdLineage){c->net.bootstrap, c->net.peers, c->topo, c->mode, map, c->shrink_seq++};
  *owned = map;
  return tpudistSuccess;
}

tpudistResult_t lineageMake(const tdLineage *v, const int *members, int n, tdLineage **out,
                            char *err) {
  int nl = bootstrapNranks(v->bs);
  tdLineage *l = calloc(1, sizeof(*l));
  if (!l) return tdErr(err, tpudistNoMemory, "CommShrink: out of memory");
  l->peers = malloc(sizeof(tdPeerInfo) * (size_t)nl);
  l->map = malloc(sizeof(int) * (size_t)n);
  if (!l->peers || !l->map) {
    lineageFree(l);
    return tdErr(err, tpudistNoMemory, "CommShrink: out of memory");
  }
  tpudistResult_t r = bootstrapShadow(v->bs, &l->bs, err);
  if (r != tpudistSuccess) {
    lineageFree(l);
    return r;
  }
  memcpy(l->peers, v->peers, sizeof(tdPeerInfo) * (size_t)nl);
  memcpy(l->map, members, sizeof(int) * (size_t)n);
  l->topo = v->topo;
  l->mode = v->mode;
  l->seq = v->seq;
  *out = l;
  return tpudistSuccess;
}
