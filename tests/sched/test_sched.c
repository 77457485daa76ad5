/*
 * test_sched.c - every algorithm of tdAlgoTable over a matrix of shapes, through the validator
 * (collectives/validate/validate.h) and the text format (collectives/ir/sched_io.h):
 *   nranks 1..17, 24, 32, 64, 128 flat, the tori 2x2, 3x3, 4x4, 2x2x2, 4x2x2 themselves and flat
 *   shapes with hosts, slices or NUMA nodes (the levels of the hierarchical generators)
 *   (topology-aware generators refuse flat shapes; TD_FULL=1 adds 4x4x4, 4x4x8) x counts {0, 1,
 * n-1, 3n+1, 1031} x in place / out of place (where the collective has an in-place form) x roots
 * {0, n-1, n/2} (broadcast, reduce; sendrecv shifts) x count matrices (all-to-all-v: uniform, all
 * zero, one hot receiver with zeros, sparse, skewed with gapped displacements). For each shape
 * every rank's schedule is generated, the set validated, each schedule dumped, loaded and dumped
 * again (byte-identical), fused with schedFuse when it is linked and validated again (and in two
 * randomised completion orders up to 32 ranks, for races that the lock-step order hides). A
 * schedule must serve every count of its shape (it is cached per shape): when the sets generated
 * for two counts differ, each is also validated at the other counts. A generator may refuse a shape
 * (tpudistNotSupported); the coverage report at the end lists, per collective and rank count, the
 * algorithms that accepted it, and the test fails if some shape has no accepting generator.
 * All-to-all-v also runs in the local form (each rank sees its own row and column only): the
 * generators flagged TD_ALGO_V_LOCAL must keep every message (empty ones too), stay valid and give
 * the same steps for every matrix, the others must refuse, and a column that disagrees with the
 * sender's row must show up as a size mismatch.
 * TD_FULL=1 adds rank counts 48, 96, 255, 256, the tori 4x4x4, 4x4x8, and counts
 * {2, n, n+1, 7n-1} up to 64 ranks; TD_SCHED_MAX_RANKS=N keeps the flat rank counts up to N (the
 * tori stay).
 */
#include <stdlib.h>
#include <string.h>

#include "../cu_main.h"
#include "../xorshift.h"
#include "algos.h"
#include "sched_io.h"
#include "step_sem.h"
#include "validate.h"

#define MAXALGO 16
#define MAXCOUNTS 12
#define MAXRANKCASES 48

static int g_full;
static int g_failures;
static int g_uncovered;
static int g_fused_runs;
static int g_validated, g_cross;

/* Coverage: per collective and rank-count case, a bitmask of algorithms that accepted a shape. */
static unsigned g_accepted[TD_NUM_COLLS][MAXRANKCASES];
static int g_ranks[MAXRANKCASES], g_nranks_cases;
static tdTopo g_topo[MAXRANKCASES];      /* flat, or the torus named in g_spec */
static const char *g_spec[MAXRANKCASES]; /* NULL = flat */

static void failf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void failf(const char *fmt, ...) {
  if (g_failures++ < 40) {
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
  }
}

typedef struct {
  tdCollArgs a;            /* nranks, root, inplace, count, v-counts */
  const uint64_t *sd, *rd; /* all-to-all-v displacement matrices */
  /* all-to-all-v local form: rank r's generator gets row r of lsend and column r of lrecv
   * (n x n, row = sender), not a.v_counts; lrecv may disagree with lsend */
  const uint64_t *lsend, *lrecv;
} Shape;

static void shapeName(const Shape *sh, const char *algo, char *buf, size_t len) {
  char topo[48] = "flat";
  if (sh->a.topo && sh->a.topo->ndims) topoFormat(sh->a.topo, topo, sizeof(topo));
  snprintf(buf, len, "%s/%s n=%d (%s) count=%llu inplace=%d root=%d", schedCollName(sh->a.coll),
           algo, sh->a.nranks, topo, (unsigned long long)sh->a.count, sh->a.inplace, sh->a.root);
}

/* One schedule set: every rank's schedule. */
typedef struct {
  tdSched *s;
  tdSched **p;
  int n;
  char *text; /* all ranks' dumps with the count field zeroed (for count independence) */
} Set;

static void setFree(Set *x) {
  for (int r = 0; r < x->n; r++) schedFree(&x->s[r]);
  free(x->s);
  free(x->p);
  free(x->text);
  memset(x, 0, sizeof(*x));
}

/* Generates all ranks; returns the first refusal / error (err says why). */
static tpudistResult_t generate(const Shape *sh, const char *algo, Set *x, char *err) {
  int N = sh->a.nranks;
  x->s = calloc((size_t)N, sizeof(tdSched));
  x->p = calloc((size_t)N, sizeof(tdSched *));
  x->n = 0;
  if (!x->s || !x->p) return tpudistNoMemory;
  uint64_t *col = sh->lsend ? malloc(sizeof(uint64_t) * (size_t)N) : NULL;
  if (sh->lsend && !col) return tpudistNoMemory;
  for (int r = 0; r < N; r++) {
    tdCollArgs a = sh->a;
    a.rank = r;
    if (sh->sd) a.v_sdispls = sh->sd + (size_t)r * N, a.v_rdispls = sh->rd + (size_t)r * N;
    if (col) { /* local form: this rank's row and column only */
      for (int j = 0; j < N; j++) col[j] = sh->lrecv[(size_t)j * N + r];
      a.v_counts = NULL, a.v_local = 1;
      a.v_sendcounts = sh->lsend + (size_t)r * N, a.v_recvcounts = col;
    }
    tpudistResult_t res = algoGenerate(&a, algo, &x->s[r], err);
    if (res != tpudistSuccess) free(col);
    if (res != tpudistSuccess) return res;
    x->p[r] = &x->s[r];
    x->n++;
  }
  free(col);
  return tpudistSuccess;
}

static tpudistResult_t validateSet(const Shape *sh, Set *x, uint64_t count, char *err) {
  tdValidateOpts o;
  memset(&o, 0, sizeof(o));
  o.v_counts = sh->lsend ? sh->lsend : sh->a.v_counts, o.v_sdispls = sh->sd, o.v_rdispls = sh->rd;
  /* two more executions in random completion orders hunt for timing-dependent races */
  o.random_runs = x->n <= 32 ? 2 : 0;
  o.seed = (uint64_t)g_validated * 0x9e3779b97f4a7c15ull + count;
  g_validated++;
  return validateSchedulesOpts(x->p, x->n, count, &o, err);
}

/* dump -> load -> dump of every rank; also builds x->text. */
static int ioRoundTrip(Set *x, const char *what) {
  size_t cap = 0, len = 0;
  int ok = 1;
  for (int r = 0; r < x->n && ok; r++) {
    char *a = NULL, *b = NULL, err[TD_ERRLEN] = "";
    size_t na = 0;
    tdSched l;
    int eof = 1;
    ok = schedDumpString(&x->s[r], &a, &na, err) == tpudistSuccess;
    tdSchedReader rd;
    if (ok) schedReaderInit(&rd, a, na);
    ok = ok && schedLoad(&rd, &l, &eof, err) == tpudistSuccess && !eof;
    if (ok) {
      ok = schedDumpString(&l, &b, NULL, err) == tpudistSuccess && strcmp(a, b) == 0;
      schedFree(&l);
    }
    if (!ok) failf("FAIL %s rank %d: dump/load/dump differs or fails: %s", what, r, err);
    /* the text without the count field, for count independence */
    const char *cnt = a ? strstr(a, " count ") : NULL, *eol = cnt ? strchr(cnt, '\n') : NULL;
    size_t head = eol ? (size_t)(cnt - a) : 0, tail = eol ? na - (size_t)(eol - a) : 0;
    if (eol && len + head + tail + 1 > cap) {
      cap = (len + head + tail + 1) * 2;
      char *t = realloc(x->text, cap);
      CU_ASSERT_PTR_NOT_NULL_FATAL(t);
      x->text = t;
    }
    if (eol) {
      memcpy(x->text + len, a, head);
      memcpy(x->text + len + head, eol, tail + 1);
      len += head + tail;
    }
    free(b);
    free(a);
  }
  return ok;
}

static void checkFused(const Shape *sh, Set *x, const char *what) {
  for (int r = 0; r < x->n; r++) schedFuse(&x->s[r]);
  char err[TD_ERRLEN] = "";
  g_fused_runs++;
  if (validateSet(sh, x, sh->a.count, err) != tpudistSuccess)
    failf("FAIL %s (fused): %s", what, err);
  char *t = x->text;
  x->text = NULL;
  ioRoundTrip(x, what);
  free(x->text);
  x->text = t;
}

/* Generates and checks one shape with one algorithm: 1 accepted, 0 refused. With text, hands
 * back the count-free text of the set (for count independence). */
static int runShape(const Shape *sh, const char *algo, char **text, char *why) {
  char name[160], err[TD_ERRLEN] = "";
  shapeName(sh, algo, name, sizeof(name));
  Set x;
  memset(&x, 0, sizeof(x));
  tpudistResult_t res = generate(sh, algo, &x, err);
  if (res == tpudistNotSupported) {
    snprintf(why, TD_ERRLEN, "%s", err);
    setFree(&x);
    return 0;
  }
  if (res != tpudistSuccess) {
    failf("FAIL %s: generator error %d: %s", name, res, err);
    setFree(&x);
    return 1;
  }
  if (validateSet(sh, &x, sh->a.count, err) != tpudistSuccess) failf("FAIL %s: %s", name, err);
  ioRoundTrip(&x, name);
  if (text) {
    *text = x.text;
    x.text = NULL;
  }
  checkFused(sh, &x, name);
  setFree(&x);
  return 1;
}

/* Schedules are cached per shape, not per count: when the sets generated for two counts differ,
 * the set of one count must also be correct at the other. */
static void crossCounts(const Shape *base, const char *algo, char *const *texts,
                        const uint64_t *counts, int nc) {
  for (int i = 0; i < nc; i++)
    for (int j = 0; j < nc; j++) {
      if (i == j || !texts[i] || !texts[j] || strcmp(texts[i], texts[j]) == 0) continue;
      Shape sh = *base;
      sh.a.count = counts[i];
      Set x;
      char err[TD_ERRLEN] = "";
      memset(&x, 0, sizeof(x));
      g_cross++;
      if (generate(&sh, algo, &x, err) == tpudistSuccess &&
          validateSet(&sh, &x, counts[j], err) != tpudistSuccess)
        failf(
            "FAIL %s/%s n=%d inplace=%d root=%d: generated for count %llu, wrong at count "
            "%llu (schedules are cached per shape): %s",
            schedCollName(sh.a.coll), algo, sh.a.nranks, sh.a.inplace, sh.a.root,
            (unsigned long long)counts[i], (unsigned long long)counts[j], err);
      setFree(&x);
    }
}

static int countsFor(int n, uint64_t *c) {
  uint64_t base[] = {0, 1, (uint64_t)n - 1, 3 * (uint64_t)n + 1, 1031};
  uint64_t more[] = {2, (uint64_t)n, (uint64_t)n + 1, 7 * (uint64_t)n - 1};
  int k = 0;
  for (int i = 0; i < 5 + (g_full && n <= 64 ? 4 : 0); i++) {
    uint64_t v = i < 5 ? base[i] : more[i - 5];
    int dup = 0;
    for (int j = 0; j < k; j++) dup |= c[j] == v;
    if (!dup) c[k++] = v;
  }
  return k;
}

static int rootsFor(tdColl c, int n, int *roots) {
  if (c != TD_COLL_BROADCAST && c != TD_COLL_REDUCE && c != TD_COLL_SENDRECV) {
    roots[0] = 0;
    return 1;
  }
  int cand[3] = {0, n - 1, n / 2}, k = 0;
  for (int i = 0; i < 3; i++) {
    int dup = 0;
    for (int j = 0; j < k; j++) dup |= roots[j] == cand[i];
    if (!dup) roots[k++] = cand[i];
  }
  return k;
}

static int hasInplace(tdColl c) {
  return c != TD_COLL_ALLTOALL && c != TD_COLL_ALLTOALLV;
}

typedef struct {
  const char *name[MAXALGO];
  int n;
} AlgoList;

static void algosOf(tdColl c, AlgoList *l) {
  l->n = 0;
  for (const tdAlgo *a = tdAlgoTable; a->name; a++)
    if (a->coll == c && l->n < MAXALGO) l->name[l->n++] = a->name;
}

/* Runs one shape over all algorithms; records coverage. */
static void runAllAlgos(const Shape *sh, const AlgoList *al, int rc, char **texts) {
  char why[MAXALGO][TD_ERRLEN];
  int any = 0;
  for (int i = 0; i < al->n; i++) {
    why[i][0] = 0;
    int r = runShape(sh, al->name[i], texts ? &texts[i] : NULL, why[i]);
    if (r > 0) {
      any = 1;
      g_accepted[sh->a.coll][rc] |= 1u << i;
    }
  }
  if (any) return;
  g_uncovered++;
  char name[160];
  shapeName(sh, "*", name, sizeof(name));
  failf("UNCOVERED %s: no generator accepts it", name);
  for (int i = 0; i < al->n && g_failures < 40; i++) printf("    %s: %s\n", al->name[i], why[i]);
}

/* All counts of one (coll, nranks, inplace, root), with count independence. */
static void runCounts(tdColl c, int N, int rc, int inplace, int root, const AlgoList *al) {
  uint64_t counts[MAXCOUNTS];
  int nc = countsFor(N, counts);
  char *texts[MAXALGO][MAXCOUNTS];
  memset(texts, 0, sizeof(texts));
  Shape sh;
  memset(&sh, 0, sizeof(sh));
  sh.a.coll = c, sh.a.nranks = N, sh.a.root = root, sh.a.inplace = inplace;
  sh.a.topo = &g_topo[rc], sh.a.elem_size = 4;
  for (int k = 0; k < nc; k++) {
    char *t[MAXALGO] = {NULL};
    sh.a.count = counts[k];
    runAllAlgos(&sh, al, rc, t);
    for (int i = 0; i < al->n; i++) texts[i][k] = t[i];
  }
  for (int i = 0; i < al->n; i++) {
    crossCounts(&sh, al->name[i], texts[i], counts, nc);
    for (int k = 0; k < nc; k++) free(texts[i][k]);
  }
}

/* Count matrices for all-to-all-v; displacements packed, or gapped for the last one. */
static int matrixFor(int N, int m, uint64_t *vc, uint64_t *sd, uint64_t *rd) {
  uint64_t x = 0x2545f4914f6cdd1dull + (uint64_t)N * 131 + (uint64_t)m;
  for (int s = 0; s < N; s++)
    for (int r = 0; r < N; r++) {
      uint64_t *v = &vc[(size_t)s * N + r];
      tdXorshift(&x);
      switch (m) {
        case 0:
          *v = 3;
          break; /* uniform */
        case 1:
          *v = 0;
          break; /* all zero */
        case 2:
          *v = r == N / 2 ? 200 + (uint64_t)s : (uint64_t)(s * 7 + r * 3) % 4;
          break;
        case 3:
          *v = (s + 2 * r) % 5 == 0 ? 17 : 0;
          break; /* sparse */
        default:
          *v = x % 9 == 0 ? 0 : x % 300;
          break; /* skewed */
      }
    }
  uint64_t gap = m == 4 ? 5 : 0;
  for (int a = 0; a < N; a++) {
    uint64_t ps = gap, pr = gap;
    for (int b = 0; b < N; b++) {
      sd[(size_t)a * N + b] = ps, ps += vc[(size_t)a * N + b] + gap;
      rd[(size_t)a * N + b] = pr, pr += vc[(size_t)b * N + a] + gap;
    }
  }
  return 5;
}

static void runColl(tdColl c) {
  AlgoList al;
  algosOf(c, &al);
  for (int rc = 0; rc < g_nranks_cases; rc++) {
    int N = g_ranks[rc];
    if (c == TD_COLL_ALLTOALLV) {
      size_t nn = (size_t)N * N;
      uint64_t *vc = malloc(nn * 8), *sd = malloc(nn * 8), *rd = malloc(nn * 8);
      for (int m = 0; m < 5; m++) {
        matrixFor(N, m, vc, sd, rd);
        Shape sh;
        memset(&sh, 0, sizeof(sh));
        sh.a.coll = c, sh.a.nranks = N, sh.a.topo = &g_topo[rc], sh.a.elem_size = 4;
        sh.a.v_counts = vc, sh.sd = sd, sh.rd = rd, sh.a.count = (uint64_t)m; /* names it */
        runAllAlgos(&sh, &al, rc, NULL);
      }
      free(vc), free(sd), free(rd);
      continue;
    }
    int roots[3], nr = rootsFor(c, N, roots);
    for (int ip = 0; ip < (hasInplace(c) ? 2 : 1); ip++)
      for (int k = 0; k < nr; k++) runCounts(c, N, rc, ip, roots[k], &al);
  }
}

#define COLL_TEST(fn, coll)              \
  static void fn(void) {                 \
    int before = g_failures;             \
    runColl(coll);                       \
    CU_ASSERT_EQUAL(g_failures, before); \
  }
COLL_TEST(testAllreduce, TD_COLL_ALLREDUCE)
COLL_TEST(testBroadcast, TD_COLL_BROADCAST)
COLL_TEST(testReduce, TD_COLL_REDUCE)
COLL_TEST(testAllgather, TD_COLL_ALLGATHER)
COLL_TEST(testReducescatter, TD_COLL_REDUCESCATTER)
COLL_TEST(testAlltoall, TD_COLL_ALLTOALL)
COLL_TEST(testAlltoallv, TD_COLL_ALLTOALLV)
COLL_TEST(testSendrecv, TD_COLL_SENDRECV)

/* ---- all-to-all-v local form (no counts exchange) ---- */

/* Messages rank r's schedule sends and receives (steps with a wire peer). */
static void wireSteps(const tdSched *s, int *sends, int *recvs) {
  *sends = *recvs = 0;
  for (uint32_t st = 0; st < s->nstreams; st++)
    for (uint32_t i = 0; i < s->streams[st].nsteps; i++) {
      *sends += schedSendPeer(&s->streams[st].steps[i]) >= 0;
      *recvs += schedRecvPeer(&s->streams[st].steps[i]) >= 0;
    }
}

/* One matrix in the local form with every algorithm: flagged generators (TD_ALGO_V_LOCAL) give a
 * valid set with a message for every ordered pair, empty ones included, and the same steps as for
 * a matrix of ones (the runtime generates the plan once and binds counts as layouts); the others
 * refuse. When rank 0 expects one element less (or more) from rank 1 than rank 1 sends, the
 * message still exists and the validator sees the size mismatch (the runtime's transport reports
 * it the same way). */
static void localMatrix(Shape *sh, const AlgoList *al, uint64_t *bad, const uint64_t *ones) {
  int N = sh->a.nranks;
  for (int i = 0; i < al->n; i++) {
    const tdAlgo *ta = algoFind(TD_COLL_ALLTOALLV, al->name[i]);
    char name[160], err[TD_ERRLEN] = "";
    Set x;
    memset(&x, 0, sizeof(x));
    sh->lrecv = sh->lsend;
    shapeName(sh, al->name[i], name, sizeof(name));
    tpudistResult_t res = generate(sh, al->name[i], &x, err);
    if (!(ta->flags & TD_ALGO_V_LOCAL)) {
      if (res != tpudistNotSupported) failf("FAIL %s local form: not refused (%d)", name, res);
      setFree(&x);
      continue;
    }
    if (res != tpudistSuccess) {
      failf("FAIL %s local form: %s", name, err);
      setFree(&x);
      continue;
    }
    if (validateSet(sh, &x, 0, err) != tpudistSuccess) failf("FAIL %s local form: %s", name, err);
    for (int r = 0; r < N; r++) {
      int ns, nr;
      wireSteps(&x.s[r], &ns, &nr);
      if (ns != N - 1 || nr != N - 1)
        failf("FAIL %s local form rank %d: %d sends, %d receives (want %d each)", name, r, ns, nr,
              N - 1);
    }
    Shape one = *sh;
    one.lsend = one.lrecv = ones;
    Set y;
    memset(&y, 0, sizeof(y));
    if (generate(&one, al->name[i], &y, err) != tpudistSuccess)
      failf("FAIL %s local form, all counts 1: %s", name, err);
    for (int r = 0; r < y.n; r++)
      if (!schedSameSteps(&x.s[r], &y.s[r], 0))
        failf("FAIL %s local form rank %d: steps differ from those for all counts 1", name, r);
    setFree(&y);
    ioRoundTrip(&x, name);
    checkFused(sh, &x, name);
    setFree(&x);
    if (N < 2) continue;
    /* rank 0's column disagrees on rank 1: one element less (the receive stays inside rank 0's
     * output: the validator reaches the matching, "size mismatch"), or one more where rank 1
     * sends nothing (the receive overruns rank 0's output: any rejection) */
    memcpy(bad, sh->lsend, sizeof(uint64_t) * (size_t)N * N);
    uint64_t *e = &bad[(size_t)1 * N + 0];
    int less = *e > 0;
    *e = less ? *e - 1 : 1;
    sh->lrecv = bad;
    err[0] = 0;
    if (generate(sh, al->name[i], &x, err) != tpudistSuccess ||
        validateSet(sh, &x, 0, err) == tpudistSuccess || (less && !strstr(err, "size mismatch")))
      failf("FAIL %s local form, rank 0 expecting %s from rank 1: %s", name, less ? "less" : "more",
            err[0] ? err : "accepted");
    setFree(&x);
    sh->lrecv = sh->lsend;
  }
}

static void testAlltoallvLocal(void) {
  int before = g_failures;
  AlgoList al;
  algosOf(TD_COLL_ALLTOALLV, &al);
  for (int rc = 0; rc < g_nranks_cases; rc++) {
    int N = g_ranks[rc];
    size_t nn = (size_t)N * N;
    uint64_t *vc = malloc(nn * 8), *sd = malloc(nn * 8), *rd = malloc(nn * 8),
             *bad = malloc(nn * 8), *ones = malloc(nn * 8);
    CU_ASSERT_FATAL(vc && sd && rd && bad && ones);
    for (size_t k = 0; k < nn; k++) ones[k] = 1;
    for (int m = 0; m < 5; m++) {
      matrixFor(N, m, vc, sd, rd);
      Shape sh;
      memset(&sh, 0, sizeof(sh));
      sh.a.coll = TD_COLL_ALLTOALLV, sh.a.nranks = N, sh.a.topo = &g_topo[rc];
      sh.a.elem_size = 4, sh.a.count = (uint64_t)m;
      sh.sd = sd, sh.rd = rd, sh.lsend = vc;
      localMatrix(&sh, &al, bad, ones);
    }
    free(vc), free(sd), free(rd), free(bad), free(ones);
  }
  CU_ASSERT_EQUAL(g_failures, before);
}

/* ---- mutants: the validator must reject broken variants of real schedules ---- */

enum { MUT_DROP_MSG, MUT_DROP_REDUCE, MUT_MOVE_DST, MUT_NKINDS };
static const char *const kMutName[MUT_NKINDS] = {"drop a message step", "receive without reducing",
                                                 "write another chunk"};

/* Applies mutation kind to the k-th eligible step of the set; 0 if there is none. */
static int mutate(Set *x, int kind, int k, uint64_t count) {
  for (int r = 0; r < x->n; r++) {
    tdSched *s = &x->s[r];
    for (uint32_t st = 0; st < s->nstreams; st++)
      for (uint32_t i = 0; i < s->streams[st].nsteps; i++) {
        tdStep *p = &s->streams[st].steps[i];
        uint64_t b = 0, e = 0;
        if (schedRefRange(s, p->dst, count, &b, &e) != tpudistSuccess) b = e = 0;
        int ok = 0;
        if (kind == MUT_DROP_MSG) ok = schedSendPeer(p) >= 0 || schedRecvPeer(p) >= 0;
        if (kind == MUT_DROP_REDUCE) ok = p->op == TD_STEP_RECV_REDUCE && e > b;
        if (kind == MUT_MOVE_DST) {
          const tdLayout *l = &s->layout[p->dst.buf];
          ok = (p->op == TD_STEP_RECV || p->op == TD_STEP_COPY) && e > b &&
               (uint64_t)l->nblocks * l->chunks_per_block > p->dst.nchunks;
        }
        if (!ok || k-- > 0) continue;
        if (kind == MUT_DROP_MSG) {
          memmove(p, p + 1, sizeof(tdStep) * (s->streams[st].nsteps - i - 1));
          s->streams[st].nsteps--;
          /* deps on later steps of this stream would now be off by one or out of range */
          for (uint32_t o = 0; o < s->nstreams; o++)
            for (uint32_t j = 0; j < s->streams[o].nsteps; j++)
              for (int d = 0; d < 2; d++)
                if (s->streams[o].steps[j].deps[d].stream == st &&
                    s->streams[o].steps[j].deps[d].step >= i)
                  s->streams[o].steps[j].deps[d].stream = TD_NO_DEP;
        }
        if (kind == MUT_DROP_REDUCE) p->op = TD_STEP_RECV;
        if (kind == MUT_MOVE_DST) {
          uint32_t total = s->layout[p->dst.buf].nblocks * s->layout[p->dst.buf].chunks_per_block;
          p->dst.chunk = (p->dst.chunk + 1) % total;
          if (p->dst.chunk + p->dst.nchunks > total) p->dst.chunk = 0;
        }
        return 1;
      }
  }
  return 0;
}

static void testMutants(void) {
  /* flat; the hierarchical generators on hosts of 2, 3 and 2 ranks instead */
  static const int ranks[] = {3, 5, 8}, hranks[] = {4, 6, 8}, per_host[] = {2, 3, 2};
  int tried[MUT_NKINDS] = {0}, killed[MUT_NKINDS] = {0};
  for (const tdAlgo *al = tdAlgoTable; al->name; al++) {
    if (!al->gen || al->coll == TD_COLL_ALLTOALLV) continue;
    int hier = strcmp(al->name, "hier") == 0;
    for (size_t ri = 0; ri < sizeof(ranks) / sizeof(ranks[0]); ri++) {
      int N = hier ? hranks[ri] : ranks[ri];
      tdTopo topo;
      topoInitFlat(&topo, N);
      if (hier) CU_ASSERT_EQUAL_FATAL(topoSetFlatHosts(&topo, per_host[ri], NULL), tpudistSuccess);
      Shape sh;
      memset(&sh, 0, sizeof(sh));
      sh.a.coll = al->coll, sh.a.nranks = N, sh.a.root = N / 2, sh.a.count = 3 * (uint64_t)N + 1;
      sh.a.topo = &topo;
      for (int kind = 0; kind < MUT_NKINDS; kind++)
        for (int k = 0; k < 40; k += 3) {
          Set x;
          char err[TD_ERRLEN] = "";
          memset(&x, 0, sizeof(x));
          if (generate(&sh, al->name, &x, err) == tpudistSuccess &&
              mutate(&x, kind, k, sh.a.count)) {
            tried[kind]++;
            if (validateSet(&sh, &x, sh.a.count, err) != tpudistSuccess) {
              killed[kind]++;
            } else {
              char name[160];
              shapeName(&sh, al->name, name, sizeof(name));
              failf("MUTANT SURVIVED %s: %s #%d", name, kMutName[kind], k);
            }
          }
          setFree(&x);
        }
    }
  }
  for (int kind = 0; kind < MUT_NKINDS; kind++) {
    printf("\n  mutants '%s': %d of %d rejected", kMutName[kind], killed[kind], tried[kind]);
    CU_ASSERT(tried[kind] > 0);
    CU_ASSERT_EQUAL(killed[kind], tried[kind]);
  }
}

static void testCoverage(void) {
  printf("\n\ncoverage: algorithms that accepted each (collective, nranks)\n");
  for (int c = 0; c < TD_NUM_COLLS; c++) {
    AlgoList al;
    algosOf((tdColl)c, &al);
    for (int rc = 0; rc < g_nranks_cases; rc++) {
      printf("  %-13s n=%-4d %-6s", schedCollName((tdColl)c), g_ranks[rc],
             g_spec[rc] ? g_spec[rc] : "");
      for (int i = 0; i < al.n; i++)
        if (g_accepted[c][rc] >> i & 1) printf(" %s", al.name[i]);
      if (!g_accepted[c][rc]) printf(" (none)");
      putchar('\n');
    }
  }
  printf(
      "schedule sets validated: %d (%d across counts, %d fused); uncovered shapes: %d; "
      "failures: %d\n",
      g_validated, g_cross, g_fused_runs, g_uncovered, g_failures);
  CU_ASSERT_EQUAL(g_uncovered, 0);
}

int main(void) {
  static const int ci[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11,
                           12, 13, 14, 15, 16, 17, 24, 32, 64, 128};
  static const int full[] = {48, 96, 255, 256};
  const char *e = getenv("TD_FULL");
  g_full = e && strcmp(e, "1") == 0;
  /* TD_SCHED_MAX_RANKS=N: flat rank counts up to N only (the sanitizer pass, tests/asan.sh) */
  const char *mx = getenv("TD_SCHED_MAX_RANKS");
  int max_ranks = mx && atoi(mx) > 0 ? atoi(mx) : 1 << 30;
  for (size_t i = 0; i < sizeof(ci) / sizeof(ci[0]); i++)
    if (ci[i] <= max_ranks) g_ranks[g_nranks_cases++] = ci[i];
  for (size_t i = 0; g_full && i < sizeof(full) / sizeof(full[0]); i++)
    g_ranks[g_nranks_cases++] = full[i];
  for (int i = 0; i < g_nranks_cases; i++) topoInitFlat(&g_topo[i], g_ranks[i]);
  /* the tori themselves, so that topology-aware generators run too */
  /* and the levels above one slice (slices, hosts) and inside a host (NUMA nodes), for the
   * hierarchical generators */
  static const char *const tori[] = {"2x2",
                                     "3x3",
                                     "4x4",
                                     "2x2x2",
                                     "2x2:slices=2",
                                     "3:hosts=1:slices=3",
                                     "flat(4):hosts=2",
                                     "flat(3):slices=2",
                                     "flat(6):slices=3",
                                     "flat(8):hosts=2",
                                     "flat(6):hosts=3",
                                     "flat(8):numa=2",
                                     "flat(16):numa=4",
                                     "flat(8):hosts=4:numa=2",
                                     "flat(2):slices=3",
                                     "flat(3):slices=4",
                                     "2x2:hosts=2,1:slices=3",
                                     "2x4:hosts=2,1",
                                     "4x2x2",
                                     "4x4x4",
                                     "4x4x8"};
  for (size_t i = 0; i < sizeof(tori) / sizeof(tori[0]) - (g_full ? 0 : 2); i++) {
    char err[TD_ERRLEN];
    if (topoParse(tori[i], 0, &g_topo[g_nranks_cases], err) != tpudistSuccess) {
      printf("topology %s: %s\n", tori[i], err);
      return 1;
    }
    g_spec[g_nranks_cases] = tori[i];
    g_ranks[g_nranks_cases] = g_topo[g_nranks_cases].nranks;
    g_nranks_cases++;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  CU_TestInfo tests[] = {
      {"allreduce", testAllreduce},
      {"broadcast", testBroadcast},
      {"reduce", testReduce},
      {"allgather", testAllgather},
      {"reducescatter", testReducescatter},
      {"alltoall", testAlltoall},
      {"alltoallv", testAlltoallv},
      {"alltoallv local form", testAlltoallvLocal},
      {"sendrecv", testSendrecv},
      {"mutants", testMutants},
      {"coverage", testCoverage},
      CU_TEST_INFO_NULL,
  };
  return tdCUnitMain("sched", tests);
}
