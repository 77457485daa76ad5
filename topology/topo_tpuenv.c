/*
 * topo_tpuenv.c - builds the torus from the TPU runtime's variables, passed in as strings by
 * src/core (nothing here reads the environment). Rules (docs/topology.md, reference §3-4):
 *
 * - Generation from TPU_ACCELERATOR_TYPE "<gen>-<N>": v3, v4, v5p, tpu7x (also v7, v7x) have
 *   3D tori built from 4x4x4 cubes and count N in TensorCores, two per chip; v5litepod (v5e) and
 *   v6e have 2D tori and count chips.
 * - Shape from TPU_TOPOLOGY ("4x4x8", "2x2", a "_twisted" suffix means twisted); without it, the
 *   generation's default shape for N (v4-256 = 4x4x8, v5litepod-16 = 4x4).
 * - Wrap from TPU_TOPOLOGY_WRAP ("true,true,false") when set; otherwise the generation's rule:
 *   cube generations wrap every axis when every axis is >= 4 and none otherwise (wraparound links
 *   come from the optical switches, which exist per whole cube); v5e/v6e wrap only axes of 16.
 *   Unknown generation: 3D shapes take the cube rule, 1D/2D shapes the 16 rule.
 * - Twisted when TPU_TOPOLOGY_ALT is "true" or the shape says _twisted (cube generations only).
 * - TPU7x runs one rank per TensorCore: when the rank count is twice the chip count a 4th axis of
 *   2 (the two cores of a chip, no wrap) is added.
 * - TPU_CHIPS_PER_HOST_BOUNDS ("2,2,1") makes the rank order host-blocked; a bound larger than its
 *   axis is cut to the axis (a one-host slice smaller than a host); the core axis is on one host.
 */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "topo_priv.h"

typedef enum { RULE_NONE, RULE_CUBE, RULE_16 } wrapRule;

typedef struct {
  const char *name;
  wrapRule rule;
  int coresPerChip;   /* how many the number in the accelerator type counts per chip */
  int devicesPerChip; /* ranks a chip may carry */
  int twistable;
  int defaults; /* 3 = cube default shapes, 2 = 2D default shapes, 0 = none */
} genInfo;

static const genInfo kGens[] = {
    {"v3", RULE_CUBE, 2, 1, 0, 0},    {"v4", RULE_CUBE, 2, 1, 1, 3},
    {"v5p", RULE_CUBE, 2, 1, 1, 3},   {"v5litepod", RULE_16, 1, 1, 0, 2},
    {"v5e", RULE_16, 1, 1, 0, 2},     {"v6e", RULE_16, 1, 1, 0, 2},
    {"tpu7x", RULE_CUBE, 2, 2, 1, 3}, {"v7", RULE_CUBE, 2, 2, 1, 3},
    {"v7x", RULE_CUBE, 2, 2, 1, 3},   {"tpuv7x", RULE_CUBE, 2, 2, 1, 3},
};

static const genInfo kUnknown = {"unknown", RULE_NONE, 1, 1, 1, 0};

/* Default slice shapes by chip count (TPU docs' tables for the default topologies). */
static const struct {
  int chips, dims[3];
} kCubeShapes[] = {{4, {2, 2, 1}},      {8, {2, 2, 2}},      {16, {2, 2, 4}},
                   {32, {2, 4, 4}},     {64, {4, 4, 4}},     {128, {4, 4, 8}},
                   {256, {4, 8, 8}},    {512, {8, 8, 8}},    {768, {8, 8, 12}},
                   {1024, {8, 8, 16}},  {2048, {8, 16, 16}}, {4096, {16, 16, 16}},
                   {6144, {16, 16, 24}}};
static const struct {
  int chips, dims[2];
} kFlatShapes[] = {{1, {1, 1}},  {4, {2, 2}},  {8, {2, 4}},    {16, {4, 4}},
                   {32, {4, 8}}, {64, {8, 8}}, {128, {8, 16}}, {256, {16, 16}}};

static int isSet(const char *s) {
  return s && *s;
}

/* Splits "<gen>-<N>" into the generation and N (-1 if absent or malformed). */
static const genInfo *parseAccel(const char *type, int *count) {
  *count = -1;
  if (!isSet(type)) return &kUnknown;
  const char *dash = strrchr(type, '-');
  size_t glen = dash ? (size_t)(dash - type) : strlen(type);
  if (dash) {
    const char *p = dash + 1;
    int v = topoParseNum(&p);
    if (v > 0 && *p == '\0') *count = v;
  }
  for (size_t i = 0; i < sizeof(kGens) / sizeof(kGens[0]); i++)
    if (strlen(kGens[i].name) == glen && strncasecmp(kGens[i].name, type, glen) == 0)
      return &kGens[i];
  return &kUnknown;
}

static int defaultShape(const genInfo *g, int count, int *dims, int *ndims) {
  if (count <= 0 || count % g->coresPerChip) return 0;
  int chips = count / g->coresPerChip;
  if (g->defaults == 3) {
    for (size_t i = 0; i < sizeof(kCubeShapes) / sizeof(kCubeShapes[0]); i++)
      if (kCubeShapes[i].chips == chips) {
        memcpy(dims, kCubeShapes[i].dims, sizeof(int) * 3);
        *ndims = 3;
        return 1;
      }
  } else if (g->defaults == 2) {
    for (size_t i = 0; i < sizeof(kFlatShapes) / sizeof(kFlatShapes[0]); i++)
      if (kFlatShapes[i].chips == chips) {
        memcpy(dims, kFlatShapes[i].dims, sizeof(int) * 2);
        *ndims = 2;
        return 1;
      }
  }
  return 0;
}

static int parseBool(const char *s, size_t len, int *v) {
  if ((len == 4 && strncasecmp(s, "true", 4) == 0) || (len == 1 && *s == '1'))
    *v = 1;
  else if ((len == 5 && strncasecmp(s, "false", 5) == 0) || (len == 1 && *s == '0'))
    *v = 0;
  else
    return 0;
  return 1;
}

/* TPU_TOPOLOGY_WRAP: one boolean per axis; values past the last axis (a 2D shape written with
 * its implicit third axis of 1) are ignored. */
static tpudistResult_t parseWrapVar(const char *s, int ndims, int *wrap, char *err) {
  int n = 0;
  for (const char *p = s;; n++) {
    size_t len = strcspn(p, ",");
    int v;
    if (!parseBool(p, len, &v))
      return tdErr(err, tpudistInvalidArgument, "'%.*s' is not true or false", (int)TD_MIN(len, 16),
                   p);
    if (n < ndims) wrap[n] = v;
    if (p[len] == '\0') break;
    p += len + 1;
  }
  n++;
  if (n < ndims || n > 3)
    return tdErr(err, tpudistInvalidArgument, "%d values for %d dimensions", n, ndims);
  return tpudistSuccess;
}

static void ruleWrap(wrapRule rule, int ndims, const int *dims, int *wrap) {
  if (rule == RULE_NONE) rule = ndims >= 3 ? RULE_CUBE : RULE_16;
  int cubes = 1;
  for (int a = 0; a < ndims; a++) cubes &= dims[a] >= 4;
  for (int a = 0; a < ndims; a++) wrap[a] = rule == RULE_CUBE ? cubes : dims[a] == 16;
}

/* The shape: TPU_TOPOLOGY (with an optional _twisted suffix) or the generation's default. */
static tpudistResult_t envShape(const tdTpuEnv *env, const genInfo *g, int count, int *dims,
                                int *ndims, int *twisted, char *err) {
  if (!isSet(env->topology)) {
    if (!isSet(env->accelerator_type))
      return tdErr(err, tpudistNotSupported, "TPU_TOPOLOGY and TPU_ACCELERATOR_TYPE are unset");
    if (!defaultShape(g, count, dims, ndims))
      return tdErr(err, tpudistNotSupported,
                   "TPU_ACCELERATOR_TYPE '%.40s' names no default topology; set TPU_TOPOLOGY",
                   env->accelerator_type);
    return tpudistSuccess;
  }
  const char *p = env->topology;
  TD_CHECK(topoParseDims(&p, 3, dims, ndims, "TPU_TOPOLOGY", err));
  if (strcasecmp(p, "_twisted") == 0 || strcasecmp(p, "-twisted") == 0) {
    *twisted = 1;
  } else if (*p != '\0') {
    return tdErr(err, tpudistInvalidArgument, "TPU_TOPOLOGY '%.40s': unexpected '%c'",
                 env->topology, *p);
  }
  return tpudistSuccess;
}

static tpudistResult_t envHosts(const tdTpuEnv *env, int chipDims, tdTopo *t, char *err) {
  int vals[TD_MAX_DIMS + 1], n = 0, hb[TD_MAX_DIMS];
  const char *p = env->chips_per_host_bounds;
  for (;;) {
    int v = topoParseNum(&p);
    if (v < 1 || n == TD_MAX_DIMS)
      return tdErr(err, tpudistInvalidArgument, "expected 1 to %d numbers >= 1", TD_MAX_DIMS);
    vals[n++] = v;
    if (*p != ',') break;
    p++;
  }
  if (*p != '\0') return tdErr(err, tpudistInvalidArgument, "unexpected '%c'", *p);
  for (int a = 0; a < t->ndims; a++) {
    int v = a < n ? vals[a] : (a < chipDims ? 1 : t->dims[a]);
    hb[a] = TD_MIN(v, t->dims[a]);
  }
  for (int a = t->ndims; a < n; a++)
    if (vals[a] != 1)
      return tdErr(err, tpudistInvalidArgument, "value %d is for an axis the topology lacks",
                   a + 1);
  return topoSetHostBounds(t, hb, err);
}

static tpudistResult_t envBuild(const tdTpuEnv *env, int nranks, tdTopo *out, char *err) {
  int count, dims[TD_MAX_DIMS], wrap[TD_MAX_DIMS], ndims = 0, twisted = 0;
  const genInfo *g = parseAccel(env->accelerator_type, &count);
  TD_CHECK(envShape(env, g, count, dims, &ndims, &twisted, err));
  int alt = 0;
  if (isSet(env->topology_alt) && !parseBool(env->topology_alt, strlen(env->topology_alt), &alt))
    return tdErr(err, tpudistInvalidArgument, "TPU_TOPOLOGY_ALT '%.16s' is not true or false",
                 env->topology_alt);
  twisted |= alt;
  if (twisted && !g->twistable)
    return tdErr(err, tpudistInvalidArgument, "%s has no twisted tori", g->name);
  int chips = 1;
  for (int a = 0; a < ndims; a++) {
    if (dims[a] < 1 || chips > TD_TOPO_MAX_RANKS / dims[a])
      return tdErr(err, tpudistInvalidArgument, "TPU topology has more than %d chips",
                   TD_TOPO_MAX_RANKS);
    chips *= dims[a];
  }
  if (isSet(env->topology_wrap)) {
    tpudistResult_t res = parseWrapVar(env->topology_wrap, ndims, wrap, err);
    if (res != tpudistSuccess) {
      topoErrPrefix(err, "TPU_TOPOLOGY_WRAP");
      return res;
    }
  } else {
    ruleWrap(g->rule, ndims, dims, wrap);
  }
  int chipDims = ndims;
  if (nranks > 0 && nranks != chips) {
    if (g->devicesPerChip != 2 || nranks != 2 * chips) {
      char shape[64];
      topoFormatDims(ndims, dims, shape, sizeof(shape));
      return tdErr(err, tpudistInvalidArgument,
                   "TPU topology %s has %d chips but the communicator has %d ranks", shape, chips,
                   nranks);
    }
    for (; ndims < 3; ndims++) {
      dims[ndims] = 1;
      wrap[ndims] = 0;
    }
    chipDims = ndims++;
    dims[chipDims] = 2; /* the two TensorCores of a chip */
    wrap[chipDims] = 0;
  }
  TD_CHECK(topoInit(out, ndims, dims, wrap, twisted, err));
  if (isSet(env->chips_per_host_bounds)) {
    tpudistResult_t res = envHosts(env, chipDims, out, err);
    if (res != tpudistSuccess) {
      topoErrPrefix(err, "TPU_CHIPS_PER_HOST_BOUNDS");
      return res;
    }
  }
  return tpudistSuccess;
}

tpudistResult_t topoFromTpuEnv(const tdTpuEnv *env, int nranks, tdTopo *out, char *err) {
  if (!env || !out) return tdErr(err, tpudistInvalidArgument, "NULL TPU variables or output");
  tdTopo t;
  TD_CHECK(envBuild(env, nranks, &t, err));
  *out = t;
  return tpudistSuccess;
}
