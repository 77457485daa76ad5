/*
 * host.h - the pure host model: what one machine holds (packages, NUMA nodes, cores and their
 * hardware threads, caches) as plain data, and the placement decisions made from it: which cores
 * or NUMA node a local rank binds to under TPU_DIST_BIND, whether a launcher already bound it, the
 * NUMA node a set of processing units lies in, and the pipeline piece size from the caches. Each
 * decision is a function of (host, local rank, local size, knobs) only: it reads no environment,
 * binds nothing and never logs. host_detect.h fills a tdHost from hwloc (this host, a synthetic
 * description or an XML file) and applies a decision; docs/host.md says why each rule is what it
 * is.
 */
#ifndef TD_HOST_H_
#define TD_HOST_H_

#include <stdint.h>
#include <stdio.h>

#include "td_base.h"

/* Pipeline piece size when the caches are unknown (what a 1 MiB L2 per core gives). */
#define TD_HOST_CHUNK_DEFAULT (128L << 10)
#define TD_HOST_CHUNK_MIN (64L << 10)
#define TD_HOST_CHUNK_MAX (1L << 20)

typedef struct {
  int os;       /* the core's OS index (as hwloc reports it) */
  int package;  /* 0 .. npackages-1 */
  int numa;     /* 0 .. nnuma-1 (logical) */
  int pu0, npu; /* its processing units: pus[pu0 .. pu0 + npu - 1] */
} tdHostCore;

typedef struct {
  int npackages, nnuma, ncores, npus;
  tdHostCore *cores;    /* ncores, in topology order (package, NUMA node, core) */
  int *pus;             /* npus OS indices (what sched_setaffinity takes), grouped by core */
  int *numa_os;         /* nnuma: each node's OS index */
  uint64_t *numa_bytes; /* nnuma: each node's memory (0: unknown) */
  uint64_t *numa_dist;  /* nnuma x nnuma: latency from node i to node j at [i * nnuma + j], as
                           the OS states it (ACPI SLIT on Linux); NULL: none, 0: not given */
  uint64_t l1d_bytes;   /* one instance of each cache level, the smallest on the host; 0: none */
  uint64_t l2_bytes, l3_bytes;
  int l2_cores, l3_cores; /* cores sharing one instance (0: unknown) */
  int this_system;        /* 1: read from this machine (binding applies); 0: synthetic or XML */
  double read_ms;         /* hostThis: how long hwloc took to read it */
  char source[160];       /* "this host", "synthetic: <description>" or "xml: <path>" */
} tdHost;

/* TPU_DIST_BIND */
enum { TD_BIND_NONE, TD_BIND_CORE, TD_BIND_NUMA, TD_BIND_AUTO };
/* TD_BIND_* for "none" / "core" / "numa" / "auto" (any case), -1 for anything else; and back. */
int hostBindParse(const char *name);
const char *hostBindName(int mode);

/* What a local rank does about its placement. */
enum {
  TD_PLACE_NONE,     /* left where it is (TPU_DIST_BIND=none, or auto on one NUMA node) */
  TD_PLACE_LAUNCHER, /* the launcher already bound it (its cpuset is narrower than the host) */
  TD_PLACE_CORE,     /* binds to the processing units of one core */
  TD_PLACE_NUMA      /* binds to the processing units of one NUMA node */
};

typedef struct {
  int action; /* TD_PLACE_* */
  int core;   /* TD_PLACE_CORE: index in cores[]; else -1 */
  int numa;   /* TD_PLACE_CORE / _NUMA: the node it ends up on; _LAUNCHER: the node its binding
               * lies in (-1: it spans several); else -1 */
  char why[160];
} tdHostPlace;

/* 1 if the host has more than one NUMA node. */
int hostMultiNuma(const tdHost *h);

/* The decision for local rank local_rank of local_size ranks on this host under mode (TD_BIND_*).
 * bound: the process's processing units before any binding (npus flags by index in pus[]; NULL:
 * all); one missing means a launcher bound the process, and it is left as it is whatever the mode.
 * core: ranks spread evenly over the cores in topology order, neighbouring ranks on neighbouring
 * cores (rank r of L on core r*C/L of C: one NUMA node's ranks are consecutive, and more ranks than
 * cores share cores evenly). numa: rank r on node r*N/L. auto: numa on a host of several NUMA
 * nodes, none on one. A bad local rank or size leaves the rank where it is, saying why. */
void hostPlace(const tdHost *h, int local_rank, int local_size, int mode, const uint8_t *bound,
               tdHostPlace *out);
/* The NUMA node each of a host's local_size ranks lies in when placed by hostPlace under mode
 * (core, numa, or auto on a host of several NUMA nodes) and no launcher bound them: node[r] for
 * local rank r, -1 where the placement leaves it unplaced. */
void hostPlaceNodes(const tdHost *h, int local_size, int mode, int *node);
/* The NUMA level ranks form (topoSetFlatNuma) from the node of each (node[r]: rank r's NUMA node,
 * -1 unknown): the ranks per node when ranks 0 .. n-1 lie on more than one node in consecutive
 * blocks of equal size, one block a node; 0 when a node is unknown, all ranks share one node, or
 * the blocks differ. */
int hostNumaBlocks(const int *node, int n);
/* The cost of a copy between NUMA nodes against one within a node, in percent, from the host's
 * distance matrix: 100 x the mean distance between two different nodes among those of node[0 ..
 * n-1] over the mean distance of those nodes to themselves, rounded (SLIT 10 and 21: 210). 0 when
 * the host has no matrix, misses a distance among those nodes, or they are fewer than two. */
int hostNumaFactorPct(const tdHost *h, const int *node, int n);
/* The NUMA nodes of node[0 .. n-1] as a list ("0-3"); returns buf. */
char *hostNodeList(const int *node, int n, char *buf, size_t len);
/* The processing units a decision binds to (npus flags by index in pus[]); 0 when it binds none. */
int hostPlaceMask(const tdHost *h, const tdHostPlace *p, uint8_t *mask);
/* The NUMA node every unit of mask (npus flags) belongs to; -1 if they span several, or none. */
int hostMaskNuma(const tdHost *h, const uint8_t *mask);
/* Cores with at least one unit in mask. */
int hostMaskCores(const tdHost *h, const uint8_t *mask);

/* Pipeline piece size from the caches: an eighth of one core's share of L2 (of L3 when there is
 * no L2), a power of two in [TD_HOST_CHUNK_MIN, TD_HOST_CHUNK_MAX]; TD_HOST_CHUNK_DEFAULT when the
 * caches are unknown or h is NULL. explicit_bytes > 0 (TPU_DIST_CHUNK_BYTES) wins. */
long hostChunkBytes(const tdHost *h, long explicit_bytes);

/* Writes the OS indices of mask as a list ("0-3,8"); returns buf. */
char *hostMaskList(const tdHost *h, const uint8_t *mask, char *buf, size_t len);
/* Writes what the model holds: source, counts, caches, then one line per NUMA node. */
void hostPrint(const tdHost *h, FILE *f);
void hostFree(tdHost *h);

#endif /* TD_HOST_H_ */
