/*
 * shm_slots.h - the shm transport's small-message slots, the one part of a transport that the
 * executor calls directly (src/exec/exec_small.c): latency-bound collectives among ranks that all
 * share this host write a payload per peer and read their peers' payloads in place, with no
 * schedule (shm_slots.c says how).
 */
#ifndef TD_SHM_SLOTS_H_
#define TD_SHM_SLOTS_H_

#include "rt_net.h"

/* 1 if every other rank is reached through shm (nothing wraps it, at least 2 ranks). */
int shmSlotsReachAll(tdNet *comm);
/* Largest payload of one slot. */
size_t shmSlotMax(void);
/* Writes sequence seq's payload for rank p (*written 0: not yet, the segment is opening or p has
 * not consumed the slot's previous payload). Errors: p failed. */
tpudistResult_t shmSlotWrite(tdNet *comm, int p, uint64_t seq, const void *buf, size_t len,
                             int *written);
/* Rank p's payload of sequence seq, in place (*data NULL: not arrived). Valid until acknowledged.
 * A payload of another length than len is tpudistInvalidUsage (the ranks called different ops). */
tpudistResult_t shmSlotPeek(tdNet *comm, int p, uint64_t seq, size_t len, const void **data);
/* Rank p's payload of sequence seq is no longer needed: p may reuse its slot. */
void shmSlotAck(tdNet *comm, int p, uint64_t seq);

#endif /* TD_SHM_SLOTS_H_ */
