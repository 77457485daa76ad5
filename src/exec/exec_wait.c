/*
 * exec_wait.c - waiting and the background progress thread. A waiter drives progress itself
 * (no hand-off to the progress thread, which sleeps while anyone waits); the progress thread runs
 * only while non-blocking operations are queued and nobody waits. Every wait ends on completion,
 * abort, or the communicator's timeout (detected in execProgressLocked). Waits spin for
 * TPU_DIST_SPIN_US before yielding, except when the ranks on this host outnumber the cores: then
 * they yield from the first idle pass.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm_priv.h"
#include "log.h"

static void *progressMain(void *arg) {
  tdComm *comm = arg;
  struct tdCommPriv *p = comm->priv;
  tdBackoff bo;
  execBackoffInit(&bo, p->spin_us);
  pthread_mutex_lock(&p->lock);
  while (!p->stop) {
    if (!p->head || p->waiters > 0 || p->broken || comm->aborted) {
      pthread_cond_wait(&p->cond, &p->lock);
      execBackoffInit(&bo, p->spin_us);
      continue;
    }
    int progressed = execProgressLocked(comm);
    pthread_mutex_unlock(&p->lock);
    execBackoff(&bo, progressed);
    pthread_mutex_lock(&p->lock);
  }
  pthread_mutex_unlock(&p->lock);
  return NULL;
}

/* Ranks of this communicator on this host outnumber the cores this process may run on: a waiter
 * that spins holds a core its peer needs, so waits yield from the first idle pass. */
static int oversubscribed(const tdComm *comm) {
  cpu_set_t set;
  int cores = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 0;
  if (cores <= 0) cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (cores <= 0 || !comm->peers) return 0;
  int local = 0;
  for (int r = 0; r < comm->nranks; r++)
    local += comm->peers[r].host_hash == comm->peers[comm->rank].host_hash;
  return local > cores;
}

tpudistResult_t execCommInit(tdComm *comm, char *err) {
  struct tdCommPriv *p = comm->priv;
  p->last_progress_ns = execCoarseNs();
  p->spin_us = oversubscribed(comm) ? 0 : comm->cfg->spin_us;
  if (!comm->cfg->progress_thread) return tpudistSuccess;
  int rc = pthread_create(&p->thread, NULL, progressMain, comm);
  if (rc != 0)
    return tdErr(err, tpudistSystemError, "progress thread: pthread_create: %s", strerror(rc));
  p->thread_started = 1;
  return tpudistSuccess;
}

void execCommStop(tdComm *comm) {
  struct tdCommPriv *p = comm->priv;
  if (!p->thread_started) return;
  pthread_mutex_lock(&p->lock);
  p->stop = 1;
  pthread_cond_broadcast(&p->cond);
  pthread_mutex_unlock(&p->lock);
  pthread_join(p->thread, NULL);
  p->thread_started = 0;
}

/* Progresses until cond(comm, op) holds, the communicator is aborted or broken. Lock held. */
static void waitLoop(tdComm *comm, tdOp *op) {
  struct tdCommPriv *p = comm->priv;
  tdBackoff bo;
  execBackoffInit(&bo, p->spin_us);
  p->waiters++;
  while (op ? !op->done : p->head != NULL) {
    if (comm->aborted) break;
    int progressed = execProgressLocked(comm);
    if (op ? op->done : p->head == NULL) break;
    pthread_mutex_unlock(&p->lock);
    execBackoff(&bo, progressed);
    pthread_mutex_lock(&p->lock);
  }
  p->waiters--;
  if (p->waiters == 0 && p->head) pthread_cond_signal(&p->cond);
}

tpudistResult_t execWait(tdOp *op) {
  tdComm *comm = op->comm;
  struct tdCommPriv *p = comm->priv;
  pthread_mutex_lock(&p->lock);
  if (!op->done && !op->queued) {
    pthread_mutex_unlock(&p->lock);
    return commError(comm, tpudistInvalidUsage,
                     "Wait: the request is not issued yet (its group has not ended)");
  }
  waitLoop(comm, op);
  tpudistResult_t r = op->done ? op->result : tpudistAborted;
  pthread_mutex_unlock(&p->lock);
  return r;
}

tpudistResult_t execTest(tdOp *op, int *done) {
  tdComm *comm = op->comm;
  struct tdCommPriv *p = comm->priv;
  pthread_mutex_lock(&p->lock);
  if (!op->done && !op->queued) {
    pthread_mutex_unlock(&p->lock);
    return commError(comm, tpudistInvalidUsage,
                     "Test: the request is not issued yet (its group has not ended)");
  }
  if (!op->done && !comm->aborted) execProgressLocked(comm);
  *done = op->done || comm->aborted;
  tpudistResult_t r = op->done ? op->result : comm->aborted ? tpudistAborted : tpudistSuccess;
  pthread_mutex_unlock(&p->lock);
  return r;
}

tpudistResult_t execDrain(tdComm *comm) {
  struct tdCommPriv *p = comm->priv;
  pthread_mutex_lock(&p->lock);
  waitLoop(comm, NULL);
  tpudistResult_t r = comm->aborted ? tpudistAborted : p->async_error;
  pthread_mutex_unlock(&p->lock);
  return r;
}

void execAbort(tdComm *comm, tpudistResult_t res) {
  struct tdCommPriv *p = comm->priv;
  pthread_mutex_lock(&p->lock);
  p->broken = 1;
  if (p->async_error == tpudistSuccess) p->async_error = res;
  for (tdOp *op = p->head; op; op = op->next) {
    op->queued = 0;
    if (!op->done) {
      op->result = res;
      op->done = 1;
    }
  }
  p->head = p->tail = NULL;
  pthread_cond_broadcast(&p->cond);
  pthread_mutex_unlock(&p->lock);
}
