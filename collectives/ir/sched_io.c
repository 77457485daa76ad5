/*
 * sched_io.c - the schedule text format v1 (docs/schedule-ir.md, "Text format"): dump, and a
 * strict loader that bounds every number, checks the grammar line by line and reports
 * "line N: ..." without ever crashing on malformed input. Cost: linear in the text.
 */
#include "sched_io.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "step_sem.h"

/* ---- which fields an op uses (from the semantics table) ---- */

static int usesPeer(unsigned op) {
  const tdStepSem *m = &tdStepSemTable[op];
  return m->send_to == TD_PEER_PEER || m->recv_from == TD_PEER_PEER;
}
static int usesPeer2(unsigned op) {
  const tdStepSem *m = &tdStepSemTable[op];
  return m->send_to == TD_PEER_PEER2 || m->recv_from == TD_PEER_PEER2;
}

/* ---- dump ---- */

static int nameOk(const char *s) {
  for (; *s; s++)
    if (*s <= ' ' || *s == '#' || *s == ':' || *s > '~') return 0;
  return 1;
}

/* Fast formatting into a line buffer (the dump is on the runtime's path when dumping). */
static char *putS(char *p, const char *s) {
  while (*s) *p++ = *s++;
  return p;
}

static char *putU(char *p, uint64_t v) {
  char t[24];
  int n = 0;
  do {
    t[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  while (n) *p++ = t[--n];
  return p;
}

static char *putI(char *p, int64_t v) {
  if (v < 0) {
    *p++ = '-';
    return putU(p, (uint64_t)(-(v + 1)) + 1);
  }
  return putU(p, (uint64_t)v);
}

static char *putRef(char *p, const char *what, tdBufRef r) {
  p = putS(p, what);
  p = putS(p, schedBufName((tdBufKind)r.buf));
  *p++ = ' ';
  p = putU(p, r.chunk);
  *p++ = ' ';
  return putU(p, r.nchunks);
}

static void dumpLayout(const tdSched *s, int b, FILE *f) {
  const tdLayout *l = &s->layout[b];
  char line[96], *p = line;
  p = putS(p, l->offsets ? "layout-explicit " : "layout ");
  p = putS(p, schedBufName((tdBufKind)b));
  *p++ = ' ';
  p = putU(p, l->nblocks);
  *p++ = ' ';
  p = putU(p, l->chunks_per_block);
  fwrite(line, 1, (size_t)(p - line), f);
  for (uint32_t i = 0; l->offsets && i < l->nblocks; i++) {
    p = line;
    *p++ = ' ';
    p = putU(p, l->offsets[i]);
    *p++ = ':';
    p = putU(p, l->counts[i]);
    fwrite(line, 1, (size_t)(p - line), f);
  }
  fputc('\n', f);
}

static void dumpStep(const tdStep *st, FILE *f) {
  char line[256], *p = putS(line, "step ");
  p = putS(p, tdStepSemTable[st->op].name);
  if (usesPeer(st->op)) p = putI(putS(p, " peer "), st->peer);
  if (usesPeer2(st->op)) p = putI(putS(p, " peer2 "), st->peer2);
  if (schedUsesSrc(st->op)) p = putRef(p, " src ", st->src);
  if (schedUsesDst(st->op)) p = putRef(p, " dst ", st->dst);
  for (int d = 0; d < 2; d++)
    if (st->deps[d].stream != TD_NO_DEP) {
      p = putU(putS(p, " dep "), st->deps[d].stream);
      *p++ = ':';
      p = putU(p, st->deps[d].step);
    }
  *p++ = '\n';
  fwrite(line, 1, (size_t)(p - line), f);
}

static tpudistResult_t dumpCheck(const tdSched *s, char *err) {
  if (!nameOk(s->algo))
    return tdErr(err, tpudistInvalidArgument, "dump: algo name '%s' is not a token", s->algo);
  if ((unsigned)s->coll >= TD_NUM_COLLS || s->nstreams > TD_MAX_STREAMS)
    return tdErr(err, tpudistInvalidArgument, "dump: collective %d / %u streams out of range",
                 s->coll, s->nstreams);
  for (uint32_t i = 0; i < s->nstreams; i++)
    for (uint32_t j = 0; j < s->streams[i].nsteps; j++) {
      const tdStep *st = &s->streams[i].steps[j];
      if (st->op >= TD_NUM_STEP_OPS || (schedUsesSrc(st->op) && st->src.buf >= TD_NUM_BUFS) ||
          (schedUsesDst(st->op) && st->dst.buf >= TD_NUM_BUFS))
        return tdErr(err, tpudistInvalidArgument, "dump: stream %u step %u: bad op or buffer", i,
                     j);
    }
  return tpudistSuccess;
}

tpudistResult_t schedDump(const tdSched *s, FILE *f, char *err) {
  TD_CHECK(dumpCheck(s, err));
  fprintf(f, "tpu_dist-schedule %u\n", s->version);
  fprintf(f, "coll %s algo %s nranks %d rank %d root %d inplace %d count %llu\n",
          schedCollName(s->coll), s->algo[0] ? s->algo : "-", s->nranks, s->rank, s->root,
          s->inplace, (unsigned long long)s->count);
  for (int b = 0; b < TD_NUM_BUFS; b++) dumpLayout(s, b, f);
  for (uint32_t i = 0; i < s->nstreams; i++) {
    fprintf(f, "stream %u %u\n", i, s->streams[i].nsteps);
    for (uint32_t j = 0; j < s->streams[i].nsteps; j++) dumpStep(&s->streams[i].steps[j], f);
  }
  fprintf(f, "end\n");
  if (ferror(f)) return tdErr(err, tpudistSystemError, "dump: write failed");
  return tpudistSuccess;
}

tpudistResult_t schedDumpString(const tdSched *s, char **out, size_t *len, char *err) {
  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  if (!f) return tdErr(err, tpudistNoMemory, "dump: open_memstream failed");
  tpudistResult_t r = schedDump(s, f, err);
  if (fclose(f) != 0 && r == tpudistSuccess) r = tdErr(err, tpudistNoMemory, "dump: out of memory");
  if (r != tpudistSuccess) {
    free(buf);
    return r;
  }
  *out = buf;
  if (len) *len = n;
  return tpudistSuccess;
}

/* ---- load: lines and tokens ---- */

typedef struct {
  tdSchedReader *rd;
  const char *cur, *end; /* the rest of the current line */
  char *err;
} ioLine;

typedef struct {
  const char *b;
  size_t n;
} ioTok;

static tpudistResult_t ioErr(ioLine *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static tpudistResult_t ioErr(ioLine *L, const char *fmt, ...) {
  char msg[TD_ERRLEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  return tdErr(L->err, tpudistInvalidArgument, "line %d: %s", L->rd->line, msg);
}

void schedReaderInit(tdSchedReader *rd, const char *text, size_t len) {
  rd->p = text;
  rd->end = text + len;
  rd->line = 0;
}

static int isSpace(char c) {
  return c == ' ' || c == '\t';
}

/* Next token of the line (a '#' starts a comment to the end of the line); 0 at its end. */
static int tok(ioLine *L, ioTok *t) {
  while (L->cur < L->end && isSpace(*L->cur)) L->cur++;
  if (L->cur == L->end || *L->cur == '#') return 0;
  t->b = L->cur;
  while (L->cur < L->end && !isSpace(*L->cur)) L->cur++;
  t->n = (size_t)(L->cur - t->b);
  return 1;
}

/* Next line holding a token; 0 at the end of the text. */
static int nextLine(ioLine *L) {
  tdSchedReader *rd = L->rd;
  while (rd->p < rd->end) {
    const char *b = rd->p, *e = memchr(b, '\n', (size_t)(rd->end - b));
    rd->p = e ? e + 1 : rd->end;
    if (!e) e = rd->end;
    if (e > b && e[-1] == '\r') e--;
    rd->line++;
    L->cur = b;
    L->end = e;
    ioTok t;
    const char *save = L->cur;
    if (tok(L, &t)) {
      L->cur = save;
      return 1;
    }
  }
  return 0;
}

static int tokIs(const ioTok *t, const char *w) {
  return t->n == strlen(w) && memcmp(t->b, w, t->n) == 0;
}

static void tokStr(const ioTok *t, char *buf, size_t len) {
  size_t n = t->n < len - 1 ? t->n : len - 1;
  memcpy(buf, t->b, n);
  buf[n] = 0;
}

static tpudistResult_t word(ioLine *L, const char *w) {
  ioTok t;
  if (!tok(L, &t)) return ioErr(L, "expected '%s' at the end of the line", w);
  if (!tokIs(&t, w)) {
    char got[32];
    tokStr(&t, got, sizeof(got));
    return ioErr(L, "expected '%s', found '%s'", w, got);
  }
  return tpudistSuccess;
}

static int parseU64(const char *b, size_t n, uint64_t max, uint64_t *v) {
  if (n == 0 || n > 20) return -1;
  uint64_t x = 0;
  for (size_t i = 0; i < n; i++) {
    if (b[i] < '0' || b[i] > '9') return -1;
    uint64_t d = (uint64_t)(b[i] - '0');
    if (x > (UINT64_MAX - d) / 10) return -1;
    x = x * 10 + d;
  }
  if (x > max) return -1;
  *v = x;
  return 0;
}

/* A number in [lo, hi] (lo >= -1: only -1 may be negative). */
static tpudistResult_t num(ioLine *L, const char *what, int64_t lo, uint64_t hi, int64_t *v) {
  ioTok t;
  if (!tok(L, &t)) return ioErr(L, "missing %s", what);
  uint64_t x;
  if (lo < 0 && tokIs(&t, "-1")) {
    *v = -1;
    return tpudistSuccess;
  }
  if (parseU64(t.b, t.n, hi, &x) != 0 || (int64_t)x < lo) {
    char got[32];
    tokStr(&t, got, sizeof(got));
    return ioErr(L, "%s '%s' is not a number in [%lld,%llu]", what, got, (long long)lo,
                 (unsigned long long)hi);
  }
  *v = (int64_t)x;
  return tpudistSuccess;
}

static tpudistResult_t lineEnd(ioLine *L) {
  ioTok t;
  if (!tok(L, &t)) return tpudistSuccess;
  char got[32];
  tokStr(&t, got, sizeof(got));
  return ioErr(L, "unexpected '%s' at the end of the line", got);
}

/* ---- load: the items ---- */

static tpudistResult_t bufName(ioLine *L, int *b) {
  ioTok t;
  char s[32];
  if (!tok(L, &t)) return ioErr(L, "missing buffer name");
  tokStr(&t, s, sizeof(s));
  for (int i = 0; i < TD_NUM_BUFS; i++)
    if (tokIs(&t, schedBufName((tdBufKind)i))) {
      *b = i;
      return tpudistSuccess;
    }
  return ioErr(L, "unknown buffer '%s' (input, output or scratch)", s);
}

static tpudistResult_t parseMeta(ioLine *L, tdSched *s) {
  ioTok t;
  int64_t v;
  TD_CHECK(word(L, "coll"));
  if (!tok(L, &t)) return ioErr(L, "missing collective");
  char name[32];
  tokStr(&t, name, sizeof(name));
  int c = t.n < sizeof(name) ? schedCollFromName(name) : -1;
  if (c < 0) return ioErr(L, "unknown collective '%s'", name);
  s->coll = (tdColl)c;
  TD_CHECK(word(L, "algo"));
  if (!tok(L, &t)) return ioErr(L, "missing algorithm name");
  if (t.n >= sizeof(s->algo))
    return ioErr(L, "algorithm name longer than %zu", sizeof(s->algo) - 1);
  tokStr(&t, s->algo, sizeof(s->algo));
  if (!nameOk(s->algo) || strlen(s->algo) != t.n)
    return ioErr(L, "algorithm name with a control character, '#' or ':'");
  if (strcmp(s->algo, "-") == 0) s->algo[0] = 0;
  TD_CHECK(word(L, "nranks"));
  TD_CHECK(num(L, "nranks", 1, TD_SCHED_IO_MAX_NRANKS, &v));
  s->nranks = (int)v;
  TD_CHECK(word(L, "rank"));
  TD_CHECK(num(L, "rank", 0, (uint64_t)s->nranks - 1, &v));
  s->rank = (int)v;
  TD_CHECK(word(L, "root"));
  TD_CHECK(num(L, "root", -1, (uint64_t)s->nranks - 1, &v));
  s->root = (int)v;
  TD_CHECK(word(L, "inplace"));
  TD_CHECK(num(L, "inplace", 0, 1, &v));
  s->inplace = (int)v;
  TD_CHECK(word(L, "count"));
  TD_CHECK(num(L, "count", 0, INT64_MAX, &v));
  s->count = (uint64_t)v;
  return lineEnd(L);
}

static tpudistResult_t parseExplicit(ioLine *L, tdSched *s, int b, uint32_t nb, uint32_t k) {
  if (nb > (size_t)(L->end - L->cur) / 4 + 1)
    return ioErr(L, "layout-explicit: %u blocks announced, the line is too short", nb);
  uint64_t *o = malloc(sizeof(uint64_t) * (nb ? nb : 1));
  uint64_t *c = malloc(sizeof(uint64_t) * (nb ? nb : 1));
  tpudistResult_t r = tpudistSuccess;
  if (!o || !c) r = tdErr(L->err, tpudistNoMemory, "line %d: out of memory", L->rd->line);
  for (uint32_t i = 0; i < nb && r == tpudistSuccess; i++) {
    ioTok t;
    const char *colon;
    if (!tok(L, &t)) {
      r = ioErr(L, "layout-explicit: %u of %u offset:count pairs", i, nb);
    } else if (!(colon = memchr(t.b, ':', t.n)) ||
               parseU64(t.b, (size_t)(colon - t.b), 1ull << 62, &o[i]) ||
               parseU64(colon + 1, t.n - (size_t)(colon - t.b) - 1, 1ull << 62, &c[i])) {
      r = ioErr(L, "layout-explicit: block %u is not offset:count (numbers up to 2^62)", i);
    }
  }
  if (r == tpudistSuccess) r = lineEnd(L);
  if (r == tpudistSuccess) r = schedSetLayoutExplicit(s, (tdBufKind)b, nb, k, o, c);
  free(o);
  free(c);
  return r;
}

static tpudistResult_t parseLayout(ioLine *L, tdSched *s, int want) {
  ioTok t;
  int b;
  int64_t nb, k;
  if (!tok(L, &t) || !(tokIs(&t, "layout") || tokIs(&t, "layout-explicit")))
    return ioErr(L, "expected the layout of %s", schedBufName((tdBufKind)want));
  int expl = tokIs(&t, "layout-explicit");
  TD_CHECK(bufName(L, &b));
  if (b != want)
    return ioErr(L, "layout of %s where that of %s belongs (order: input, output, scratch)",
                 schedBufName((tdBufKind)b), schedBufName((tdBufKind)want));
  TD_CHECK(num(L, "nblocks", 0, TD_SCHED_IO_MAX_CHUNKS, &nb));
  TD_CHECK(num(L, "chunks_per_block", nb ? 1 : 0, TD_SCHED_IO_MAX_CHUNKS, &k));
  if ((uint64_t)nb * (uint64_t)k > TD_SCHED_IO_MAX_CHUNKS)
    return ioErr(L, "%lld x %lld chunks, at most %u", (long long)nb, (long long)k,
                 TD_SCHED_IO_MAX_CHUNKS);
  if (expl) return parseExplicit(L, s, b, (uint32_t)nb, (uint32_t)k);
  schedSetLayout(s, (tdBufKind)b, (uint32_t)nb, (uint32_t)k);
  return lineEnd(L);
}

static tpudistResult_t parseRef(ioLine *L, const tdSched *s, const char *what, tdBufRef *ref) {
  int b;
  int64_t c, n;
  TD_CHECK(bufName(L, &b));
  const tdLayout *l = &s->layout[b];
  uint64_t total = (uint64_t)l->nblocks * l->chunks_per_block;
  TD_CHECK(num(L, "chunk", 0, UINT32_MAX, &c));
  TD_CHECK(num(L, "nchunks", 1, UINT32_MAX, &n));
  if ((uint64_t)c + (uint64_t)n > total)
    return ioErr(L, "%s %s chunks [%lld,+%lld) beyond its %llu chunks", what,
                 schedBufName((tdBufKind)b), (long long)c, (long long)n, (unsigned long long)total);
  *ref = schedRef((tdBufKind)b, (uint32_t)c, (uint32_t)n);
  return tpudistSuccess;
}

static tpudistResult_t parseOp(ioLine *L, unsigned *op) {
  ioTok t;
  char name[32];
  if (!tok(L, &t)) return ioErr(L, "missing step op");
  tokStr(&t, name, sizeof(name));
  for (unsigned i = 0; i < TD_NUM_STEP_OPS; i++)
    if (tokIs(&t, tdStepSemTable[i].name)) {
      *op = i;
      return tpudistSuccess;
    }
  return ioErr(L, "unknown step op '%s'", name);
}

static tpudistResult_t parseDep(ioLine *L, uint32_t stream, tdDep *d) {
  ioTok t;
  uint64_t a, b;
  const char *colon;
  if (!tok(L, &t) || !(colon = memchr(t.b, ':', t.n)) ||
      parseU64(t.b, (size_t)(colon - t.b), TD_MAX_STREAMS - 1, &a) ||
      parseU64(colon + 1, t.n - (size_t)(colon - t.b) - 1, UINT32_MAX, &b))
    return ioErr(L, "dep is not STREAM:STEP (stream < %d)", TD_MAX_STREAMS);
  if (a == stream) return ioErr(L, "dep on its own stream %u", stream);
  d->stream = (uint16_t)a;
  d->step = (uint32_t)b;
  return tpudistSuccess;
}

/* Fields after the op, in the order peer, peer2, src, dst, dep, dep; exactly those it uses. */
static tpudistResult_t parseFields(ioLine *L, const tdSched *s, uint32_t stream, tdStep *st) {
  static const char *const order[] = {"peer", "peer2", "src", "dst", "dep", "dep"};
  const int need[4] = {usesPeer(st->op), usesPeer2(st->op), schedUsesSrc(st->op),
                       schedUsesDst(st->op)};
  int have[4] = {0, 0, 0, 0}, f = 0, ndep = 0;
  ioTok t;
  while (tok(L, &t)) {
    while (f < 6 && !tokIs(&t, order[f])) f++;
    if (f == 6) {
      char got[32];
      tokStr(&t, got, sizeof(got));
      return ioErr(L, "unexpected '%s' (fields: peer, peer2, src, dst, dep, in that order)", got);
    }
    if (f < 4 && !need[f]) return ioErr(L, "%s takes no %s", tdStepSemTable[st->op].name, order[f]);
    int64_t p = 0;
    if (f <= 1) TD_CHECK(num(L, order[f], 0, (uint64_t)s->nranks - 1, &p));
    if (f == 0) st->peer = (int32_t)p;
    if (f == 1) st->peer2 = (int32_t)p;
    if (f == 2) TD_CHECK(parseRef(L, s, "src", &st->src));
    if (f == 3) TD_CHECK(parseRef(L, s, "dst", &st->dst));
    if (f >= 4) TD_CHECK(parseDep(L, stream, &st->deps[ndep++]));
    if (f < 4) have[f] = 1;
    f++;
  }
  for (int i = 0; i < 4; i++)
    if (need[i] && !have[i]) return ioErr(L, "%s needs %s", tdStepSemTable[st->op].name, order[i]);
  return tpudistSuccess;
}

static tpudistResult_t parseStep(ioLine *L, tdSched *s, uint32_t stream) {
  TD_CHECK(word(L, "step"));
  unsigned op = 0;
  TD_CHECK(parseOp(L, &op));
  tdStep st;
  memset(&st, 0, sizeof(st));
  st.op = (uint8_t)op;
  st.peer = st.peer2 = -1;
  st.deps[0].stream = st.deps[1].stream = TD_NO_DEP;
  TD_CHECK(parseFields(L, s, stream, &st));
  tpudistResult_t r = schedAppend(s, stream, &st, NULL);
  if (r != tpudistSuccess) return tdErr(L->err, r, "line %d: out of memory", L->rd->line);
  return tpudistSuccess;
}

static tpudistResult_t parseStream(ioLine *L, tdSched *s) {
  int64_t idx, n;
  TD_CHECK(num(L, "stream index", 0, TD_MAX_STREAMS - 1, &idx));
  if ((uint32_t)idx != s->nstreams)
    return ioErr(L, "stream %lld where stream %u belongs (streams are numbered in order)",
                 (long long)idx, s->nstreams);
  TD_CHECK(num(L, "step count", 0, TD_SCHED_IO_MAX_STEPS, &n));
  TD_CHECK(lineEnd(L));
  s->nstreams = (uint32_t)idx + 1;
  for (int64_t i = 0; i < n; i++) {
    if (!nextLine(L))
      return ioErr(L, "the text ends inside stream %lld (%lld of %lld steps)", (long long)idx,
                   (long long)i, (long long)n);
    TD_CHECK(parseStep(L, s, (uint32_t)idx));
    TD_CHECK(lineEnd(L));
  }
  return tpudistSuccess;
}

/* Deps name existing steps (checked once all streams are read). */
static tpudistResult_t checkDeps(ioLine *L, const tdSched *s) {
  for (uint32_t i = 0; i < s->nstreams; i++)
    for (uint32_t j = 0; j < s->streams[i].nsteps; j++)
      for (int d = 0; d < 2; d++) {
        const tdDep *dep = &s->streams[i].steps[j].deps[d];
        if (dep->stream == TD_NO_DEP) continue;
        if (dep->stream >= s->nstreams || dep->step >= s->streams[dep->stream].nsteps)
          return ioErr(L, "stream %u step %u: dep %u:%u names no step", i, j, dep->stream,
                       dep->step);
      }
  return tpudistSuccess;
}

static tpudistResult_t parseBody(ioLine *L, tdSched *s) {
  int64_t v;
  TD_CHECK(word(L, "tpu_dist-schedule"));
  TD_CHECK(num(L, "version", 0, UINT32_MAX, &v));
  if (v != TD_SCHED_VERSION)
    return ioErr(L, "schedule format version %lld, this build reads %d", (long long)v,
                 TD_SCHED_VERSION);
  s->version = (uint32_t)v;
  TD_CHECK(lineEnd(L));
  if (!nextLine(L)) return ioErr(L, "the text ends before the coll line");
  TD_CHECK(parseMeta(L, s));
  for (int b = 0; b < TD_NUM_BUFS; b++) {
    if (!nextLine(L)) return ioErr(L, "the text ends before the layouts");
    TD_CHECK(parseLayout(L, s, b));
  }
  for (;;) {
    ioTok t;
    if (!nextLine(L)) return ioErr(L, "the text ends before 'end'");
    tok(L, &t);
    if (tokIs(&t, "end")) break;
    if (!tokIs(&t, "stream")) {
      char got[32];
      tokStr(&t, got, sizeof(got));
      return ioErr(L, "expected 'stream' or 'end', found '%s'", got);
    }
    if (s->nstreams == TD_MAX_STREAMS) return ioErr(L, "more than %d streams", TD_MAX_STREAMS);
    TD_CHECK(parseStream(L, s));
  }
  TD_CHECK(lineEnd(L));
  return checkDeps(L, s);
}

tpudistResult_t schedLoad(tdSchedReader *rd, tdSched *s, int *eof, char *err) {
  ioLine L = {rd, NULL, NULL, err};
  memset(s, 0, sizeof(*s));
  *eof = 0;
  if (!nextLine(&L)) {
    *eof = 1;
    return tpudistSuccess;
  }
  tpudistResult_t r = parseBody(&L, s);
  if (r != tpudistSuccess) schedFree(s);
  return r;
}

tpudistResult_t schedLoadAll(const char *text, size_t len, tdSched **out, int *n, char *err) {
  tdSchedReader rd;
  schedReaderInit(&rd, text, len);
  tdSched *arr = NULL;
  int cnt = 0, cap = 0, eof = 0;
  tpudistResult_t r = tpudistSuccess;
  while (r == tpudistSuccess) {
    if (cnt == cap) {
      cap = cap ? cap * 2 : 8;
      tdSched *na = realloc(arr, sizeof(tdSched) * (size_t)cap);
      if (!na) {
        r = tdErr(err, tpudistNoMemory, "load: out of memory");
        break;
      }
      arr = na;
    }
    r = schedLoad(&rd, &arr[cnt], &eof, err);
    if (r != tpudistSuccess || eof) break;
    cnt++;
  }
  if (r == tpudistSuccess && cnt == 0) r = tdErr(err, tpudistInvalidArgument, "load: no schedule");
  if (r != tpudistSuccess) {
    for (int i = 0; i < cnt; i++) schedFree(&arr[i]);
    free(arr);
    return r;
  }
  *out = arr;
  *n = cnt;
  return tpudistSuccess;
}
