/*
 * perf.h - the nccl-tests-style benchmark harness shared by every *_perf tool. One harness runs
 * either implementation (-I tpu_dist, the default, or -I mpi for Open MPI's collectives in the same
 * mpirun), so both are timed and checked identically.
 */
#ifndef TD_PERF_H_
#define TD_PERF_H_

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "tpu_dist.h"

typedef enum { PERF_IMPL_TPU_DIST = 0, PERF_IMPL_MPI = 1 } perfImpl;

typedef struct {
  size_t min_bytes, max_bytes, step_bytes;
  double step_factor;
  int iters, warmup, check, blocking, average, root, inplace_too;
  tpudistDataType_t dtype;
  tpudistRedOp_t op;
  perfImpl impl;
  const char *algo; /* -A */
  /* alltoallv traffic: -k skew (0 uniform .. 1 all to one hot receiver); MoE shape */
  double skew;
  long moe_tokens, moe_hidden;
  int moe_topk;
  const char *csv;        /* -C: append rows as CSV */
  const char *counts_out; /* -M: write the MoE count matrix (rank 0) */
} perfOpts;

typedef struct {
  int rank, nranks;
  tpudistComm_t comm;
  MPI_Comm mcomm;
  const perfOpts *o;
} perfCtx;

/* One collective as the harness sees it. */
typedef struct {
  const char *name; /* "all_reduce" */
  const char *coll; /* tpu_dist collective name for -A: "allreduce" */
  int reduces, rooted;
  /* count argument (NCCL's) and send/recv element counts for a message of `bytes` */
  void (*sizes)(size_t bytes, size_t esize, int nranks, size_t *count, size_t *send_elems,
                size_t *recv_elems);
  double (*busbw_factor)(int nranks);
  /* fill this rank's input: into the send buffer, or where the in-place form reads it in recv */
  void (*init)(const perfCtx *c, void *buf, size_t count, int root, int inplace);
  /* run once; returns tpudistSuccess or an error */
  int (*run)(const perfCtx *c, const void *send, void *recv, size_t count, int root, int inplace);
  /* number of wrong elements in recv */
  long (*check)(const perfCtx *c, const void *recv, size_t count, int root);
  /* bytes for the algbw numerator (nccl-tests' S) */
  size_t (*algbytes)(size_t count, size_t esize, int nranks);
} perfColl;

int perfMain(int argc, char **argv, const perfColl *coll);
/* The options of the running tool (for size functions that depend on them). */
extern const perfOpts *perfCurrentOpts;
/* This process's rank in MPI_COMM_WORLD. */
extern int perfRank;

/* Deterministic small-integer test values (exact in every dtype, including sums over 64 ranks). */
double perfValue(int rank, size_t i);
void perfStore(void *buf, size_t i, tpudistDataType_t dtype, double v);
double perfLoad(const void *buf, size_t i, tpudistDataType_t dtype);
size_t perfDtypeSize(tpudistDataType_t dtype);
MPI_Datatype perfMpiType(tpudistDataType_t dtype);
MPI_Op perfMpiOp(tpudistRedOp_t op);

#endif /* TD_PERF_H_ */
