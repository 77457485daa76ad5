/*
 * boot_status.h - health queries on the wire (boot_status.c): an authenticated request of a kind
 * and an authenticated answer (text or bytes), with the job's key. src/core answers them
 * (comm_status.c); tpudist-info --status asks.
 */
#ifndef TD_BOOT_STATUS_H_
#define TD_BOOT_STATUS_H_

#include "auth.h"
#include "bootstrap.h"
#include "net.h"

#define TD_STATUS_MAX (1u << 20) /* the largest answer */
#define TD_STATUS_JOB 1u         /* rank 0: every rank's state, as text */
#define TD_STATUS_RANK 2u        /* one rank: its own state (a tdRankStatus, comm_status.c) */
#define TD_STATUS_JOB_DUMP 3u    /* as TD_STATUS_JOB, every rank also writing its flight record */
#define TD_STATUS_RANK_DUMP 4u   /* as TD_STATUS_RANK, also writing the flight record */

/* Computes the answer to a query of kind: *body (malloc'd, freed by the caller) of *len bytes. */
typedef tpudistResult_t (*tdStatusAnswer)(void *ctx, uint32_t kind, char **body, size_t *len);

/* Serves one accepted connection: checks the client's proof, then sends answer's reply. The
 * handshake, and the reply once computed, each get step_ms. */
tpudistResult_t bootstrapStatusServe(int fd, const tdKey *key, int step_ms, volatile int *abort,
                                     tdStatusAnswer answer, void *ctx, char *err);
/* One query of kind at addr; *body (malloc'd, NUL-terminated) of *len bytes. Bounded by
 * deadline_ms (netNowMs scale) and *abort (may be NULL). */
tpudistResult_t bootstrapStatusQuery(const tdNetAddr *addr, const tdKey *key, uint32_t kind,
                                     int64_t deadline_ms, volatile int *abort, char **body,
                                     size_t *len, char *err);
/* The address and key of a TPU_DIST_COMM_ID job, derived as its ranks derive them (the secret from
 * TPU_DIST_COMM_SECRET or TPU_DIST_COMM_SECRET_FILE). */
tpudistResult_t bootstrapJobKey(const char *comm_id, tdNetAddr *addr, tdKey *key, char *err);
/* A listener on this rank's bootstrap address (a new port). */
tpudistResult_t bootstrapStatusListen(const tdBootstrap *bs, int *fd, tdNetAddr *bound, char *err);

#endif /* TD_BOOT_STATUS_H_ */
