/*
 * validate_int.h - internals of the schedule validator (validate.c: structure, matching and the
 * final check; validate_exec.c: lock-step execution, deadlock and race detection;
 * validate_vals.c: symbolic values, i.e. runs of elements and interned rank sets).
 */
#ifndef TD_VALIDATE_INT_H_
#define TD_VALIDATE_INT_H_

#include "step_sem.h"
#include "validate.h"

/* A symbolic value of a run of elements [b, e): element x holds the sum of the contributions of
 * the ranks in set `set` to logical element idx + (x - b). Reserved sets: */
#define VSET_UNDEF 0u         /* uninitialised (scratch) */
#define VSET_ORIG 0x80000000u /* | rank: the caller's prior contents; idx = its own position */

typedef struct {
  uint64_t b, e, idx;
  uint32_t set;
} vRun;

typedef struct {
  vRun *r;
  uint32_t n;
  size_t cap;
} vRuns;

/* Values are reduction trees (ids), each with an interned rank set: bits of set id at
 * bits[id * words]. */
typedef struct {
  int nranks;
  uint32_t words;
  uint64_t *bits;
  uint32_t nsets, cap;
  uint32_t *table; /* open addressing, 0 = empty */
  uint32_t tcap;
  /* reduction trees: node id -> children and bitset id (ids 1..; 0 = VSET_UNDEF) */
  uint32_t *nleft, *nright, *nbits;
  uint32_t nnodes, ncap;
  uint32_t *ntable;
  uint32_t ntcap;
} vSets;

enum { VREG_IN = 0, VREG_OUT = 1, VREG_SCR = 2, VNREG = 3 };

typedef struct {
  uint64_t size, wlo, whi; /* writable elements [wlo, whi) */
  vRuns runs;              /* sorted, disjoint, covering [0, size) */
} vRegion;

typedef struct {
  uint8_t reg;
  uint64_t base, limit; /* buffer element x lives at region element base + x, x < limit */
} vView;

typedef struct {
  const tdStep *st;
  int rank;
  uint16_t stream;
  uint32_t idx;
  uint8_t issued, done;
  tdSpans sp;      /* region ranges of the refs the op uses (schedRefSpan: space = region) */
  int64_t in, out; /* the message it receives / sends (index), -1 if none */
} vStep;

/* The span of operand o (TD_OPND_SRC or TD_OPND_DST, one the step uses) of a bound step. */
static inline const tdSpan *vSpan(const vStep *v, unsigned o) {
  return &v->sp.s[o == TD_OPND_SRC ? v->sp.src : v->sp.dst];
}

typedef struct {
  uint32_t next; /* first unissued step */
  uint64_t *fl;  /* in-flight steps (gids) */
  uint32_t nfl;
  size_t cap;
} vStreamState;

typedef struct {
  int nranks;
  uint64_t count;
  tdColl coll;
  int root, inplace;
  tdSched *const *s;
  uint64_t *vc, *vsd, *vrd; /* alltoallv matrices (owned copies) */
  vStep *steps;
  uint64_t nsteps;
  uint64_t *first; /* first[r * TD_MAX_STREAMS + stream] = gid of its step 0 */
  vStreamState *ss;
  vRegion *reg; /* nranks * VNREG */
  vView *view;  /* nranks * TD_NUM_BUFS */
  vSets sets;
  uint64_t *msg_snd, *msg_rcv; /* sending / receiving step of each message */
  uint8_t *msg_done;
  uint64_t nmsgs;
  uint64_t rounds;
  uint64_t rng; /* 0: complete everything ready each round; else xorshift state for delays */
  char *err, *report;
  size_t report_len;
} vCtx;

/* ---- validate_vals.c ---- */
tpudistResult_t validateSetsInit(vSets *s, int nranks);
void validateSetsFree(vSets *s);
/* The value rank r's input (a leaf), or for r = -1 the expectation "all ranks, any order";
 * 0 on allocation failure. */
uint32_t validateSetSingle(vSets *s, int r);
/* The value a (+) b; *dup = a rank in both (or -1). 0 on allocation failure. */
uint32_t validateSetUnion(vSets *s, uint32_t a, uint32_t b, int *dup);
/* The rank-set id of a value (reserved ids map to themselves): equal sets, equal ids. */
uint32_t validateSetBits(const vSets *s, uint32_t id);
/* The reduction order of a value, e.g. "((0+1)+2)". */
void validateTreeDescribe(const vSets *s, uint32_t id, char *buf, size_t len);
/* Writes a short description of a set ("{0,2}", "all 8 ranks", "uninitialised data"). */
void validateSetDescribe(const vSets *s, uint32_t id, char *buf, size_t len);
/* First rank in a but not in b, or -1. */
int validateSetMissing(const vSets *s, uint32_t a, uint32_t b);

void validateRunsFree(vRuns *r);
/* Values of region elements [b, e) as runs relative to b. */
tpudistResult_t validateRead(const vRegion *g, uint64_t b, uint64_t e, vRuns *out);
/* Stores runs (relative) into region elements [b, b + len). */
tpudistResult_t validateWrite(vRegion *g, uint64_t b, const vRuns *in);
/* out = a (+) b elementwise (both relative, same length). On a semantic error writes what went
 * wrong (with "element" positions relative to the start) into why and returns InternalError. */
tpudistResult_t validateCombine(vSets *s, const vRuns *a, const vRuns *b, vRuns *out, char *why,
                                size_t whylen, uint64_t *at);
tpudistResult_t validateRunsPush(vRuns *r, uint64_t b, uint64_t e, uint64_t idx, uint32_t set);

/* Copies msg into c->err (TD_ERRLEN, truncated) and c->report. */
void validateEmit(vCtx *c, const char *msg);

/* ---- validate_exec.c ---- */
/* Runs all ranks in lock step, applying data; reports deadlock / races / data errors. */
tpudistResult_t validateExecute(vCtx *c);
/* "rank R stream S step I (op to/from P)" for a step. */
void validateStepName(const vCtx *c, const vStep *v, char *buf, size_t len);

#endif /* TD_VALIDATE_INT_H_ */
