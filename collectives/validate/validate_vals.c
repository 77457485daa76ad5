/*
 * validate_vals.c - the validator's symbolic values: runs of elements holding consecutive logical
 * element indices of one reduction tree (hash-consed: leaves are ranks' inputs, a node combines
 * two trees, so equal ids mean the same order of reduction) whose set of contributing ranks is an
 * interned dynamic bitset (any nranks).
 * Cost: reads and writes are linear in the runs of a region, unions in nranks / 64 words.
 */
#include <stdlib.h>
#include <string.h>

#include "validate_int.h"

static uint64_t hashWords(const uint64_t *w, uint32_t n) {
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (uint32_t i = 0; i < n; i++) {
    h ^= w[i] + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
  }
  return h ^ (h >> 29);
}

tpudistResult_t validateSetsInit(vSets *s, int nranks) {
  memset(s, 0, sizeof(*s));
  s->nranks = nranks;
  s->words = (uint32_t)((nranks + 63) / 64);
  s->cap = 64;
  s->nsets = 2; /* id 0: undef; id 1: scratch word for unions */
  s->bits = calloc((size_t)s->cap * s->words, sizeof(uint64_t));
  s->tcap = 128;
  s->table = calloc(s->tcap, sizeof(uint32_t));
  if (!s->bits || !s->table) return tpudistNoMemory;
  return tpudistSuccess;
}

void validateSetsFree(vSets *s) {
  free(s->bits);
  free(s->table);
  free(s->nleft);
  free(s->nright);
  free(s->nbits);
  free(s->ntable);
  memset(s, 0, sizeof(*s));
}

static uint64_t *setBits(const vSets *s, uint32_t id) {
  return s->bits + (size_t)id * s->words;
}

static int tableInsert(uint32_t *t, uint32_t tcap, const vSets *s, uint32_t id) {
  uint64_t h = hashWords(setBits(s, id), s->words);
  for (uint32_t i = 0; i < tcap; i++) {
    uint32_t slot = (uint32_t)((h + i) & (tcap - 1));
    if (!t[slot]) {
      t[slot] = id;
      return 0;
    }
  }
  return -1;
}

static tpudistResult_t grow(vSets *s) {
  if (s->nsets == s->cap) {
    uint64_t *nb = realloc(s->bits, (size_t)s->cap * 2 * s->words * sizeof(uint64_t));
    if (!nb) return tpudistNoMemory;
    s->bits = nb;
    s->cap *= 2;
  }
  if ((uint64_t)s->nsets * 2 >= s->tcap) {
    uint32_t ncap = s->tcap * 2;
    uint32_t *nt = calloc(ncap, sizeof(uint32_t));
    if (!nt) return tpudistNoMemory;
    for (uint32_t i = 0; i < s->tcap; i++)
      if (s->table[i]) tableInsert(nt, ncap, s, s->table[i]);
    free(s->table);
    s->table = nt;
    s->tcap = ncap;
  }
  return tpudistSuccess;
}

/* Interns the bits in scratch id 1. */
static uint32_t intern(vSets *s) {
  if (grow(s) != tpudistSuccess) return 0;
  const uint64_t *w = setBits(s, 1);
  uint64_t h = hashWords(w, s->words);
  for (uint32_t i = 0; i < s->tcap; i++) {
    uint32_t slot = (uint32_t)((h + i) & (s->tcap - 1));
    uint32_t id = s->table[slot];
    if (!id) {
      id = s->nsets++;
      memcpy(setBits(s, id), w, s->words * sizeof(uint64_t));
      s->table[slot] = id;
      return id;
    }
    if (memcmp(setBits(s, id), w, s->words * sizeof(uint64_t)) == 0) return id;
  }
  return 0;
}

static uint32_t bitsSingle(vSets *s, int r) {
  uint64_t *w = setBits(s, 1);
  memset(w, 0, s->words * sizeof(uint64_t));
  if (r >= 0) {
    w[r / 64] |= 1ull << (r % 64);
  } else {
    for (int i = 0; i < s->nranks; i++) w[i / 64] |= 1ull << (i % 64);
  }
  return intern(s);
}

static uint32_t bitsUnion(vSets *s, uint32_t a, uint32_t b, int *dup) {
  *dup = -1;
  uint64_t *w = setBits(s, 1);
  const uint64_t *x = setBits(s, a), *y = setBits(s, b);
  for (uint32_t i = 0; i < s->words; i++) {
    if ((x[i] & y[i]) && *dup < 0) *dup = (int)(i * 64 + (uint32_t)__builtin_ctzll(x[i] & y[i]));
    w[i] = x[i] | y[i];
  }
  return intern(s);
}

static int bitsMissing(const vSets *s, uint32_t a, uint32_t b) {
  if (a == VSET_UNDEF || (a & VSET_ORIG)) return -1;
  const uint64_t *x = setBits(s, a);
  const uint64_t *y = (b == VSET_UNDEF || (b & VSET_ORIG)) ? NULL : setBits(s, b);
  for (uint32_t i = 0; i < s->words; i++) {
    uint64_t m = x[i] & ~(y ? y[i] : 0);
    if (m) return (int)(i * 64 + (uint32_t)__builtin_ctzll(m));
  }
  return -1;
}

static void bitsDescribe(const vSets *s, uint32_t id, char *buf, size_t len) {
  if (id == VSET_UNDEF) {
    snprintf(buf, len, "uninitialised data");
    return;
  }
  if (id & VSET_ORIG) {
    snprintf(buf, len, "rank %u's prior buffer contents", id & ~VSET_ORIG);
    return;
  }
  const uint64_t *w = setBits(s, id);
  int n = 0;
  for (uint32_t i = 0; i < s->words; i++) n += __builtin_popcountll(w[i]);
  if (n == s->nranks && n > 1) {
    snprintf(buf, len, "all %d ranks", n);
    return;
  }
  if (n > 6) {
    snprintf(buf, len, "%d of %d ranks", n, s->nranks);
    return;
  }
  size_t o = (size_t)snprintf(buf, len, "rank%s {", n == 1 ? "" : "s");
  for (int r = 0, k = 0; r < s->nranks && o < len; r++)
    if (w[r / 64] >> (r % 64) & 1)
      o += (size_t)snprintf(buf + o, len - o, "%s%d", k++ ? "," : "", r);
  if (o < len) snprintf(buf + o, len - o, "}");
}

/* ---- reduction trees ---- */

#define VNODE_LEAF 0xffffffffu /* left of a leaf: right = the rank */
#define VNODE_SET 0xfffffffeu  /* left of an expectation: any tree over the set right */

static uint64_t hashPair(uint32_t a, uint32_t b) {
  uint64_t h = ((uint64_t)a << 32 | b) * 0x9e3779b97f4a7c15ull;
  return h ^ (h >> 31);
}

static tpudistResult_t nodesGrow(vSets *s) {
  if (s->nnodes + 1 >= s->ncap) {
    uint32_t cap = s->ncap ? s->ncap * 2 : 256;
    if (cap >= VSET_ORIG) return tpudistNoMemory;
    uint32_t *l = realloc(s->nleft, cap * sizeof(uint32_t));
    if (l) s->nleft = l;
    uint32_t *r = realloc(s->nright, cap * sizeof(uint32_t));
    if (r) s->nright = r;
    uint32_t *b = realloc(s->nbits, cap * sizeof(uint32_t));
    if (b) s->nbits = b;
    if (!l || !r || !b) return tpudistNoMemory;
    s->ncap = cap;
    if (!s->nnodes) s->nnodes = 1; /* id 0 is VSET_UNDEF */
  }
  if ((uint64_t)s->nnodes * 2 >= s->ntcap) {
    uint32_t ncap = s->ntcap ? s->ntcap * 2 : 512;
    uint32_t *nt = calloc(ncap, sizeof(uint32_t));
    if (!nt) return tpudistNoMemory;
    for (uint32_t i = 0; i < s->ntcap; i++) {
      uint32_t id = s->ntable[i];
      if (!id) continue;
      uint64_t h = hashPair(s->nleft[id], s->nright[id]);
      while (nt[h & (ncap - 1)]) h++;
      nt[h & (ncap - 1)] = id;
    }
    free(s->ntable);
    s->ntable = nt;
    s->ntcap = ncap;
  }
  return tpudistSuccess;
}

/* The node (left, right) with bitset bits; 0 on allocation failure. */
static uint32_t nodeIntern(vSets *s, uint32_t left, uint32_t right, uint32_t bits) {
  if (!bits || nodesGrow(s) != tpudistSuccess) return 0;
  for (uint64_t h = hashPair(left, right);; h++) {
    uint32_t id = s->ntable[h & (s->ntcap - 1)];
    if (!id) {
      id = s->nnodes++;
      s->nleft[id] = left, s->nright[id] = right, s->nbits[id] = bits;
      s->ntable[h & (s->ntcap - 1)] = id;
      return id;
    }
    if (s->nleft[id] == left && s->nright[id] == right) return id;
  }
}

uint32_t validateSetBits(const vSets *s, uint32_t id) {
  return (id == VSET_UNDEF || (id & VSET_ORIG)) ? id : s->nbits[id];
}

uint32_t validateSetSingle(vSets *s, int r) {
  uint32_t b = bitsSingle(s, r);
  return r >= 0 ? nodeIntern(s, VNODE_LEAF, (uint32_t)r, b) : nodeIntern(s, VNODE_SET, b, b);
}

uint32_t validateSetUnion(vSets *s, uint32_t a, uint32_t b, int *dup) {
  uint32_t u = bitsUnion(s, s->nbits[a], s->nbits[b], dup);
  return nodeIntern(s, TD_MIN(a, b), TD_MAX(a, b), u); /* (+) commutes exactly */
}

int validateSetMissing(const vSets *s, uint32_t a, uint32_t b) {
  return bitsMissing(s, validateSetBits(s, a), validateSetBits(s, b));
}

void validateSetDescribe(const vSets *s, uint32_t id, char *buf, size_t len) {
  bitsDescribe(s, validateSetBits(s, id), buf, len);
}

static uint32_t firstRank(const vSets *s, uint32_t bits) {
  const uint64_t *w = setBits(s, bits);
  for (uint32_t i = 0; i < s->words; i++)
    if (w[i]) return i * 64 + (uint32_t)__builtin_ctzll(w[i]);
  return UINT32_MAX;
}

static size_t treeWrite(const vSets *s, uint32_t id, char *buf, size_t len, size_t o) {
  if (o + 1 >= len) return o;
  if (s->nleft[id] == VNODE_LEAF)
    return o + (size_t)snprintf(buf + o, len - o, "%u", s->nright[id]);
  if (s->nleft[id] == VNODE_SET) return o + (size_t)snprintf(buf + o, len - o, "*");
  /* (+) commutes: print the operand holding the lowest rank first */
  uint32_t x = s->nleft[id], y = s->nright[id];
  if (firstRank(s, s->nbits[y]) < firstRank(s, s->nbits[x])) x = s->nright[id], y = s->nleft[id];
  o += (size_t)snprintf(buf + o, len - o, "(");
  o = treeWrite(s, x, buf, len, o);
  if (o + 1 < len) o += (size_t)snprintf(buf + o, len - o, "+");
  o = treeWrite(s, y, buf, len, o);
  if (o + 1 < len) o += (size_t)snprintf(buf + o, len - o, ")");
  return o;
}

void validateTreeDescribe(const vSets *s, uint32_t id, char *buf, size_t len) {
  buf[0] = 0;
  if (id == VSET_UNDEF || (id & VSET_ORIG)) {
    validateSetDescribe(s, id, buf, len);
    return;
  }
  size_t o = treeWrite(s, id, buf, len, 0);
  if (o + 1 >= len && len > 4) memcpy(buf + len - 4, "...", 4);
}

void validateRunsFree(vRuns *r) {
  free(r->r);
  memset(r, 0, sizeof(*r));
}

tpudistResult_t validateRunsPush(vRuns *r, uint64_t b, uint64_t e, uint64_t idx, uint32_t set) {
  if (e <= b) return tpudistSuccess;
  if (r->n) {
    vRun *l = &r->r[r->n - 1];
    if (l->e == b && l->set == set && (set == VSET_UNDEF || l->idx + (l->e - l->b) == idx)) {
      l->e = e;
      return tpudistSuccess;
    }
  }
  if (tdGrow(&r->r, &r->cap, (size_t)r->n + 1, sizeof(vRun), 8)) return tpudistNoMemory;
  r->r[r->n++] = (vRun){b, e, idx, set};
  return tpudistSuccess;
}

/* Index of the first run with e > x. */
static uint32_t findRun(const vRuns *r, uint64_t x) {
  uint32_t lo = 0, hi = r->n;
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if (r->r[mid].e > x)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

static uint64_t runIdx(const vRun *r, uint64_t x) {
  return r->set == VSET_UNDEF ? 0 : r->idx + (x - r->b);
}

tpudistResult_t validateRead(const vRegion *g, uint64_t b, uint64_t e, vRuns *out) {
  out->n = 0;
  for (uint32_t i = findRun(&g->runs, b); i < g->runs.n && g->runs.r[i].b < e; i++) {
    const vRun *r = &g->runs.r[i];
    uint64_t cb = TD_MAX(r->b, b), ce = TD_MIN(r->e, e);
    TD_CHECK(validateRunsPush(out, cb - b, ce - b, runIdx(r, cb), r->set));
  }
  return tpudistSuccess;
}

/* Replaces runs [lo, hi) of r by the runs of t (memmove of the rest). */
static tpudistResult_t splice(vRuns *r, uint32_t lo, uint32_t hi, const vRuns *t) {
  uint64_t n = (uint64_t)r->n - (hi - lo) + t->n;
  if (n > r->cap) {
    uint64_t cap = TD_MAX(n, (uint64_t)r->cap * 2);
    if (cap > UINT32_MAX) return tpudistNoMemory;
    vRun *nr = realloc(r->r, sizeof(vRun) * cap);
    if (!nr) return tpudistNoMemory;
    r->r = nr;
    r->cap = (uint32_t)cap;
  }
  memmove(r->r + lo + t->n, r->r + hi, sizeof(vRun) * (r->n - hi));
  memcpy(r->r + lo, t->r, sizeof(vRun) * t->n);
  r->n = (uint32_t)n;
  return tpudistSuccess;
}

tpudistResult_t validateWrite(vRegion *g, uint64_t b, const vRuns *in) {
  if (!in->n) return tpudistSuccess;
  uint64_t e = b + in->r[in->n - 1].e;
  vRuns *R = &g->runs;
  /* runs [lo, hi) are rewritten: the neighbours too, so that equal values merge */
  uint32_t lo = findRun(R, b), hi = findRun(R, e);
  if (hi < R->n && R->r[hi].b < e) hi++; /* straddles the end */
  if (lo > 0) lo--;
  if (hi < R->n) hi++;
  vRuns t = {0};
  tpudistResult_t res = tpudistSuccess;
  for (uint32_t i = lo; i < hi && res == tpudistSuccess && R->r[i].b < b; i++)
    res = validateRunsPush(&t, R->r[i].b, TD_MIN(R->r[i].e, b), R->r[i].idx, R->r[i].set);
  for (uint32_t j = 0; j < in->n && res == tpudistSuccess; j++)
    res = validateRunsPush(&t, b + in->r[j].b, b + in->r[j].e, in->r[j].idx, in->r[j].set);
  for (uint32_t i = lo; i < hi && res == tpudistSuccess; i++) {
    const vRun *r = &R->r[i];
    if (r->e <= e) continue;
    uint64_t cb = TD_MAX(r->b, e);
    res = validateRunsPush(&t, cb, r->e, runIdx(r, cb), r->set);
  }
  if (res == tpudistSuccess) res = splice(R, lo, hi, &t);
  validateRunsFree(&t);
  return res;
}

static tpudistResult_t combineRun(vSets *s, const vRun *x, const vRun *y, uint64_t p, uint64_t q,
                                  vRuns *out, char *why, size_t whylen) {
  const vRun *bad = (x->set == VSET_UNDEF || (x->set & VSET_ORIG))   ? x
                    : (y->set == VSET_UNDEF || (y->set & VSET_ORIG)) ? y
                                                                     : NULL;
  if (bad) {
    char d[64];
    validateSetDescribe(s, bad->set, d, sizeof(d));
    snprintf(why, whylen, "reduces %s", d);
    return tpudistInternalError;
  }
  uint64_t ix = runIdx(x, p), iy = runIdx(y, p);
  if (ix != iy) {
    snprintf(why, whylen, "combines logical element %llu with element %llu", (unsigned long long)ix,
             (unsigned long long)iy);
    return tpudistInternalError;
  }
  int dup;
  uint32_t u = validateSetUnion(s, x->set, y->set, &dup);
  if (!u) return tpudistNoMemory;
  if (dup >= 0) {
    snprintf(why, whylen, "rank %d's contribution to element %llu is added twice", dup,
             (unsigned long long)ix);
    return tpudistInternalError;
  }
  return validateRunsPush(out, p, q, ix, u);
}

tpudistResult_t validateCombine(vSets *s, const vRuns *a, const vRuns *b, vRuns *out, char *why,
                                size_t whylen, uint64_t *at) {
  out->n = 0;
  uint32_t i = 0, j = 0;
  while (i < a->n && j < b->n) {
    const vRun *x = &a->r[i], *y = &b->r[j];
    uint64_t p = TD_MAX(x->b, y->b), q = TD_MIN(x->e, y->e);
    if (p < q) {
      tpudistResult_t r = combineRun(s, x, y, p, q, out, why, whylen);
      if (r != tpudistSuccess) {
        *at = p;
        return r;
      }
    }
    if (x->e <= y->e) i++;
    if (y->e <= x->e) j++;
  }
  return tpudistSuccess;
}
