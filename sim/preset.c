/*
 * preset.c - the simulator's generation presets: link figures, chips per host, wrap rules and the
 * slice shapes each generation sells. Every figure and its public source is in docs/simulator.md.
 *
 * link_bw is the official per-chip ICI figure divided by ports and by two directions (this is the
 * figure the published pod aggregates are built from); book_link_bw is the scaling book's one-way
 * per-link figure, which its worked examples use. The injection limit defaults to all ports busy.
 * DCN egress per chip is the book's (v5e 3.125e9, v5p 6.25e9, v6e and 7x 12.5e9 B/s; v4, which
 * it does not give, as v5p); the DCN latency, 10 us, is an assumption (no published figure).
 */
#include <stdio.h>
#include <string.h>

#include "sim.h"

/* Latencies (docs/simulator.md, "Latencies"), the same for every generation where nothing
 * per generation is published: 1 us per hop [Book]; 0.39 us of synchronisation per message, so
 * that a 4 KiB one-hop DMA takes the 1.43 us a third-party v6e micro-benchmark measured
 * (unconfirmed); 1.5 us of launch per collective, the residual of the book's measured v5e
 * all-gather of 32 kB shards (about 8 us) after hops, synchronisation and bytes. link_eff: v5e's
 * all-gather reaches ~95% of the book's 4.5e10 B/s per link [Book], 0.855 of the official 50e9;
 * elsewhere no measurement is published (1). */
/* clang-format off */
#define SIM_HOP 1e-6
#define SIM_SYNC 0.39e-6
#define SIM_LAUNCH 1.5e-6
const simPreset simPresets[] = {
    /* v4: ISCA 6 x 50 GB/s one way; book 4.5e10; HBM 1200 GB/s; 4 chips per host (2,2,1). */
    {"v4", 50e9, 45e9, SIM_HOP, SIM_SYNC, 300e9, 1200e9, 6, 3, {2, 2, 1}, 4096, SIM_WRAP_CUBE, 6.25e9, 10e-6, SIM_LAUNCH, 1},
    /* v5e: 400 GB/s per chip bidirectional over 4 ports; book 4.5e10; HBM 819 GB/s; 8 per host. */
    {"v5e", 50e9, 45e9, SIM_HOP, SIM_SYNC, 200e9, 819e9, 4, 2, {2, 4, 1}, 256, SIM_WRAP_16, 3.125e9, 10e-6, SIM_LAUNCH, 0.855},
    /* v5p: 1200 GB/s per chip bidirectional over 6 ports; book 9e10; HBM 2765 GB/s; 4 per host. */
    {"v5p", 100e9, 90e9, SIM_HOP, SIM_SYNC, 600e9, 2765e9, 6, 3, {2, 2, 1}, 6144, SIM_WRAP_CUBE, 6.25e9, 10e-6, SIM_LAUNCH, 1},
    /* v6e: 800 GB/s per chip bidirectional over 4 ports; book 9e10; HBM 1638 GB/s; 8 per host. */
    {"v6e", 100e9, 90e9, SIM_HOP, SIM_SYNC, 400e9, 1638e9, 4, 2, {2, 4, 1}, 256, SIM_WRAP_16, 12.5e9, 10e-6, SIM_LAUNCH, 1},
    /* 7x (Ironwood): ~1.2 TB/s per chip (unconfirmed) over 6 ports; book 9e10; HBM ~7.4e12. */
    {"v7", 100e9, 90e9, SIM_HOP, SIM_SYNC, 600e9, 7.4e12, 6, 3, {2, 2, 1}, 9216, SIM_WRAP_CUBE, 12.5e9, 10e-6, SIM_LAUNCH, 1},
    {NULL, 0, 0, 0, 0, 0, 0, 0, 0, {0, 0, 0}, 0, SIM_WRAP_CUBE, 0, 0, 0, 0},
};
/* clang-format on */

const simPreset *simPresetFind(const char *name) {
  if (!name) return NULL;
  if (!strcmp(name, "tpu7x") || !strcmp(name, "7x") || !strcmp(name, "ironwood")) name = "v7";
  for (const simPreset *p = simPresets; p->name; p++)
    if (!strcmp(p->name, name)) return p;
  return NULL;
}

static int axisWraps(const simPreset *p, int ndims, const int *dims, int a) {
  if (p->wrap_rule == SIM_WRAP_16) return dims[a] == 16;
  if (ndims < 3) return 0;
  for (int i = 0; i < ndims; i++)
    if (dims[i] < 4) return 0;
  return 1;
}

tpudistResult_t simPresetTopo(const simPreset *p, int ndims, const int *dims, int twisted,
                              tdTopo *out, char *err) {
  int wrap[TD_MAX_DIMS] = {0};
  if (ndims < 1 || ndims > TD_MAX_DIMS)
    return tdErr(err, tpudistInvalidArgument, "sim: %d dimensions (1 to %d)", ndims, TD_MAX_DIMS);
  for (int a = 0; a < ndims; a++) wrap[a] = twisted ? 1 : axisWraps(p, ndims, dims, a);
  TD_CHECK(topoInit(out, ndims, dims, wrap, twisted, err));
  int hb[TD_MAX_DIMS], ok = 1;
  for (int a = 0; a < ndims; a++) {
    hb[a] = a < 3 ? p->host_bounds[a] : 1;
    if (dims[a] % hb[a]) ok = 0;
  }
  if (ok) TD_CHECK(topoSetHostBounds(out, hb, err));
  return tpudistSuccess;
}

static int inList(const char *shape, const char *const *list) {
  for (; *list; list++)
    if (!strcmp(shape, *list)) return 1;
  return 0;
}

int simPresetSold(const simPreset *p, int ndims, const int *dims, int twisted, char *why,
                  size_t len) {
  static const char *const flat2d[] = {"1x1", "2x2",  "2x4",   "4x4", "4x8",
                                       "8x8", "8x16", "16x16", NULL};
  static const char *const subcube[] = {"1x1x1", "2x2x1", "2x2x2", "2x2x4", "2x4x4", NULL};
  char shape[64] = "";
  long n = 1;
  int d[3] = {1, 1, 1}, nd = ndims;
  for (int a = ndims - 1; a >= 0 && a >= 2 && dims[a] == 1; a--) nd = a; /* trailing 1s */
  for (int a = 0; a < ndims; a++) {
    n *= dims[a];
    if (a < 3) d[a] = dims[a];
  }
  if (p->max_dims == 2) {
    snprintf(shape, sizeof(shape), "%dx%d", d[0], d[1]);
    if (nd <= 2 && ndims <= 3 && d[2] == 1 && !twisted && inList(shape, flat2d)) return 1;
    snprintf(why, len, "%s sells the 2D slices 1x1 .. 16x16 (no twist), not this shape", p->name);
    return 0;
  }
  snprintf(shape, sizeof(shape), "%dx%dx%d", d[0], d[1], d[2]);
  if (ndims <= 3 && inList(shape, subcube) && !twisted) return 1;
  if (ndims > 3 || d[0] > d[1] || d[1] > d[2]) {
    snprintf(why, len, "%s slices are AxBxC with A <= B <= C", p->name);
    return 0;
  }
  if (n > p->max_chips) {
    snprintf(why, len, "%ld chips: the largest %s slice has %d", n, p->name, p->max_chips);
    return 0;
  }
  for (int a = 0; a < 3; a++)
    if (d[a] % 4) {
      snprintf(why, len, "%s slices beyond a sub-cube are whole 4x4x4 cubes (dims multiples of 4)",
               p->name);
      return 0;
    }
  if (twisted && !((d[0] == d[1] && d[2] == 2 * d[0]) || (d[1] == d[2] && d[1] == 2 * d[0]))) {
    snprintf(why, len, "%s twists only n x n x 2n and n x 2n x 2n", p->name);
    return 0;
  }
  return 1;
}
