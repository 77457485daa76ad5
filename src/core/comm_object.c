/*
 * comm_object.c - the communicator object's two ends: commAlloc (a tdComm with the configured
 * defaults, not yet live) and commRelease (everything a creation built, in teardown order). Both
 * sit below every way of creating or destroying a communicator (comm.c, comm_async.c,
 * comm_life.c, comm_shrink.c), which call them and are never called back.
 */
#include <stdlib.h>

#include "bootstrap.h"
#include "comm.h"
#include "registry.h"

tdComm *commAlloc(int nranks, int rank) {
  tdComm *c = calloc(1, sizeof(struct tpudistComm));
  if (!c) return NULL;
  c->net.nranks = nranks;
  c->net.rank = rank;
  c->net.cfg = configGet();
  c->net.timeout_ms = c->net.cfg->timeout_ms;
  netNameErrors(&c->net);
  c->last_algo = "none";
  c->blocking = 1;
  return c;
}

void commRelease(tdComm *c) {
  commStatusStop(c);
  execStop(&c->exec);
  transportFiniAll(&c->net);
  execFree(&c->exec);
  commSchedFree(c);
  commSelectFree(c);
  if (c->net.bootstrap) bootstrapFree(c->net.bootstrap);
  c->net.bootstrap = NULL;
  deferFree(&c->defer);
  free(c->agreed_failed);
  c->agreed_failed = NULL;
  lineageFree(c->lineage);
  c->lineage = NULL;
}
