/*
 * sim.h - the pod-scale simulator: runs the library's real per-rank schedules on a flow-level,
 * discrete-event model of a TPU torus (docs/simulator.md is its specification).
 *
 * Model: every directed ICI link (chip, axis, direction) has a one-way bandwidth; every chip has an
 * injection and an ejection limit. A message becomes a flow when both its send and its receive are
 * issued; it follows the torus model's dimension-ordered route (a detour around failed links), and
 * while it drains each flow gets the smallest fair share (capacity / active flows) over the links
 * of its route. It is delivered hop_latency per hop (plus a per-message overhead) after its last
 * byte leaves. Local copies and reductions run at the chip's memory bandwidth. No packets.
 * DCN: slices (topoSetSlices; hosts of a flat topology) are joined by their hosts' NICs: a flow
 * between DCN domains (topoDcnDomain) leaves through its source host's NIC and enters through its
 * destination host's NIC, each direction one resource of dcn_bw shared by the host's chips, and is
 * delivered dcn_latency (plus the message overhead) after its last byte leaves.
 *
 * Schedules come from the per-rank generators on demand: each rank holds only a window of its
 * steps (regenerated when the window is used up), so memory follows what is in flight.
 * On a wrapped torus where every rank's plan is a translate of a representative's, only the
 * representatives are simulated (sym.c, the translation quotient; same results).
 * The functional mode also moves real data through the kernels and checks the results.
 *
 * Pure: uses topology/ and collectives/ only; reads no environment and never logs.
 */
#ifndef TD_SIM_H_
#define TD_SIM_H_

#include "sched_ir.h"
#include "select.h"

/* How a generation wraps its axes (tpu_topology.md §3). */
typedef enum {
  SIM_WRAP_CUBE = 0, /* v4, v5p, 7x: all axes wrap iff every axis >= 4 (whole cubes) */
  SIM_WRAP_16 = 1    /* v5e, v6e: an axis wraps iff its length is 16 */
} simWrapRule;

typedef struct {
  const char *name;    /* v4, v5e, v5p, v6e, v7 */
  double link_bw;      /* bytes/s per link and direction (one way): official per-chip figure */
  double book_link_bw; /* the scaling book's one-way figure (its worked examples use it) */
  double hop_latency;  /* seconds per hop */
  double msg_overhead; /* seconds per message (synchronisation: DMA issue and completion
                          signal), added once */
  double inj_bw;       /* bytes/s a chip can inject (and eject) over all its links */
  double mem_bw;       /* bytes/s for local copies and reductions (HBM) */
  int ports;           /* ICI ports per chip */
  int max_dims;        /* 2 (v5e, v6e) or 3 */
  int host_bounds[3];  /* chips per host along x, y, z */
  int max_chips;       /* largest slice sold */
  simWrapRule wrap_rule;
  double dcn_chip_bw; /* DCN egress per chip, bytes/s (a host's NIC: this x its chips) */
  double dcn_latency; /* seconds per message across DCN */
  double launch;      /* seconds before a collective's first step (program launch), once */
  double link_eff;    /* fraction of link_bw a transfer reaches (measured; 1 where none is
                         published); simConfigDefault's copy has link_bw x link_eff */
} simPreset;

/* The preset for name ("v4", "v5e", "v5p", "v6e", "v7"), or NULL. */
const simPreset *simPresetFind(const char *name);
/* All presets, terminated by name == NULL. */
extern const simPreset simPresets[];
/* Builds the torus for dims under the preset's wrap rule (twisted when asked; a twisted shape
 * wraps x, y and z), with the preset's host bounds when they divide the dims. */
tpudistResult_t simPresetTopo(const simPreset *p, int ndims, const int *dims, int twisted,
                              tdTopo *out, char *err);
/* 1 if dims (and twist) is a slice the generation sells; otherwise 0 and a reason in why. */
int simPresetSold(const simPreset *p, int ndims, const int *dims, int twisted, char *why,
                  size_t len);

/* A failed physical link: between chip `rank` and its neighbour along axis in direction dir. Both
 * directions of the link fail. */
typedef struct {
  int rank, axis, dir;
} simFailedLink;

typedef struct {
  simPreset p;        /* link figures (copied; may be edited) */
  const tdTopo *topo; /* the torus (or flat) */
  const simFailedLink *failed;
  int nfailed;
  int window;              /* steps of a stream held at once (regenerated beyond) */
  int max_inflight;        /* issued, incomplete steps per stream (0: no limit; a limit can
                              deadlock schedules that rely on more concurrency) */
  int max_dma;             /* messages a chip sends at once over one port; matched ones queue
                              in order (0: no limit) */
  int fuse;                /* apply the fusion pass, as the runtime does (default 1) */
  int symmetric;           /* simulate rank 0 alone when every rank's plan is its translate
                              (default 1; sym.c); 0: every rank */
  double piece_bytes;      /* the executor's pipeline piece (TPU_DIST_CHUNK_BYTES, 128 KiB) */
  double dcn_bw;           /* bytes/s of one host's NIC, each direction (default: the preset's
                              per-chip egress x chips per host of topo) */
  double dcn_latency;      /* seconds per message across DCN (default: the preset's) */
  double settle;           /* re-levelling after flows leave may wait this fraction of the
                              simulated time so far, gathering the leaves of nearby instants
                              (the freed bandwidth goes unused meanwhile); a flow joining
                              re-levels at once. Plans that post every message at once (direct)
                              come out at or above the exact time; plans whose steps wait for
                              each other move either way. 0 (default): every instant exact */
  int functional;          /* move real data and check it */
  tpudistDataType_t dtype; /* functional mode */
  tpudistRedOp_t op;
  int fractional; /* functional inputs with fractions (order-sensitive sums; no self-check) */
  /* functional mode: called once per rank at the end with its OUTPUT buffer (NULL: none) */
  void (*on_output)(void *ctx, int rank, const void *buf, size_t bytes);
  void *output_ctx;
} simConfig;

/* Element i of rank r's functional input: small integers, or with fractions when fractional is
 * set (sums then depend on the order of reduction; the runtime differential test uses them). */
double simInputValue(int rank, uint64_t i, int fractional);

/* Defaults: window 256, no depth or DMA limit, timing only, float32 sum, symmetric quotient, the
 * preset's DCN. */
void simConfigDefault(simConfig *c, const simPreset *p, const tdTopo *topo);

typedef struct {
  double time;       /* seconds until the last rank finished */
  uint64_t messages; /* flows */
  double wire_bytes; /* bytes put on the wire (sum over messages) */
  double link_bytes; /* bytes x hops */
  double util_mean;  /* mean over directed links of bytes / (time x bw) */
  double util_max;
  int nlinks;           /* directed links in the model */
  uint64_t max_flows;   /* most flows active at once */
  uint64_t max_steps;   /* most steps held in windows at once (all ranks) */
  uint64_t generations; /* per-rank schedule generations (incl. regenerations) */
  int symmetric;        /* translation quotient: 1 step for step, 2 as sets, 0 every rank run */
  int sym_ranks;        /* ranks simulated (representatives) when symmetric */
  int sym_samples;      /* ranks whose plans were checked to be rank 0's translates */
  int functional_ok;    /* functional mode: 1 if every output matched */
  double dcn_bytes;     /* bytes that crossed DCN (through NICs out) */
  double dcn_span;      /* from the first DCN flow's start to the last one's delivery (0: none) */
  double dcn_util_max;  /* busiest NIC direction: bytes / (dcn_span x dcn_bw) */
  char check_msg[TD_ERRLEN];
} simResult;

/* Simulates one collective: every rank runs algo's schedule for args (args->rank and args->topo
 * are set per rank here; args->topo is cfg->topo). */
tpudistResult_t simRun(const simConfig *cfg, const tdCollArgs *args, const char *algo,
                       simResult *res, char *err);

/* NCCL-convention sizes: per-block element count for `bytes` (allreduce/broadcast/reduce: bytes;
 * allgather: bytes of the gathered output; reducescatter: bytes of the input; alltoall: bytes per
 * rank), the bus-bandwidth factor, and the algbw size S for count. */
uint64_t simCountForBytes(tdColl coll, int nranks, uint64_t bytes, uint32_t elem_size);
double simBusFactor(tdColl coll, int nranks);
double simAlgBytes(tdColl coll, int nranks, uint64_t count, uint32_t elem_size);

/* The algorithm the library would pick for (coll, bytes) on topo with the cost model m (NULL:
 * the library's default figures): the first candidate of its selection table. Writes its name
 * into out. */
tpudistResult_t simSelectAlgo(const tdTopo *topo, const tdCostModel *m, tdColl coll, uint64_t bytes,
                              char *out, size_t len, char *err);

/* ---- selection against the simulator (selcheck.c) ---- */
/* The library's cost model with cfg's figures (links, latencies, HBM, pieces, DCN). */
void simCostModel(const simConfig *cfg, tdCostModel *m);

typedef struct {
  char selected[16], best[16];
  double t_selected, t_best, ratio; /* ratio = t_selected / t_best >= 1 */
} simSelCell;

/* One cell: the table's first candidate for (coll, bytes) and every other one it lists, each
 * simulated under cfg. */
tpudistResult_t simCheckCell(const simConfig *cfg, const tdSelectTable *tab, tdColl coll,
                             uint64_t bytes, simSelCell *out, char *err);

typedef struct {
  int cells, within5; /* cells, and those whose selected plan is within 5% of the best */
  double worst;       /* largest ratio */
  char worst_cell[96];
} simSelSummary;

/* The grid: presets x shapes (plain, twisted, sub-blocks, slices) x collectives x sizes. level 0:
 * five shapes of up to 64 ranks (v5e 4x4, a v5p z-plane, two v5p 2x2x4 slices, the v5p 2x4x4
 * sub-cube, v5p 4x4x4), all-reduce, all-gather, reduce-scatter, all-to-all and broadcast at
 * 4 KiB, 64 KiB, 1 MiB and 16 MiB; 1: every shape; 2: also 4 KiB .. 256 MiB by 4x.
 * A line per cell to f (NULL: none). */
tpudistResult_t simCheckSelection(int level, FILE *f, simSelSummary *sum, char *err);

#endif /* TD_SIM_H_ */
