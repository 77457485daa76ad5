/*
 * shm.c - the shared-memory transport (placeholder until the ring implementation lands: reaches
 * nobody, so the registry falls through to the socket transport).
 */
#include "registry.h"

static int shmCanReach(tdComm *comm, int peer) {
  (void)comm;
  (void)peer;
  return 0;
}
static tpudistResult_t shmCommInit(tdComm *comm, tdPeerInfo *info) {
  (void)comm;
  (void)info;
  return tpudistSuccess;
}
static void shmCommFini(tdComm *comm) {
  (void)comm;
}
static tpudistResult_t shmPost(tdComm *comm, tdXfer *x) {
  (void)x;
  return transportError(comm, tpudistInternalError, "shm transport not available");
}
static tpudistResult_t shmProgress(tdComm *comm, int *progressed) {
  (void)comm;
  *progressed = 0;
  return tpudistSuccess;
}

const tdTransport tdTransportShm = {
    .name = "shm",
    .canReach = shmCanReach,
    .commInit = shmCommInit,
    .commFini = shmCommFini,
    .postSend = shmPost,
    .postRecv = shmPost,
    .progress = shmProgress,
};
