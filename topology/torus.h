/*
 * torus.h - the pure torus model: 1 to 4 dimensions, per-axis wrap, twisted tori, rank <-> coords
 * (x fastest; host-blocked when chips-per-host bounds are known), neighbours, dimension-ordered
 * routes, hosts, sub-blocks for split communicators, and pure parsers for TPU_DIST_TOPOLOGY and
 * the TPU runtime variables. Reads no environment, never logs.
 *
 * ndims == 0 is the flat topology (fully connected; every pair is one hop).
 */
#ifndef TD_TORUS_H_
#define TD_TORUS_H_

#include "td_base.h"

#define TD_MAX_DIMS 4

typedef struct {
  int ndims;                    /* 0 = flat */
  int nranks;                   /* product of dims (or the rank count when flat) */
  int dims[TD_MAX_DIMS];        /* unused axes are 1 */
  int wrap[TD_MAX_DIMS];        /* 1 if the axis is a ring, 0 if a line */
  int twisted;                  /* twisted torus wiring (n x n x 2n or n x 2n x 2n), see torus.c */
  int host_bounds[TD_MAX_DIMS]; /* chips per host along each axis; all 0 = unknown (flat:
                                   host_bounds[0] = ranks per host) */
  int slices;                   /* 0 or 1: one slice. S > 1: slices joined by DCN; on a torus the
                                   last axis (length S, a line) is the slice level, the others
                                   one slice's ICI torus; ranks are slice-major */
  int numa;                     /* flat: ranks per NUMA node, each node's ranks a block of
                                   consecutive ranks inside its host; 0 = unknown */
} tdTopo;

/* One hop of a route: from rank along axis in direction dir (+1 / -1), arriving at rank to.
 * On a flat topology a hop is one direct link: axis -1, dir 0. */
typedef struct {
  int from;
  int axis;
  int dir;
  int to;
} tdHop;

/* The directed link a torus hop crosses, as an index in [0, nranks x ndims x 2): the link out of
 * rank `from` (0 for every rank: its class, in a plan costed by symmetry) along the hop's axis
 * and direction. The one numbering of the cost model and the selection's estimates. */
static inline size_t topoLinkIndex(const tdTopo *t, size_t from, const tdHop *h) {
  return (from * (size_t)t->ndims + (size_t)h->axis) * 2 + (h->dir > 0);
}

/* Largest rank count a torus may have (products above it are rejected). */
#define TD_TOPO_MAX_RANKS (1 << 24)

/* Flat topology of nranks. */
void topoInitFlat(tdTopo *t, int nranks);
/* Torus with explicit dims/wraps; checks shape and twist rules. */
tpudistResult_t topoInit(tdTopo *t, int ndims, const int *dims, const int *wrap, int twisted,
                         char *err);

/* Chips per host along each axis (ndims entries, each dividing its axis); NULL clears them. Once
 * set, ranks are host-blocked: host h holds ranks h*P .. h*P+P-1 (P = chips per host), hosts are
 * numbered x fastest over the host grid and each host's chips x fastest inside its block. */
tpudistResult_t topoSetHostBounds(tdTopo *t, const int *bounds, char *err);

/* rank <-> coordinates (coords has TD_MAX_DIMS entries; unused axes 0; a rank out of range gives
 * -1 on every used axis; flat gives all 0). topoCoordsToRank returns -1 for coordinates outside. */
void topoRankToCoords(const tdTopo *t, int rank, int *coords);
int topoCoordsToRank(const tdTopo *t, const int *coords);

/* Neighbour of rank one step along axis in direction dir (+1/-1), following wrap and twist;
 * -1 where a line ends. On a flat topology returns -1. */
int topoNeighbor(const tdTopo *t, int rank, int axis, int dir);
/* The torus as a group: the rank at coordinates c + delta (c: TD_MAX_DIMS coordinates of a chip,
 * NULL for the origin; delta: any integers per axis), rings taken modulo their length and a short
 * axis' wraparound shifting the long axes as topoNeighbor does on a twisted torus, or -1 off the
 * end of a line. Dimension-ordered routes are translates: the route from s + t to d + t is the
 * route from s to d moved by t. If out is not NULL it receives the reduced coordinates. */
int topoTranslate(const tdTopo *t, const int *c, const int *delta, int *out);
/* 1 if a and b are joined by one link (any axis, either direction); on flat, a != b. */
int topoIsNeighbor(const tdTopo *t, int a, int b);
/* Largest number of shares a message is split into (topoPaths). */
#define TD_MAX_PATHS 16
/* Dimension-ordered shortest routes (x, then y, ...; shortest direction per ring): a message from
 * src to dst is split into topoPaths() equal shares, each following its own shortest route; more
 * than one where ways round tie (half way round an even ring: both directions; on a twisted torus
 * every way round its short axes that gives the fewest hops). Returns 1 .. TD_MAX_PATHS (1 on a
 * flat topology), -1 for a rank out of range. All of them have topoHops hops. */
int topoPaths(const tdTopo *t, int src, int dst);
/* Route of share path (0 .. topoPaths - 1; path 0 takes every tie +). Writes at most maxhops
 * hops and returns the hop count (may exceed maxhops: then call again with more room), -1 for a
 * rank or path out of range. */
int topoRoute(const tdTopo *t, int src, int dst, int path, tdHop *hops, int maxhops);
int topoHops(const tdTopo *t, int src, int dst);

/* Host of a rank when host bounds are known (hosts in order, each host's ranks one block);
 * otherwise rank itself. */
int topoHostOf(const tdTopo *t, int rank);
int topoNumHosts(const tdTopo *t);

/* Slices as the outer level: t (one slice's torus of at most 3 axes, or flat(N)) becomes S of them
 * joined by DCN (slice-major ranks; on a torus a last axis of length S that does not wrap). S == 1
 * is a no-op. A twisted or already sliced topology is refused. */
tpudistResult_t topoSetSlices(tdTopo *t, int slices, char *err);
/* 1 when not sliced. */
int topoNumSlices(const tdTopo *t);
/* Slice of a rank (0 when not sliced, -1 out of range). */
int topoSliceOf(const tdTopo *t, int rank);
/* The DCN level: ranks of different domains talk over DCN through their hosts' NICs, ranks of one
 * domain over ICI (a torus) or inside a host (flat). On a torus the domains are the slices; on a
 * flat topology the hosts when they are known (hosts never span slices), else the slices. Returns
 * the domain of rank (0 when there is no DCN level, -1 out of range). */
int topoDcnDomain(const tdTopo *t, int rank);
/* 1 when the topology has more than one DCN domain. */
int topoHasDcn(const tdTopo *t);
/* Flat topology: ranks per host (host-blocked, dividing nranks); 0 clears it. */
tpudistResult_t topoSetFlatHosts(tdTopo *t, int per_host, char *err);
/* The NUMA level inside a host (flat only): ranks per NUMA node (consecutive blocks, dividing the
 * ranks per host, or per slice when hosts are unknown); 0 clears it. A level below the hosts: it
 * carries no DCN, only dearer copies (cost.h, numa_factor). */
tpudistResult_t topoSetFlatNuma(tdTopo *t, int per_numa, char *err);
/* NUMA nodes of the whole topology (1 when the level is unknown); the node of a rank (0 when
 * unknown, -1 out of range). */
int topoNumNuma(const tdTopo *t);
int topoNumaOf(const tdTopo *t, int rank);

/* Parses TPU_DIST_TOPOLOGY: AxB[xC[xD]] with optional ":wrap=1,1,0", ":twist", ":hosts=2,2,1"
 * (chips per host) and ":slices=S" (S such slices joined by DCN; the other options describe one
 * slice), or "flat" / "flat(N)" with optional ":hosts=K" (ranks per host), ":numa=M" (ranks per
 * NUMA node) and ":slices=S" (N per slice). Without a wrap spec every axis of length >= 3 wraps
 * (with :twist, x, y and z wrap). nranks > 0 must equal the product (the message says both
 * numbers); nranks <= 0 skips that check. */
tpudistResult_t topoParse(const char *spec, int nranks, tdTopo *out, char *err);

/* The TPU runtime's variables (strings as read from the environment; NULL when unset). */
typedef struct {
  const char *accelerator_type;      /* TPU_ACCELERATOR_TYPE, e.g. "v5p-128", "v5litepod-16" */
  const char *topology;              /* TPU_TOPOLOGY, e.g. "4x4x4" */
  const char *topology_wrap;         /* TPU_TOPOLOGY_WRAP, e.g. "true,true,false" */
  const char *topology_alt;          /* TPU_TOPOLOGY_ALT: "true" means twisted */
  const char *chips_per_host_bounds; /* TPU_CHIPS_PER_HOST_BOUNDS, e.g. "2,2,1" */
} tdTpuEnv;

/* Builds the torus from the TPU variables with each generation's real wrap rule (v4/v5p/v7 wrap
 * only when every dimension is >= 4; v5e/v6e only axes of 16). Returns tpudistNotSupported when
 * the variables name no topology. */
tpudistResult_t topoFromTpuEnv(const tdTpuEnv *env, int nranks, tdTopo *out, char *err);

/* Topology of a sub-communicator: members[i] = parent rank of new rank i. If the members form an
 * axis-aligned sub-block of the parent in x-fastest order, out is that sub-torus (an axis wraps
 * only if it spans the whole parent axis and that axis wraps); otherwise out is flat. */
void topoSubBlock(const tdTopo *parent, const int *members, int n, tdTopo *out);

/* "4x4x4" / "4x4x8:twist" / "flat(8)" for logs and dumps. */
void topoFormat(const tdTopo *t, char *buf, size_t len);

#endif /* TD_TORUS_H_ */
