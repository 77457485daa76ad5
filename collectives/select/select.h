/*
 * select.h - per-communicator algorithm selection: a table per collective and size bucket (powers
 * of two up to 1 GiB), built once at communicator creation from the cost model over real
 * schedules, within a time bound. TPU_DIST_ALGO-style overrides are applied on top.
 */
#ifndef TD_SELECT_H_
#define TD_SELECT_H_

#include "cost.h"
#include "sched_ir.h"

#define TD_SELECT_MAX_CANDIDATES 10

typedef struct tdSelectTable tdSelectTable;

/* Builds the table for nranks ranks on topo, or shares the one already built in this process for
 * the same topology, rank count, override and cost figures (communicators of one shape: one
 * table; selectFree by every holder). override: "allreduce=torus,alltoall=pairwise" or
 * NULL; an unknown collective or algorithm name, or an algorithm that refuses this shape, is an
 * error with a message. model: the cost model's figures (NULL: costModelDefault(topo); the
 * runtime passes TPU_DIST_DCN_* through configCostModel). elem_size is the typical element size
 * used for costing (4). */
tpudistResult_t selectBuild(const tdTopo *topo, int nranks, const char *override,
                            const tdCostModel *model, tdSelectTable **out, char *err);
/* Candidates for (coll, bytes) best first (the override alone if one is set); returns count.
 * bytes: the larger buffer of one rank as NCCL's tests count it (all-reduce, broadcast, reduce,
 * send/recv: count x elem; all-gather: the gathered output; reduce-scatter: the input;
 * all-to-all(v): the whole send buffer). */
int selectCandidates(const tdSelectTable *t, tdColl coll, uint64_t bytes, const char **names,
                     int max);
/* The algorithm that comes first for coll at every size (the override, if one is set), or NULL
 * when buckets differ or none accepts the shape. The same on every rank (the table is). */
const char *selectUniform(const tdSelectTable *t, tdColl coll);
/* The algorithm all-to-all-v runs in one phase with (no counts exchange), or NULL: the one that
 * comes first at every size (selectUniform) when it needs only this rank's row and column of the
 * count matrix (TD_ALGO_V_LOCAL). */
const char *selectAlltoallvLocal(const tdSelectTable *t);
/* One greppable line per (collective, size bucket), then "alltoallv phases=1 algo=A" or
 * "alltoallv phases=2" (selectAlltoallvLocal). */
void selectPrint(const tdSelectTable *t, FILE *f);
void selectFree(tdSelectTable *t);
/* Pod scale: the seconds of a pipelined chain ("chain" broadcast or reduce, root 0) of bytes over
 * every rank of topo, by walking its n - 1 links (select.c: every link's latency and one piece
 * for the head of the message, the rest behind it at the slowest link's rate) instead of
 * evaluating n plans of 2k steps. */
double selectChainEstimate(const tdTopo *topo, tdColl c, const tdCostModel *m, uint64_t bytes);
/* Pod scale: the seconds of the double binary tree all-reduce ("tree") of bytes[i] over every
 * rank of a torus topo into out[i] (nsizes of them), from the trees' structure (select_est.c):
 * the first chunk through idle links, its latest path up to a tree's root and down to a rank
 * (per edge its hops' latency, and a piece where the step forwards as it receives, else the whole
 * chunk), then the other chunks each a chunk time of the busiest link behind (its share of the
 * links both trees' edges take), less what messages of different levels overlap. O(n) route
 * look-ups instead of evaluating n plans. Returns 1, or 0 on a flat topology, one with DCN, or
 * out of memory (out untouched). */
int selectTreeEstimate(const tdTopo *topo, const tdCostModel *m, int nsizes, const uint64_t *bytes,
                       double *out);
/* Pod scale: the seconds of the recursive doubling family ("recdbl" all-reduce, all-gather and
 * reduce-scatter, "rabenseifner" all-reduce) over every rank of a torus topo into out[i], for
 * bytes[i] per rank (all-reduce: the buffer; all-gather and reduce-scatter: one block), from the
 * rounds of their plans (the fold of algoFold*, the exchanges of new ranks, the unfold; the
 * all-gather on ranks that are not a power of two disseminates as Bruck's): every message as the
 * cost model takes it (issue cost, the links of its route reserved from when they are free,
 * latency), started in time order once both its ends have posted their round. O(n lg n) messages
 * instead of evaluating n plans. Returns 1, or 0 for another candidate, a flat topology, one with
 * DCN, or out of memory (out untouched). */
int selectFoldEstimate(const tdTopo *topo, tdColl c, const char *algo, const tdCostModel *m,
                       int nsizes, const uint64_t *bytes, double *out);
/* A table as bytes (selectPackedBytes of them; algorithm names as indices into the algorithm
 * table), so that one rank builds it and the others receive it; selectUnpack checks the bytes
 * (names, orders) and that the table is for nranks ranks on topo. */
size_t selectPackedBytes(void);
void selectPack(const tdSelectTable *t, void *buf);
tpudistResult_t selectUnpack(const void *buf, size_t len, const tdTopo *topo, int nranks,
                             tdSelectTable **out, char *err);
/* For `tpudist-info -s`: parses a TPU_DIST_TOPOLOGY spec ("4x4x4", "4x4x8:twist", "flat(8)"),
 * builds the table for nranks ranks (<= 0: the topology's chip count) with the optional override
 * and prints it to f. */
tpudistResult_t selectPrintTopology(const char *spec, int nranks, const char *override, FILE *f,
                                    char *err);

/* The algorithm TPU_DIST_ALGO forces for c, or NULL. */
const char *selectOverride(const tdSelectTable *t, tdColl c);

#endif /* TD_SELECT_H_ */
