/*
 * shm.h - internals of the shared-memory transport (shm.c: matching and progress; shm_seg.c:
 * segments, CMA probing and peer liveness).
 *
 * One segment per pair of ranks on a host, named /tdshm-<comm hash>-<lower rank>-<higher rank>,
 * created lazily by whichever side needs it first (O_CREAT|O_EXCL decides; the other opens it and
 * waits until the creator has published its magic). The second side to map it unlinks the name at
 * once, so nothing is left in /dev/shm after a crash once a pair has connected. It holds a header
 * page and two rings (lower->higher, higher->lower), sized by the creator (the header says how
 * big): TPU_DIST_SHM_RANK_BYTES divided by the other ranks of the host, at most
 * TPU_DIST_SHM_BUF_BYTES and at least TD_SHM_MIN_RING, so that what a host maps grows linearly
 * with its ranks even when every pair talks (segments exist only for pairs that do).
 *
 * A ring carries 64-byte records: PAD (skip to the ring's end), FRAG (a piece of a message whose
 * bytes follow the header, padded to 64) and CMA (a descriptor: the receiver reads the message
 * straight from the sender's memory with process_vm_readv and acknowledges it in the ring's ack
 * slots). head (producer) and tail (consumer) are byte counters on their own cache lines, published
 * with release stores and read with acquire loads.
 */
#ifndef TD_SHM_H_
#define TD_SHM_H_

#include "registry.h"

#define TD_SHM_MAGIC 0x316d6873647470ull /* "ptdshm1" */
#define TD_SHM_CMA_SLOTS 256             /* descriptors in flight per direction */
#define TD_SHM_HDR_BYTES 12288           /* header, then each side's small-message slots */
#define TD_SHM_CTL_BYTES 4096
#define TD_SHM_REC 64
#define TD_SHM_MIN_RING 65536
#define TD_SHM_STAGE (128u << 10) /* CMA reduce staging: read a chunk, reduce it while in cache */
#define TD_SHM_CMA_CHUNK (4u << 20)
/* Smallest single-copy send of a reducing collective: a reduction reads pieces below this from
 * the ring faster than a process_vm_readv into the staging buffer would deliver them. */
#define TD_SHM_CMA_REDUCE_MIN (64u << 10)

enum { TD_REC_PAD = 1, TD_REC_FRAG = 2, TD_REC_CMA = 3 };
enum { SHM_NONE, SHM_OPENING, SHM_READY, SHM_FAILED };
enum { CMA_UNKNOWN = 0, CMA_OK = 1, CMA_OFF = 2 };

typedef struct {
  uint64_t seq;
  uint32_t stream, ordinal, piece;
  uint32_t type;
  uint64_t total;  /* message bytes */
  uint64_t off;    /* FRAG: offset of this piece in the message */
  uint64_t flen;   /* FRAG: payload bytes following this header */
  uint64_t addr;   /* CMA: address in the sender */
  uint64_t cma_id; /* CMA: acknowledgement id */
} tdShmRec;

typedef struct {
  _Alignas(64) volatile uint64_t head;
  _Alignas(64) volatile uint64_t tail;
  _Alignas(64) volatile uint64_t cma_ack[TD_SHM_CMA_SLOTS]; /* id+1 once read */
} tdShmRingCtl;
_Static_assert(sizeof(tdShmRingCtl) <= TD_SHM_CTL_BYTES, "ring control block exceeds its page");

/* Small-message slots (shm_slots.c): what one side of a pair writes. A payload sits right after
 * its flag word, sequence << 12 | length ("the flag in the data": an 8-byte payload shares the
 * flag's cache line);
 * slot seq & 1 holds sequence seq. ack[k] is the last sequence this side consumed from the
 * peer's slot k: a writer reuses a slot only once the reader has consumed its previous use. */
#define TD_SHM_SLOT_BYTES 2112 /* a 2 KiB payload and its flag word */
#define TD_SHM_SLOT_MAX (TD_SHM_SLOT_BYTES - 8)
#define TD_SLOT_LEN_BITS 12 /* flag word: sequence << 12 | payload bytes */
typedef struct {
  _Alignas(64) volatile uint64_t seq; /* flag word */
  char data[TD_SHM_SLOT_MAX];
} tdShmSlot;
typedef struct {
  tdShmSlot slot[2];
  _Alignas(64) volatile uint64_t ack[2];
} tdShmSlots;

typedef struct {
  volatile uint64_t magic; /* published last by the creator */
  uint64_t ring_bytes;
  int32_t lo, hi;
  volatile int32_t pid[2];
  volatile uint64_t base[2]; /* each side's mapping address (CMA probe target) */
  volatile int32_t mapped[2];
  volatile int32_t cma_ok[2]; /* per ring (direction), set by its receiver */
  volatile int32_t closed[2]; /* side released the communicator (destroyed or aborted) */
  tdShmSlots slots[2];        /* per side: small-message slots it writes */
} tdShmSegHdr;
_Static_assert(sizeof(tdShmSegHdr) <= TD_SHM_HDR_BYTES, "segment header exceeds its page");

/* An unexpected message: bytes copied out of the ring, or a CMA descriptor. */
typedef struct tdShmUnexp {
  int peer;
  tdMsgKey key;
  int cma;
  size_t total, got;
  uint64_t addr, cma_id;
  tdXfer *waiter; /* receive matched while the bytes are still arriving */
  struct tdShmUnexp *next;
  int64_t since_ms; /* CMA: arrival time (pulled into memory when unmatched for long) */
  char data[];
} tdShmUnexp;

/* A receive being read with process_vm_readv. */
typedef struct tdShmCmaRead {
  tdXfer *r;
  int peer;
  uint64_t addr, cma_id;
  size_t total, done;
  struct tdShmCmaRead *next;
} tdShmCmaRead;

typedef struct {
  int state, side, creator;
  char name[64];
  void *map;
  size_t map_bytes;
  tdShmSegHdr *hdr;
  tdShmRingCtl *ctl_out, *ctl_in;
  char *data_out, *data_in;
  uint64_t ring_bytes, frag_max;
  int pidfd; /* peer liveness (-1: not open yet, -2: no pidfd here, use /proc) */
  /* sending */
  tdXferQueue sendq;    /* head is being written */
  tdXferQueue cma_wait; /* CMA sends waiting for their acknowledgement */
  uint64_t next_cma_id;
  /* ids whose acknowledgement this side has not processed yet, by slot: a slot is reused only
   * after its previous id completed here (the receiver overwrites the slot when it acknowledges
   * the next id, so an acknowledgement seen in the slot but not processed would be lost) */
  uint8_t cma_busy[TD_SHM_CMA_SLOTS];
  /* receiving */
  tdXfer *rcur;         /* receive of the message in progress in the incoming ring */
  tdShmUnexp *ucur;     /* or the unexpected message being copied out */
  int discard;          /* or a message being dropped (length mismatch) */
  uint64_t parked_head; /* head seen when the ring's first message was left in place; 0 none */
  int slot_rwait, slot_wwait; /* a slot read / write waits for this peer (liveness checks) */
  uint64_t slot_rseq;         /* with slot_rwait: the sequence the read waits for */
  char why[TD_ERRLEN];
} tdShmPeer;

typedef struct {
  tdShmPeer *peers;
  int *active; /* peers whose segment exists or is being opened, in first-use order */
  int nactive;
  tdXferQueue posted;
  tdShmUnexp *unexp_head, *unexp_tail;
  tdShmCmaRead *reads;
  int unexp_cma; /* unexpected CMA descriptors in the list */
  int pull_ms;   /* TPU_DIST_SHM_CMA_PULL_MS: an unmatched CMA message is copied out and
                    acknowledged after this long, so a rank that waits for its send before posting
                    its receive cannot deadlock with a peer doing the same */
  char *stage;   /* CMA reduce staging, touched at commInit */
  int64_t next_live_ms;
  int use_cma;
  size_t cma_min;
  uint64_t ring_max, rank_bytes; /* TPU_DIST_SHM_BUF_BYTES, TPU_DIST_SHM_RANK_BYTES */
  uint64_t ring_bytes;           /* of the segments this rank creates; 0 until the first */
  int my_pid;
} tdShmCtx;

/* shm_seg.c */
tpudistResult_t shmConnect(tdNet *comm, tdShmCtx *c, int p);
void shmDisconnect(tdShmCtx *c, int p);
void shmProbeCma(tdShmCtx *c, tdShmPeer *pe);
/* At teardown (destroy or release): unlinks the segment a same-host peer may have created for a
 * pair this rank never mapped. Its creator unlinks it only once this rank maps it or at its own
 * teardown, so a creator killed meanwhile, or dying a moment after this teardown (still alive
 * here), would leave it behind; the pair is over once this side is torn down. */
void shmUnlinkUnmapped(tdNet *comm, tdShmCtx *c);
/* The transport's commCleanup (when a communicator with shm enabled is freed, after a release
 * too): unlinks the segments of pairs of two ranks of this host that are both gone (nobody else
 * is left to unlink them). */
void shmUnlinkDeadPairs(tdNet *comm);
/* 1 if peer p is known to have exited. */
int shmPeerDead(tdNet *comm, tdShmPeer *pe, int p);
int64_t shmNowMs(void);
/* shm_slots.c: 1 (and the wait cleared) if the payload a slot read waits for (slot_rwait) has
 * landed since the reader last looked; the reader's next peek takes it. */
int shmSlotLanded(tdShmPeer *pe);

#endif /* TD_SHM_H_ */
