/*
 * topo_parse.c - the pure parser of TPU_DIST_TOPOLOGY (the caller passes the string; nothing here
 * reads the environment). Syntax (docs/topology.md):
 *
 *   AxB[xC[xD]][:wrap=W,W,...][:twist][:hosts=H,H,...][:slices=S]
 *   flat | flat(N) [:hosts=K][:numa=M][:slices=S]
 *
 * Lengths are >= 1, at most 4 of them (x fastest). Without :wrap every axis of length >= 3 wraps
 * (with :twist, x, y and z wrap). :wrap gives one 0/1 per axis; :hosts gives the chips per host
 * along each axis (each dividing its axis) and makes the rank order host-blocked. Options may come
 * in any order, each at most once. :slices=S makes S such slices joined by DCN (the shape and the
 * other options describe one slice; flat(N) is N ranks per slice, :hosts=K ranks per host, :numa=M
 * ranks per NUMA node). Every rejection says what is wrong and where.
 */
#include <ctype.h>
#include <string.h>

#include "topo_priv.h"

int topoParseNum(const char **p) {
  const char *s = *p;
  long v = 0;
  int digits = 0;
  while (isdigit((unsigned char)*s) && digits < 8) {
    v = v * 10 + (*s++ - '0');
    digits++;
  }
  if (digits == 0 || isdigit((unsigned char)*s) || v > TD_TOPO_MAX_DIM) return -1;
  *p = s;
  return (int)v;
}

void topoErrPrefix(char *err, const char *prefix) {
  if (!err) return;
  size_t plen = strnlen(prefix, TD_ERRLEN / 2), mlen = strnlen(err, TD_ERRLEN - 1);
  if (plen + 2 + mlen > TD_ERRLEN - 1) mlen = TD_ERRLEN - 1 - plen - 2;
  memmove(err + plen + 2, err, mlen);
  memcpy(err, prefix, plen);
  err[plen] = ':';
  err[plen + 1] = ' ';
  err[plen + 2 + mlen] = '\0';
}

tpudistResult_t topoParseDims(const char **p, int maxdims, int *dims, int *ndims, const char *what,
                              char *err) {
  const char *s = *p, *start = *p;
  int n = 0;
  for (;;) {
    const char *at = s;
    int v = topoParseNum(&s);
    if (v < 0) {
      if (isdigit((unsigned char)*at))
        return tdErr(err, tpudistInvalidArgument, "%s: length at position %d is above %d", what,
                     (int)(at - start) + 1, TD_TOPO_MAX_DIM);
      if (n > 0)
        return tdErr(err, tpudistInvalidArgument, "%s: missing length after 'x' at position %d",
                     what, (int)(at - start) + 1);
      return tdErr(err, tpudistInvalidArgument, "%s: expected a length at position %d", what,
                   (int)(at - start) + 1);
    }
    if (n < TD_MAX_DIMS) dims[n] = v;
    n++;
    if (v < 1)
      return tdErr(err, tpudistInvalidArgument, "%s: axis %c has length 0; lengths are >= 1", what,
                   topoAxisName(n - 1));
    if (*s != 'x' && *s != 'X') break;
    s++;
  }
  if (n > maxdims)
    return tdErr(err, tpudistInvalidArgument, "%s: %d dimensions; at most %d", what, n, maxdims);
  *ndims = n;
  *p = s;
  return tpudistSuccess;
}

/* Parses "v,v,..." (up to TD_MAX_DIMS + 1 values, each 0..TD_TOPO_MAX_DIM) at *p. */
static tpudistResult_t parseList(const char **p, int *vals, int *count, const char *what,
                                 char *err) {
  int n = 0;
  for (;;) {
    int v = topoParseNum(p);
    if (v < 0) return tdErr(err, tpudistInvalidArgument, "%s: expected a number", what);
    if (n == TD_MAX_DIMS + 1)
      return tdErr(err, tpudistInvalidArgument, "%s: more than %d values", what, TD_MAX_DIMS);
    vals[n++] = v;
    if (**p != ',') break;
    (*p)++;
  }
  *count = n;
  return tpudistSuccess;
}

typedef struct {
  int ndims, dims[TD_MAX_DIMS];
  int haveWrap, wrap[TD_MAX_DIMS + 1], nwrap;
  int twist;
  int haveHosts, hosts[TD_MAX_DIMS + 1], nhosts;
  int slices; /* 0 = not given */
  int numa;   /* flat: ranks per NUMA node; 0 = not given */
} parsedSpec;

static tpudistResult_t parseOption(const char **p, parsedSpec *ps, char *err) {
  const char *s = *p;
  if (strncmp(s, "twist", 5) == 0 && (s[5] == ':' || s[5] == '\0')) {
    if (ps->twist) return tdErr(err, tpudistInvalidArgument, "twist given twice");
    ps->twist = 1;
    *p = s + 5;
    return tpudistSuccess;
  }
  if (strncmp(s, "wrap=", 5) == 0) {
    if (ps->haveWrap) return tdErr(err, tpudistInvalidArgument, "wrap given twice");
    *p = s + 5;
    ps->haveWrap = 1;
    TD_CHECK(parseList(p, ps->wrap, &ps->nwrap, "wrap", err));
    for (int i = 0; i < ps->nwrap; i++)
      if (ps->wrap[i] > 1)
        return tdErr(err, tpudistInvalidArgument, "wrap: value %d is not 0 or 1", ps->wrap[i]);
    return tpudistSuccess;
  }
  if (strncmp(s, "hosts=", 6) == 0) {
    if (ps->haveHosts) return tdErr(err, tpudistInvalidArgument, "hosts given twice");
    *p = s + 6;
    ps->haveHosts = 1;
    return parseList(p, ps->hosts, &ps->nhosts, "hosts", err);
  }
  if (strncmp(s, "slices=", 7) == 0) {
    if (ps->slices) return tdErr(err, tpudistInvalidArgument, "slices given twice");
    *p = s + 7;
    ps->slices = topoParseNum(p);
    if (ps->slices < 1) return tdErr(err, tpudistInvalidArgument, "slices: expected a number >= 1");
    return tpudistSuccess;
  }
  if (strncmp(s, "numa=", 5) == 0) {
    if (ps->numa) return tdErr(err, tpudistInvalidArgument, "numa given twice");
    *p = s + 5;
    ps->numa = topoParseNum(p);
    if (ps->numa < 1) return tdErr(err, tpudistInvalidArgument, "numa: expected a number >= 1");
    return tpudistSuccess;
  }
  size_t w = strcspn(s, ":");
  return tdErr(err, tpudistInvalidArgument,
               "unknown option '%.*s' (expected wrap=, twist, hosts=, numa=, slices=)",
               (int)TD_MIN(w, 32), s);
}

/* The options from p to the end of s. */
static tpudistResult_t parseOptions(const char *s, const char *p, parsedSpec *ps, char *err) {
  while (*p == ':') {
    p++;
    TD_CHECK(parseOption(&p, ps, err));
  }
  if (*p != '\0')
    return tdErr(err, tpudistInvalidArgument, "unexpected '%c' at position %d", *p,
                 (int)(p - s) + 1);
  return tpudistSuccess;
}

static tpudistResult_t parseSpec(const char *s, parsedSpec *ps, char *err) {
  const char *p = s;
  memset(ps, 0, sizeof(*ps));
  TD_CHECK(topoParseDims(&p, TD_MAX_DIMS, ps->dims, &ps->ndims, "dimensions", err));
  TD_CHECK(parseOptions(s, p, ps, err));
  if (ps->haveWrap && ps->nwrap != ps->ndims)
    return tdErr(err, tpudistInvalidArgument, "wrap lists %d value%s for %d dimensions", ps->nwrap,
                 ps->nwrap == 1 ? "" : "s", ps->ndims);
  if (ps->numa)
    return tdErr(err, tpudistInvalidArgument, "numa=M (ranks per NUMA node) is for flat only");
  if (ps->haveHosts && ps->nhosts != ps->ndims)
    return tdErr(err, tpudistInvalidArgument, "hosts lists %d value%s for %d dimensions",
                 ps->nhosts, ps->nhosts == 1 ? "" : "s", ps->ndims);
  return tpudistSuccess;
}

/* flat, flat(N), each with :hosts=K, :numa=M and :slices=S (N ranks per slice). */
static tpudistResult_t parseFlat(const char *s, int nranks, tdTopo *out, char *err) {
  const char *p = s + 4;
  int n = -1;
  parsedSpec ps;
  memset(&ps, 0, sizeof(ps));
  if (*p == '(') {
    p++;
    n = topoParseNum(&p);
    if (n < 1 || *p != ')')
      return tdErr(err, tpudistInvalidArgument, "expected flat or flat(N) with N >= 1");
    p++;
  }
  if (*p != '\0' && *p != ':')
    return tdErr(err, tpudistInvalidArgument, "expected flat or flat(N) with N >= 1");
  TD_CHECK(parseOptions(s, p, &ps, err));
  if (ps.haveWrap || ps.twist || (ps.haveHosts && ps.nhosts != 1))
    return tdErr(err, tpudistInvalidArgument,
                 "a flat topology takes only hosts=K (ranks per host), numa=M (ranks per NUMA "
                 "node) and slices=S");
  int ns = ps.slices ? ps.slices : 1;
  if (n < 0) n = nranks > 0 && nranks % ns == 0 ? nranks / ns : 0;
  if (nranks > 0 && (long long)n * ns != nranks)
    return tdErr(err, tpudistInvalidArgument,
                 "flat(%d)%s has %lld ranks but the communicator has %d ranks", n,
                 ns > 1 ? " x slices" : "", (long long)n * ns, nranks);
  topoInitFlat(out, n);
  TD_CHECK(topoSetSlices(out, ns, err));
  if (ps.haveHosts) TD_CHECK(topoSetFlatHosts(out, ps.hosts[0], err));
  if (ps.numa) TD_CHECK(topoSetFlatNuma(out, ps.numa, err));
  return tpudistSuccess;
}

static tpudistResult_t parseTrimmed(const char *s, int nranks, tdTopo *out, char *err) {
  if (*s == '\0') return tdErr(err, tpudistInvalidArgument, "empty topology");
  if (strncmp(s, "flat", 4) == 0) return parseFlat(s, nranks, out, err);
  parsedSpec ps;
  TD_CHECK(parseSpec(s, &ps, err));
  TD_CHECK(topoInit(out, ps.ndims, ps.dims, ps.haveWrap ? ps.wrap : NULL, ps.twist, err));
  if (ps.haveHosts) TD_CHECK(topoSetHostBounds(out, ps.hosts, err));
  if (ps.slices) TD_CHECK(topoSetSlices(out, ps.slices, err));
  if (nranks > 0 && out->nranks != nranks) {
    char shape[64];
    topoFormat(out, shape, sizeof(shape));
    return tdErr(err, tpudistInvalidArgument, "%s has %d ranks but the communicator has %d ranks",
                 shape, out->nranks, nranks);
  }
  return tpudistSuccess;
}

tpudistResult_t topoParse(const char *spec, int nranks, tdTopo *out, char *err) {
  if (!spec || !out) return tdErr(err, tpudistInvalidArgument, "NULL topology string or output");
  char buf[128], prefix[160];
  while (isspace((unsigned char)*spec)) spec++;
  size_t len = strlen(spec);
  while (len > 0 && isspace((unsigned char)spec[len - 1])) len--;
  if (len >= sizeof(buf))
    return tdErr(err, tpudistInvalidArgument, "topology '%.32s...': longer than %d characters",
                 spec, (int)sizeof(buf) - 1);
  memcpy(buf, spec, len);
  buf[len] = '\0';
  tdTopo t;
  tpudistResult_t res = parseTrimmed(buf, nranks, &t, err);
  if (res != tpudistSuccess) {
    snprintf(prefix, sizeof(prefix), "topology '%s'", buf);
    topoErrPrefix(err, prefix);
    return res;
  }
  *out = t;
  return tpudistSuccess;
}
