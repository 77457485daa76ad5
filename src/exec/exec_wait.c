/*
 * exec_wait.c - waiting and the background progress thread. A waiter drives progress itself
 * (no hand-off to the progress thread, which sleeps while anyone waits); the progress thread runs
 * only while non-blocking operations are queued and nobody waits. Every wait ends on completion,
 * abort, or the communicator's timeout (detected in execProgressLocked). Waits spin for
 * TPU_DIST_SPIN_US (20 us by default) before yielding, except when the ranks on this host
 * outnumber the cores: then they yield from the first idle pass, as the progress thread always
 * does.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "exec.h"
#include "host_detect.h"
#include "rt_log.h"

/* Sleeps until signalled or until clockNowNs() reaches until. Lock held. */
static void timedWait(tdExec *p, uint64_t until) {
  uint64_t now = clockNowNs(), left = until > now ? until - now : 0;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t ns = (uint64_t)ts.tv_nsec + left;
  ts.tv_sec += (time_t)(ns / 1000000000ull);
  ts.tv_nsec = (long)(ns % 1000000000ull);
  pthread_cond_timedwait(&p->cond, &p->lock, &ts);
}

/* The idle progress thread. In defer mode, while operations were deferred in the last second, it
 * wakes by itself: at the timer, or every poll_ns to see one armed (operations are deferred
 * without waking it: a wake-up per operation would cost more than the deferral saves). Lock held.
 */
static void idleWait(tdExec *p) {
  tdNet *comm = p->net;
  uint64_t now = clockNowNs();
  int live = !p->broken && !comm->aborted;
  if (live && p->timer_ns && p->waiters == 0 && now >= p->timer_ns) {
    execProgressLocked(p); /* the timer's flush */
    return;
  }
  if (live && p->poll_ns && now < p->poll_until_ns) {
    timedWait(p, p->timer_ns && p->timer_ns < now + p->poll_ns ? p->timer_ns : now + p->poll_ns);
    return;
  }
  p->sleeping = 1;
  pthread_cond_wait(&p->cond, &p->lock);
  p->sleeping = 0;
}

static void *progressMain(void *arg) {
  tdExec *p = arg;
  tdNet *comm = p->net;
  tdBackoff bo; /* never spins: it runs beside the caller's own work (only waiters spin) */
  backoffInit(&bo, 0);
  pthread_mutex_lock(&p->lock);
  while (!p->stop) {
    if (!p->head || p->waiters > 0 || p->broken || comm->aborted) {
      idleWait(p);
      backoffInit(&bo, 0);
      continue;
    }
    int progressed = execProgressLocked(p);
    pthread_mutex_unlock(&p->lock);
    backoffStep(&bo, progressed);
    pthread_mutex_lock(&p->lock);
  }
  pthread_mutex_unlock(&p->lock);
  return NULL;
}

/* Ranks of this communicator on this host outnumber the processing units this process could run
 * on before the library bound it (hostThis: a launcher's binding counts, the library's own binding
 * under TPU_DIST_BIND spreads the ranks and does not): a waiter that spins holds a unit its peer
 * needs, so waits yield from the first idle pass. */
static int oversubscribed(const tdNet *comm) {
  char err[TD_ERRLEN];
  const uint8_t *bound;
  const tdHost *h = hostThis(&bound, err);
  cpu_set_t set;
  int pus = 0;
  if (h && h->this_system)
    for (int i = 0; i < h->npus; i++) pus += bound[i];
  else if (sched_getaffinity(0, sizeof(set), &set) == 0)
    pus = CPU_COUNT(&set);
  if (pus <= 0 || !comm->peers) return 0;
  int local_rank, local;
  netLocalRank(comm, &local_rank, &local);
  if (local > pus && comm->cfg->spin_us > 0)
    TD_INFO(TD_SUBSYS_EXEC,
            "%s: TPU_DIST_SPIN_US ignored: %d ranks on this host, %d units to run on", comm->name,
            local, pus);
  return local > pus;
}

tpudistResult_t execInit(tdExec *ex, tdNet *net, char *err) {
  memset(ex, 0, sizeof(*ex));
  ex->small_reach = -1;
  ex->ord_send = calloc((size_t)net->nranks, sizeof(uint32_t));
  ex->ord_recv = calloc((size_t)net->nranks, sizeof(uint32_t));
  if (!ex->ord_send || !ex->ord_recv || flightInit(ex, net->cfg) != tpudistSuccess) {
    execFree(ex);
    return tdErr(err, tpudistNoMemory, "executor: out of memory for %d peers", net->nranks);
  }
  pthread_mutex_init(&ex->lock, NULL);
  pthread_cond_init(&ex->cond, NULL);
  ex->net = net;
  ex->last_progress_ns = clockCoarseNs();
  ex->spin_us = oversubscribed(net) ? 0 : net->cfg->spin_us;
  if (!net->cfg->progress_thread) return tpudistSuccess;
  int rc = pthread_create(&ex->thread, NULL, progressMain, ex);
  if (rc != 0) {
    execFree(ex);
    return tdErr(err, tpudistSystemError, "progress thread: pthread_create: %s", strerror(rc));
  }
  ex->thread_started = 1;
  return tpudistSuccess;
}

void execStop(tdExec *ex) {
  tdExec *p = ex;
  if (!p->thread_started) return;
  pthread_mutex_lock(&p->lock);
  p->stop = 1;
  pthread_cond_broadcast(&p->cond);
  pthread_mutex_unlock(&p->lock);
  pthread_join(p->thread, NULL);
  p->thread_started = 0;
}

/* What a wait waits for: op done, an empty queue (op NULL, !deferred), or nothing deferred and no
 * agreement in flight (deferred). */
static int waitOver(const tdExec *p, const tdOp *op, int deferred) {
  if (op) return op->done;
  if (deferred) return (!p->dhead && !p->dagree) || p->broken;
  return p->head == NULL;
}

/* Progresses until waitOver holds or the communicator is aborted. Lock held. */
static void waitLoop(tdExec *p, tdOp *op, int deferred) {
  tdNet *comm = p->net;
  tdBackoff bo;
  backoffInit(&bo, p->spin_us);
  p->waiters++;
  while (!waitOver(p, op, deferred)) {
    if (comm->aborted) break;
    int progressed = execProgressLocked(p);
    if (waitOver(p, op, deferred)) break;
    pthread_mutex_unlock(&p->lock);
    backoffStep(&bo, progressed);
    pthread_mutex_lock(&p->lock);
  }
  p->waiters--;
  if (p->waiters == 0 && p->head) pthread_cond_signal(&p->cond);
}

tpudistResult_t execWait(tdOp *op) {
  tdExec *p = op->ex;
  pthread_mutex_lock(&p->lock);
  if (!op->done && !op->queued && !op->deferred) {
    pthread_mutex_unlock(&p->lock);
    return errRecord(&op->net->err, TD_SUBSYS_EXEC, tpudistInvalidUsage,
                     "Wait: the request is not issued yet (its group has not ended)");
  }
  waitLoop(p, op, 0);
  tpudistResult_t r = op->done ? op->result : tpudistAborted;
  pthread_mutex_unlock(&p->lock);
  return r;
}

tpudistResult_t execTest(tdOp *op, int *done) {
  tdExec *p = op->ex;
  tdNet *comm = op->net;
  pthread_mutex_lock(&p->lock);
  if (!op->done && !op->queued && !op->deferred) {
    pthread_mutex_unlock(&p->lock);
    return errRecord(&comm->err, TD_SUBSYS_EXEC, tpudistInvalidUsage,
                     "Test: the request is not issued yet (its group has not ended)");
  }
  if (!op->done && !comm->aborted) execProgressLocked(p);
  *done = op->done || comm->aborted;
  tpudistResult_t r = op->done ? op->result : comm->aborted ? tpudistAborted : tpudistSuccess;
  pthread_mutex_unlock(&p->lock);
  return r;
}

tpudistResult_t execDrain(tdExec *p) {
  pthread_mutex_lock(&p->lock);
  waitLoop(p, NULL, 0);
  tpudistResult_t r = p->net->aborted ? tpudistAborted : p->async_error;
  pthread_mutex_unlock(&p->lock);
  return r;
}

tpudistResult_t execWaitDeferredLocked(tdExec *p) {
  waitLoop(p, NULL, 1);
  return p->net->aborted ? tpudistAborted : p->async_error;
}

void execAbort(tdExec *p, tpudistResult_t res) {
  pthread_mutex_lock(&p->lock);
  p->broken = 1;
  if (p->async_error == tpudistSuccess) p->async_error = res;
  execFailAllLocked(p, res);
  pthread_mutex_unlock(&p->lock);
}
