/*
 * exec.h - the executor and progress engine. An operation (tdOp, which is also the public
 * request) is one collective schedule bound to buffers, or one point-to-point transfer. Operations
 * of a communicator run in issue order, batch by batch (a batch is one call, or every call of one
 * tpudistGroupStart/End on that communicator; the operations of a batch run concurrently).
 *
 * The executor owns its state (tdExec: queue, lock, progress thread, sequence numbers, message
 * ordinals, flight recorder) and sees the communicator only as a tdNet (rt_net.h): it includes
 * nothing of src/core. An operation of several phases (the counts exchange of a two-phase
 * all-to-all-v, the TPU_DIST_CHECK signature exchange) chains them through op->phase, a callback
 * its issuer (src/core) sets: when the plan running now has finished, the executor calls it, and
 * it installs the next plan (and the next callback, or NULL: the op ends after that plan).
 *
 * Locking: everything here runs under the executor's lock (tdExec.lock). The background
 * progress thread drives non-blocking requests; a thread that waits drives progress itself (the
 * progress thread sleeps while anyone waits), so a blocking call on an idle communicator runs
 * inline. Waits spin (TPU_DIST_SPIN_US), then sched_yield, then nanosleep, and are bounded by the
 * communicator's timeout (no progress for timeout_ms is tpudistTimeout).
 */
#ifndef TD_EXEC_H_
#define TD_EXEC_H_

#include <pthread.h>

#include "rt_clock.h"
#include "rt_net.h"
#include "sched_ir.h"
#include "step_sem.h"
#include "transport.h"

/* TD_OP_SMALL: an all-reduce through the shm slots (exec_small.c), not a schedule. */
typedef enum { TD_OP_COLL = 0, TD_OP_SEND, TD_OP_RECV, TD_OP_SMALL } tdOpKind;

#define TD_SMALL_MAX_BYTES 2104 /* a slot's payload (TD_SHM_SLOT_MAX) */
#define TD_SMALL_MAX_RANKS 8

/* Runtime state of one schedule step while an operation executes. */
typedef struct {
  uint8_t state; /* TD_RT_WAIT, TD_RT_ISSUED, TD_RT_DONE */
  uint32_t npieces;
  size_t psize;             /* bytes per piece (the last may be shorter) */
  uint32_t xin, xout;       /* first receive / send xfer in op->xfers, or UINT32_MAX */
  uint32_t rin, rout, fwd;  /* receives done, sends done, fused sends posted (in order) */
  uint32_t ord_in, ord_out; /* message ordinals (per stream and ordered pair) */
  char *src, *dst;          /* bound pointers (NULL in a parted operation: see piece0) */
  size_t len;               /* bytes the step moves */
  uint32_t piece0;          /* parted operation: its first piece in op->pieces; else TD_NO_PIECE */
  tdSpans sp;               /* read/write ranges (addresses, schedSpansOf) */
} tdStepRt;

#define TD_NO_PIECE UINT32_MAX

/* A part of a parted operation (a fused host in defer mode): one member's INPUT and OUTPUT and
 * where its n elements lie in each block of the operation's (off). The operation's INPUT and
 * OUTPUT are its parts concatenated block by block, never materialised: each step binds straight
 * to the parts' buffers (exec_parts.c). */
typedef struct {
  char *bufs[2];
  uint64_t off, n;
} tdPart;

/* One piece of a step of a parted operation: it lies within one part (or one part's place in
 * SCRATCH), so it has one source and one destination pointer. */
typedef struct {
  char *src, *dst;
  size_t len;
} tdPiece;

#define TD_RT_WAIT 0
#define TD_RT_ISSUED 1
#define TD_RT_DONE 2

#define TD_OP_MAGIC 0x7d0b5e11u
#define TD_OP_FREED 0x7d0bdeadu

struct tdExec;
struct tdOp;
/* Installs an operation's next phase (its plan, buffers, count; op->phase for the phase after). */
typedef tpudistResult_t (*tdOpPhase)(struct tdOp *op, char *err);

typedef struct tdOp {
  unsigned magic;
  struct tdExec *ex; /* the executor it runs on */
  tdNet *net;        /* ex->net */
  tdOpKind kind;
  uint64_t batch; /* batch id (issue order) */
  int queued;     /* in the communicator's queue */
  int started;
  volatile int done;
  tpudistResult_t result;
  int source;        /* receives: who sent */
  struct tdOp *next; /* queue or free list */
  struct tdOp *all_next;
  /* collective */
  tdColl coll;
  const tdSched *sched; /* cached, or &own_sched */
  tdSched own_sched;
  int owns_sched;
  const char *algo;
  uint64_t seq;
  uint64_t n; /* block count bound to the schedule */
  size_t esize;
  int dtype, redop, avg, root;
  uint64_t avg_count; /* elements of OUTPUT to divide for Avg (0: none) */
  char *bufs[TD_NUM_BUFS];
  void *scratch;
  size_t scratch_cap;
  tdStepRt *rt;
  size_t rt_cap;
  uint32_t stream_base[TD_MAX_STREAMS], lo[TD_MAX_STREAMS], nx[TD_MAX_STREAMS];
  tdXfer *xfers;
  size_t xfer_cap, nxfers;
  /* what rt and xfers were last bound for: a repeated call (same cached schedule, count, element
   * size and buffers) only resets their progress instead of binding again */
  const tdSched *bound_sched;
  uint64_t bound_n;
  size_t bound_esize;
  char *bound_bufs[TD_NUM_BUFS];
  /* parted operation (parted set; nparts may be 0 when every member is empty): its INPUT and
   * OUTPUT are the parts', its steps' pieces are bound in pieces (exec_parts.c), and
   * bufs[INPUT] and bufs[OUTPUT] are unused */
  int parted;
  tdPart *parts;
  size_t nparts, parts_cap;
  tdPiece *pieces;
  size_t npieces, pieces_cap;
  uint64_t inflight; /* xfers posted and not yet done */
  tdOpPhase phase;   /* called when the current plan has finished (NULL: the op is done) */
  /* all-to-all-v: phase 0 = counts exchange, 1 = data */
  int vphase;
  /* single-phase all-to-all-v (no counts exchange): each message goes whole (one piece), and a
   * length mismatch with a peer (its counts disagree with ours) is recorded in vres while the
   * rest of the plan runs, so the operation ends with that error and the communicator stays
   * usable */
  int vlocal;
  tpudistResult_t vres;
  uint64_t *vbuf; /* nranks send counts, then nranks*nranks matrix, then 2*nranks displs */
  size_t vbuf_cap;
  const size_t *vrecvcounts;
  void *vsend, *vrecv;
  /* TPU_DIST_CHECK: phase 1 = signature exchange running; the real plan is saved meanwhile */
  int chk_phase;
  uint64_t *chk_buf; /* 8 words of this rank, then 8 per rank */
  size_t chk_cap;
  const tdSched *chk_sched;
  tdOpPhase chk_phase_next; /* op->phase of the real plan, restored after the check */
  char *chk_bufs[2];
  uint64_t chk_n, chk_seq;
  size_t chk_esize;
  /* defer mode (policy in src/core/defer.c): deferred 1 = held in the executor's deferred list,
   * 2 = taken from it (running, alone or carried by a fused host) until done */
  int deferred;
  int internal;         /* issued by the library (agreement, fused host): freed when it ends */
  const char *label;    /* names it in errors instead of collective and sequence (or NULL) */
  int settle;           /* the executor calls its on_settle hook when the operation ends */
  uint64_t dseq;        /* position among the communicator's deferred operations */
  uint64_t dbytes;      /* bytes of the call (as selection counts them) */
  int user_op;          /* reduction op as called, -1 for none (signature check at the flush) */
  uint64_t dchk_seq;    /* TPU_DIST_CHECK: the sequence number reserved for the real plan */
  struct tdOp *members; /* fused host: the operations it carries, linked through next */
  void *pack;           /* agreement: the words (a fused host's buffer is the pool's) */
  size_t pack_cap;
  int pool_slot; /* fused host: its buffer's slot in the communicator's pool */
  /* point to point */
  tdXfer p2p;
  /* TD_OP_SMALL: slot sequence, ranks written to / read from (bit per rank), own input */
  uint64_t small_seq;
  uint32_t small_written, small_arrived;
  const void *small_src[TD_SMALL_MAX_RANKS]; /* each peer's payload, in its slot, once arrived */
  _Alignas(64) char small_in[TD_SMALL_MAX_BYTES];
} tdOp;

struct tdFlight;

/* The executor of one communicator. */
typedef struct tdExec {
  tdNet *net;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  pthread_t thread;
  int thread_started, stop, waiters;
  tdOp *head, *tail; /* queue, issue order */
  tdOp *free_ops;
  tdOp *all_ops;
  uint64_t coll_seq, batch_seq;
  uint64_t small_seq; /* slot operations issued (exec_small.c) */
  int small_reach;    /* every peer reached through shm slots: -1 not known yet, 0, 1 */
  uint64_t last_progress_ns;
  tpudistResult_t async_error;
  int broken;
  uint32_t *ord_send, *ord_recv; /* nranks counters used while binding (tdOrdCount) */
  struct tdFlight *flight;       /* flight recorder (exec_flight.c) */
  int spin_us; /* waits spin this long before yielding (0 when ranks outnumber cores); the
                * executor's waits and tpudistRequestSource read it, not the configured value
                * (only transportWait, the transport layer's wait for tests, reads that) */
  /* defer mode: operations issued but not started (deferred == 1), in issue order; an agreement
   * on how many of them to start is in flight (dagree); the policy's hooks, called with the lock
   * held: on_timer when clockNowNs() passes timer_ns (0: none), on_settle when an operation with
   * settle set has left the queue, done or failed (a fused host completes its members; an
   * agreement starts what was agreed); an error it returns breaks the executor */
  tdOp *dhead, *dtail;
  int dagree;
  uint64_t timer_ns;
  /* the idle progress thread polls every poll_ns until poll_until_ns (defer mode sets both);
   * sleeping: it sleeps until signalled */
  uint64_t poll_ns, poll_until_ns;
  int sleeping;
  void (*on_timer)(struct tdExec *ex);
  tpudistResult_t (*on_settle)(tdOp *op, char *err);
} tdExec;

/* Sets up ex for net (lock, ordinals, flight recorder, progress thread when configured); net's
 * peers must be known. On failure everything is released. */
tpudistResult_t execInit(tdExec *ex, tdNet *net, char *err);
/* Stops the progress thread (call after execDrain or on abort). */
void execStop(tdExec *ex);
/* Frees every operation object and the executor's state (after the transports are finalized). */
void execFree(tdExec *ex);

/* An operation object from the free list (fields reset), or NULL. */
tdOp *execOpAlloc(tdExec *ex);
/* As execOpAlloc with the lock held. */
tdOp *execOpAllocLocked(tdExec *ex);
/* Returns op to the free list (or keeps it aside while transfers still reference it). */
void execOpRelease(tdOp *op);
/* Queues ops (one batch, in order). The progress thread is woken unless the caller is about to
 * wait for them (will_wait): then the caller progresses them inline, with no hand-off. */
void execEnqueue(tdExec *ex, tdOp **ops, int n, int will_wait);
/* As execEnqueue with the lock held (the progress thread is woken if nobody waits). */
void execEnqueueLocked(tdExec *ex, tdOp **ops, int n, int will_wait);
/* Waits (bounded, progressing) until no operation is deferred and no agreement is in flight;
 * returns the error that broke the executor, if any. Lock held. */
tpudistResult_t execWaitDeferredLocked(tdExec *ex);
/* Completes op (bounded), progressing inline; returns its result. op is not released. */
tpudistResult_t execWait(tdOp *op);
/* One progress pass; *done = op->done. */
tpudistResult_t execTest(tdOp *op, int *done);
/* Waits until the queue is empty (bounded); returns the first error seen, if any. */
tpudistResult_t execDrain(tdExec *ex);
/* Marks the executor broken with res and wakes every wait and the progress thread. */
void execAbort(tdExec *ex, tpudistResult_t res);
/* The first error that broke the executor (tpudistSuccess if none). */
tpudistResult_t execAsyncError(tdExec *ex);

/* ---- internals shared by exec files ---- */
/* Marks the executor broken with res and msg (recorded, logged with the flight record once) and
 * fails every queued operation. Lock held. */
void execFailLocked(tdExec *ex, tpudistResult_t res, const char *msg);
/* Fails every queued and deferred operation with res (members of fused hosts included). */
void execFailAllLocked(tdExec *ex, tpudistResult_t res);
/* One progress pass over the transports and the active batch; returns non-zero if anything
 * moved. Caller holds the lock. */
int execProgressLocked(tdExec *ex);
/* exec_parts.c: binds step st of parted op (element ranges [sb, sb + elems) of src's buffer and
 * [db, db + elems) of dst's, each used when the step uses that ref) into pieces that never cross
 * a part: rt->piece0 and rt->npieces (wire steps: pieces of at most piece bytes). Both ends of a
 * message derive the same pieces (the same parts, counts and ranges). */
tpudistResult_t execPartsBind(tdOp *op, const tdStep *st, tdStepRt *rt, uint64_t sb, uint64_t db,
                              uint64_t elems, size_t piece, char *err);
/* The error of a step that uses buffer kind k, which is NULL (exec_parts.c). */
tpudistResult_t execNullBuf(const tdOp *op, unsigned k, char *err);
/* exec_small.c: 1 if a collective of bytes can take the slot path on ex: a payload per peer of
 * 1..TPU_DIST_SMALL_BYTES, 2..8 ranks all reached through shm (the same answer on every rank: it
 * depends on the call, the configuration and where the ranks are, never on timing). Whether a
 * signature check, a schedule file or an algorithm override excludes it is the caller's
 * (selection's) decision. */
int execSmallEligible(tdExec *ex, tdColl coll, uint64_t bytes);
/* Prepares op (coll, n, esize, dtype, redop, avg_count, bufs set) as a slot operation; op->algo
 * becomes "slots". */
void execSmallInit(tdOp *op);
/* Runs op to completion on the calling thread if nothing else is queued on its executor
 * (a blocking call outside a group): no queue, no batch, transports polled once per clock tick
 * for liveness. Returns 1 with *res set if it ran, 0 if the caller must queue op. */
int execSmallRun(tdOp *op, tpudistResult_t *res);

/* ---- kinds of operation: what each does, behind one table indexed by tdOpKind ---- */
typedef struct {
  /* Prepares op to run, once, when its batch comes up (collective: binding, ordinals, xfers,
   * scratch; slot path: a copy of the input; send/recv: posts the transfer). */
  tpudistResult_t (*start)(tdOp *op, char *err);
  /* Advances a started op; sets *progressed; marks op done when finished. */
  tpudistResult_t (*progress)(tdOp *op, int *progressed, char *err);
  /* What a running op waits for (timeout messages, the flight recorder, health queries). */
  void (*describe)(const tdOp *op, char *buf, size_t len);
  /* The rank a running op waits for first (a collective: its lowest stream's pending receive,
   * else the send not yet taken; the slot path: the first peer whose payload is missing), or
   * -1. */
  int (*waitPeer)(const tdOp *op);
} tdOpKindOps;
extern const tdOpKindOps execCollOps;  /* exec_coll.c: a collective running its schedule */
extern const tdOpKindOps execSmallOps; /* exec_small.c: a small collective through shm slots */
extern const tdOpKindOps execP2pOps;   /* exec_p2p.c: one send or receive */
/* The ops of each tdOpKind (exec.c). */
extern const tdOpKindOps *const execOpKinds[];

/* ---- flight recorder (exec_flight.c) ---- */
tpudistResult_t flightInit(tdExec *ex, const tdConfig *cfg);
void flightFree(tdExec *ex);
/* Records op as it is queued (lock held). */
void flightRecord(tdExec *ex, const tdOp *op);
/* Logs the recorded operations with their state and, with TPU_DIST_FR_DUMP_DIR set, writes them
 * as JSON there (lock held). */
void flightDump(tdExec *ex, const char *why);
/* Writes the flight record as JSON in the shape of torch's flight recorder dumps (entries with
 * record_id, collective_seq_id, profiling_name, input/output sizes and dtypes, state
 * scheduled/started/completed, time_created_ns ...) to dir/tpu_dist_fr_<comm>_rank<R>.json
 * (written to a temporary name, then renamed). why: the reason, stored in the dump. The path
 * written into path (may be NULL). Takes the lock. */
tpudistResult_t flightDumpJson(tdExec *ex, const char *dir, const char *why, char *path,
                               size_t plen, char *err);

/* What a communicator is doing now, for health queries (flightStatus). */
typedef enum {
  TD_FS_NONE = 0, /* nothing issued yet */
  TD_FS_IDLE,     /* every recorded operation has completed */
  TD_FS_QUEUED,   /* the oldest unfinished operation waits behind others */
  TD_FS_RUNNING,  /* ... is running */
  TD_FS_FAILED,   /* ... failed (the communicator is broken) */
  TD_FS_BUSY      /* the executor's lock stayed held: no answer */
} tdFlightState;
typedef struct {
  int32_t state;    /* tdFlightState */
  int32_t peer;     /* the rank the operation waits for, or -1 */
  uint64_t seq;     /* the operation's collective sequence number (0 for point to point) */
  uint64_t age_ms;  /* since it was issued */
  uint64_t issued;  /* operations recorded so far */
  char op[24];      /* "allreduce", "send", ...: the unfinished operation, else the last one */
  char detail[256]; /* what it waits for, in words */
} tdFlightStatus;
/* Fills st from the oldest unfinished recorded operation (else the newest one); waits at most
 * 200 ms for the executor's lock. */
void flightStatus(tdExec *ex, tdFlightStatus *st);

#endif /* TD_EXEC_H_ */
