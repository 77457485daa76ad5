/*
 * cost.h - the cost model: evaluates the schedules of all ranks of one collective under a link
 * model, by discrete-event execution of the steps (no per-algorithm formulas).
 *
 * Torus: every directed link (rank, axis, direction) has bandwidth link_bw; a message follows
 * the torus model's dimension-ordered route, pays hop_latency per hop, and reserves each link
 * of its route in the order the messages start (two flows on a link share it: together they take
 * twice as long); a sender issues its messages one after another, msg_overhead each, and a
 * stream's messages to one peer leave one at a time (a DMA queue, as the simulator has it): the
 * next starts, as an event of its own, when the last byte of the one before is through, so that
 * messages to other peers reserve the links in between (a queue filled at once would otherwise
 * hold a shared link for all of its messages ahead of theirs). Flat (ndims == 0):
 * every pair is linked; each rank copies at copy_bw, one port out and one in (each busy for
 * msg_overhead + bytes / copy_bw per message; copy_bw / numa_factor between NUMA nodes), and a
 * message pays hop_latency once. Local
 * copy/reduce steps (and the reduction of a received message) run at mem_bw.
 *
 * A fused step (recv_reduce_send, recv_copy_send) forwards piece by piece as the executor does:
 * its send starts when the first piece_bytes have arrived and ends no earlier than one piece
 * after its receive. The by-name driver costPlanGenerate (drive.h) applies the fusion pass, as the
 * runtime does (to plans of up to 2048 steps per rank: the pass is quadratic in the worst case).
 *
 * DCN (the level above the torus, docs/topology.md): a message between ranks of different DCN
 * domains (topoDcnDomain: slices; on a flat topology hosts when they are known, else slices) does
 * not take the torus; it leaves through the NIC of the sending rank's host and enters through
 * the NIC of the receiving rank's host (topoHostOf: without host bounds every rank is its own
 * host), each NIC direction one resource of dcn_bw shared by every rank of that host, and pays
 * dcn_latency instead of the hop latency. On a flat topology the ranks' own ports are busy as
 * for any message. With dcn_flows > 0 a NIC direction carries the unfinished messages of that
 * many sender-receiver pairs at its rate; a message of another pair that starts beyond them is
 * costed at half the rate on that NIC (drops and resends: TD_COST_DCN_TCP_FLOWS).
 *
 * Execution follows the IR's issue rules: steps of a stream issue in order; a step waits for the
 * earlier steps of its stream it conflicts with (by chunk, read/write sets of tdStepSemTable) and
 * for its cross-stream deps; a transfer starts when both its send and its receive are issued.
 */
#ifndef TD_COST_H_
#define TD_COST_H_

#include "sched_ir.h"

typedef struct {
  double hop_latency;  /* seconds per hop (torus) or per message (flat) */
  double link_bw;      /* torus: bytes/s per link and direction */
  double copy_bw;      /* flat: bytes/s each rank moves in and out */
  double mem_bw;       /* local copy / reduce, bytes/s */
  double msg_overhead; /* seconds of issue cost per message at its sender (DMA descriptor,
                          software); flat: also at its receiver */
  double msg_latency;  /* seconds added to every message's delivery, not serialised at the
                          sender (the ICI synchronisation of a transfer; 0 by default) */
  double shm_sync;     /* flat: seconds of one synchronisation step on shared memory: a
                          message within a host arrives no earlier than this after its send
                          was posted (a receive posted that much later pays nothing), so a plan
                          pays it once per round of dependent messages: the ring all-reduce
                          2(p-1) times, direct twice */
  double numa_factor;  /* flat: a message between ranks of different NUMA nodes of a host
                          (topoNumaOf; the topology's NUMA level) moves at copy_bw / numa_factor
                          on both ports (memory on the far node); <= 1: no difference */
  double piece_bytes;  /* executor pipeline piece (TPU_DIST_CHUNK_BYTES): a fused receive-forward
                          step forwards once the first piece has arrived; 0 = store and forward */
  double dcn_bw;       /* DCN: bytes/s of one host's NIC, each direction, shared by its ranks */
  double dcn_latency;  /* DCN: seconds per message */
  double dcn_flows;    /* DCN: flows one NIC direction carries at its rate (0: no limit); see
                          TD_COST_DCN_TCP_FLOWS */
} tdCostModel;

/* DCN defaults (docs/results/multi-host.md, "The cost model's DCN"): a torus is TPU slices, whose
 * hosts reach DCN at TD_COST_DCN_CHIP_BW per chip (v5p's 50 Gbit/s per chip, 6.25e9 B/s: the
 * scaling book's DCN egress per TPU; 200 Gbit/s for a 4-chip host); a flat topology is real hosts
 * over TCP, TD_COST_DCN_HOST_BW per host (10 Gbit/s: a 10GbE port, or what one TCP stream commonly
 * reaches on a faster one). Latency: 10 us on TPU DCN, 20 us over
 * TCP (assumed one-way figures inside one data centre; no published source). */
#define TD_COST_DCN_CHIP_BW 6.25e9
#define TD_COST_DCN_HOST_BW 1.25e9
#define TD_COST_DCN_TPU_LATENCY 10e-6
#define TD_COST_DCN_TCP_LATENCY 20e-6

/* dcn_flows: a flow is the messages of one sender-receiver pair (one connection); a message
 * across DCN that starts while dcn_flows other pairs' messages are unfinished on the same NIC
 * direction (the sending host's out, the receiving host's in) is costed as one whose packets the
 * NIC's queue drops and that is sent again (TCP incast on a shallow-buffered switch port): it
 * keeps that NIC busy twice as long. Off by default (0): on the measured clusters (links shaped to
 * 2 Gbit/s and 500 Mbit/s, docs/results/multi-host.md) all-to-all's 12 flows per host started
 * at once did not collapse, and at 500 Mbit/s they led the paced plans. At most
 * TD_COST_DCN_MAX_FLOWS. */
#define TD_COST_DCN_MAX_FLOWS 64

/* A synchronisation step on shared memory when every rank has a core of its own (the wake-up of a
 * waiting peer through the shm transport's rings), from bench runs on a 2-core host
 * (docs/algorithms.md, "Cost model"); configCostModel scales it by ranks per core. */
#define TD_COST_SHM_SYNC 3.5e-6

/* The per-byte factor of a copy between NUMA nodes when the host states no distances: the ratio of
 * the ACPI SLIT distances Linux assumes when firmware gives none, REMOTE_DISTANCE 20 to
 * LOCAL_DISTANCE 10 (the kernel header linux/topology.h); hwloc reports the same table (numactl
 * --hardware prints it), and two-socket servers commonly state 21 to 10. A communicator takes the
 * host's own ratio where hwloc has one (configNumaFactorPct); TPU_DIST_NUMA_FACTOR_PCT replaces
 * both. */
#define TD_COST_NUMA_FACTOR 2.0

/* Defaults: torus 1 us per hop, 45 GB/s per link direction (TPU ICI), 1 TB/s local, 0.1 us
 * issue cost per message; flat (shared memory) 1 us per message, 10 GB/s per rank copy,
 * 10 GB/s local, 0.5 us issue cost per message, TD_COST_SHM_SYNC per synchronisation step,
 * TD_COST_NUMA_FACTOR between NUMA nodes; DCN as above. */
void costModelDefault(const tdTopo *t, tdCostModel *m);

/* All ranks' schedules of one collective, prepared for evaluation (count-independent). */
typedef struct tdCostPlan tdCostPlan;

/* Takes ownership of scheds (malloc'ed array of nranks schedules, freed by costPlanFree, also on
 * failure). topo must outlive the plan. */
tpudistResult_t costPlanCreate(const tdTopo *topo, tdSched *scheds, int nranks, tdCostPlan **out,
                               char *err);
/* A symmetric plan (pod scale): one schedule, rank 0's, stands for every rank, each running its
 * image under a symmetry of the rank set (a translation of a wrapped torus, a cyclic shift or an
 * exclusive-or of rank numbers) that maps 0 to it. mirror (npeers entries) names, for each peer q
 * rank 0 receives from, the peer rank 0 sends the same message to in its own frame (the image of
 * 0 under the inverse symmetry: -q for translations and shifts, q for exclusive-or). Links are
 * costed per class: every link of one axis and direction carries what rank 0's messages put on
 * any of them (exact for translations of a wrapped torus; an approximation otherwise), a flat
 * topology as one out port and one in port. Takes ownership of sched (malloc'ed, one entry). */
tpudistResult_t costPlanCreateSym(const tdTopo *topo, int npeers, tdSched *sched, const int *mirror,
                                  tdCostPlan **out, char *err);
/* Time in seconds of the plan bound to block count `count` (ignored for explicit layouts). */
tpudistResult_t costPlanEval(tdCostPlan *p, const tdCostModel *m, uint64_t count,
                             uint32_t elem_size, double *seconds, char *err);
/* Messages and bytes on the wire of the last evaluation (totals over ranks), for tests. */
void costPlanStats(const tdCostPlan *p, uint64_t *messages, double *link_bytes);
/* Steps over all ranks (the work of one evaluation is proportional to it). */
uint64_t costPlanSteps(const tdCostPlan *p);
void costPlanFree(tdCostPlan *p);

#endif /* TD_COST_H_ */
