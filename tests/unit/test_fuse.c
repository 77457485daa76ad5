/*
 * test_fuse.c - the fusion pass. Hand-built schedules: ring-like receive-then-send chains fuse
 * into RECV_REDUCE_SEND / RECV_COPY_SEND with the right peers, refs and deps; deps from other
 * streams on removed or later steps are renumbered; in-place aliasing is followed; every pattern
 * that must not fuse (an intervening writer or reader, a different or partial ref, another
 * stream, an intervening send to the same peer, send before receive, a send dep the receive lacks,
 * a later reader as in recursive doubling, a dep on the receive) leaves the schedule unchanged.
 * Expected schedules are written out by hand. Then every registered generator over flat and
 * torus shapes: the validator must accept the fused schedules wherever it accepts the unfused.
 */
#include <string.h>

#include "../cu_main.h"
#include "algos.h"
#include "drive.h"
#include "sched_ir.h"
#include "torus.h"

#define IN(c) schedRef(TD_BUF_INPUT, (c), 1)
#define OUT(c) schedRef(TD_BUF_OUTPUT, (c), 1)
#define SCR(c) schedRef(TD_BUF_SCRATCH, (c), 1)

static void initSched(tdSched *s, int inplace) {
  tdCollArgs a;
  memset(&a, 0, sizeof(a));
  a.coll = TD_COLL_ALLREDUCE;
  a.nranks = 4;
  a.rank = 1;
  a.inplace = inplace;
  a.count = 1024;
  schedInit(s, &a, "ring");
  schedSetLayout(s, TD_BUF_INPUT, 1, 4);
  schedSetLayout(s, TD_BUF_OUTPUT, 1, 4);
  schedSetLayout(s, TD_BUF_SCRATCH, 1, 4);
}

static tdStep withDeps(tdStep st, int s0, uint32_t k0, int s1, uint32_t k1) {
  st.deps[0].stream = s0 < 0 ? TD_NO_DEP : (uint16_t)s0;
  st.deps[0].step = s0 < 0 ? 0 : k0;
  st.deps[1].stream = s1 < 0 ? TD_NO_DEP : (uint16_t)s1;
  st.deps[1].step = s1 < 0 ? 0 : k1;
  return st;
}

static tdStep fused(tdStepOp op, int peer, int peer2, tdBufRef src, tdBufRef dst) {
  tdStep st = op == TD_STEP_RECV_COPY_SEND ? schedRecv(peer, dst) : schedRecvReduce(peer, src, dst);
  st.op = (uint8_t)op;
  st.peer2 = peer2;
  return st;
}

static void add(tdSched *s, uint32_t stream, tdStep st) {
  CU_ASSERT_EQUAL_FATAL(schedAppend(s, stream, &st, NULL), tpudistSuccess);
}

static int refEq(tdBufRef a, tdBufRef b) {
  return a.buf == b.buf && a.chunk == b.chunk && a.nchunks == b.nchunks;
}

static int stepEq(const tdStep *a, const tdStep *b) {
  int uses_src = a->op != TD_STEP_RECV && a->op != TD_STEP_RECV_COPY_SEND;
  int uses_dst = a->op != TD_STEP_SEND;
  int ok = a->op == b->op && a->peer == b->peer && a->peer2 == b->peer2;
  ok = ok && (!uses_src || refEq(a->src, b->src)) && (!uses_dst || refEq(a->dst, b->dst));
  for (int d = 0; d < 2; d++) {
    ok = ok && a->deps[d].stream == b->deps[d].stream;
    ok = ok && (a->deps[d].stream == TD_NO_DEP || a->deps[d].step == b->deps[d].step);
  }
  return ok;
}

/* Asserts stream `stream` of s is exactly want[0..n). */
static void expectStream(const tdSched *s, uint32_t stream, const tdStep *want, uint32_t n) {
  const tdStream *st = &s->streams[stream];
  CU_ASSERT_EQUAL_FATAL(st->nsteps, n);
  for (uint32_t i = 0; i < n; i++) {
    int eq = stepEq(&st->steps[i], &want[i]);
    if (!eq)
      fprintf(stderr, "stream %u step %u: op %d peer %d peer2 %d (want op %d peer %d peer2 %d)\n",
              stream, i, st->steps[i].op, st->steps[i].peer, st->steps[i].peer2, want[i].op,
              want[i].peer, want[i].peer2);
    CU_ASSERT(eq);
  }
}

/* Ring all-reduce on one stream, rank 1 of 4: prev = 0, next = 2. */
static void testRingChain(void) {
  tdSched s;
  initSched(&s, 0);
  add(&s, 0, schedSend(2, OUT(1)));
  add(&s, 0, schedRecvReduce(0, IN(0), OUT(0)));
  add(&s, 0, schedSend(2, OUT(0)));
  add(&s, 0, schedRecvReduce(0, IN(3), OUT(3)));
  add(&s, 0, schedSend(2, OUT(3)));
  add(&s, 0, schedRecvReduce(0, IN(2), OUT(2)));
  add(&s, 0, schedSend(2, OUT(2)));
  add(&s, 0, schedRecv(0, OUT(1)));
  add(&s, 0, schedSend(2, OUT(1)));
  add(&s, 0, schedRecv(0, OUT(0)));
  add(&s, 0, schedSend(2, OUT(0)));
  add(&s, 0, schedRecv(0, OUT(3)));
  schedFuse(&s);
  tdStep want[] = {schedSend(2, OUT(1)),
                   fused(TD_STEP_RECV_REDUCE_SEND, 0, 2, IN(0), OUT(0)),
                   fused(TD_STEP_RECV_REDUCE_SEND, 0, 2, IN(3), OUT(3)),
                   fused(TD_STEP_RECV_REDUCE_SEND, 0, 2, IN(2), OUT(2)),
                   fused(TD_STEP_RECV_COPY_SEND, 0, 2, IN(0), OUT(1)),
                   fused(TD_STEP_RECV_COPY_SEND, 0, 2, IN(0), OUT(0)),
                   schedRecv(0, OUT(3))};
  expectStream(&s, 0, want, 7);
  CU_ASSERT_EQUAL(s.nstreams, 1);
  schedFuse(&s); /* idempotent */
  expectStream(&s, 0, want, 7);
  schedFree(&s);
}

/* Stream 0 fuses (1,2) and (4,6); stream 1 depends on steps of stream 0 before, on and after
 * the removed sends. The fused step keeps the receive's deps (the send's are among them). */
static void testDepsRenumbered(void) {
  tdSched s;
  initSched(&s, 0);
  add(&s, 0, schedSend(2, OUT(0)));                                     /* 0 -> 0 */
  add(&s, 0, withDeps(schedRecvReduce(0, IN(1), OUT(1)), 1, 0, -1, 0)); /* 1 -> 1 */
  add(&s, 0, withDeps(schedSend(2, OUT(1)), 1, 0, -1, 0));              /* 2 -> 1 (removed) */
  add(&s, 0, schedCopy(IN(3), SCR(3)));                                 /* 3 -> 2 */
  add(&s, 0, schedRecv(0, OUT(2)));                                     /* 4 -> 3 */
  add(&s, 0, schedSend(3, SCR(3)));                                     /* 5 -> 4 */
  add(&s, 0, schedSend(2, OUT(2)));                                     /* 6 -> 3 (removed) */
  add(&s, 0, schedReduce(SCR(3), OUT(3)));                              /* 7 -> 5 */
  add(&s, 1, schedRecv(3, SCR(0)));
  add(&s, 1, schedRecv(3, SCR(1)));
  add(&s, 1, withDeps(schedCopy(SCR(0), OUT(0)), 0, 2, 0, 0));
  add(&s, 1, withDeps(schedCopy(SCR(1), SCR(2)), 0, 6, 0, 7));
  add(&s, 1, withDeps(schedSend(3, OUT(3)), 0, 5, 0, 3));
  schedFuse(&s);
  tdStep want0[] = {schedSend(2, OUT(0)),
                    withDeps(fused(TD_STEP_RECV_REDUCE_SEND, 0, 2, IN(1), OUT(1)), 1, 0, -1, 0),
                    schedCopy(IN(3), SCR(3)),
                    fused(TD_STEP_RECV_COPY_SEND, 0, 2, IN(0), OUT(2)),
                    schedSend(3, SCR(3)),
                    schedReduce(SCR(3), OUT(3))};
  expectStream(&s, 0, want0, 6);
  tdStep want1[] = {
      schedRecv(3, SCR(0)), schedRecv(3, SCR(1)), withDeps(schedCopy(SCR(0), OUT(0)), 0, 1, 0, 0),
      withDeps(schedCopy(SCR(1), SCR(2)), 0, 3, 0, 5), withDeps(schedSend(3, OUT(3)), 0, 4, 0, 2)};
  expectStream(&s, 1, want1, 5);
  schedFree(&s);
}

/* Fusions in one stream shift deps that point into another stream that also fuses. */
static void testTwoStreamsBothFuse(void) {
  tdSched s;
  initSched(&s, 0);
  add(&s, 0, schedRecv(0, OUT(0)));
  add(&s, 0, schedSend(2, OUT(0)));
  add(&s, 0, withDeps(schedCopy(IN(0), SCR(0)), 1, 2, -1, 0));
  add(&s, 1, withDeps(schedRecv(2, OUT(2)), 0, 1, -1, 0));
  add(&s, 1, withDeps(schedSend(0, OUT(2)), 0, 1, -1, 0));
  add(&s, 1, withDeps(schedCopy(IN(2), SCR(2)), 0, 2, -1, 0));
  schedFuse(&s);
  tdStep want0[] = {fused(TD_STEP_RECV_COPY_SEND, 0, 2, IN(0), OUT(0)),
                    withDeps(schedCopy(IN(0), SCR(0)), 1, 1, -1, 0)};
  tdStep want1[] = {withDeps(fused(TD_STEP_RECV_COPY_SEND, 2, 0, IN(0), OUT(2)), 0, 0, -1, 0),
                    withDeps(schedCopy(IN(2), SCR(2)), 0, 1, -1, 0)};
  expectStream(&s, 0, want0, 2);
  expectStream(&s, 1, want1, 2);
  schedFree(&s);
}

/* Sends moved into earlier receives keep their order to the peer, so both pairs fuse; a send to
 * another peer in between does not matter. */
static void testOrderKept(void) {
  tdSched s;
  initSched(&s, 0);
  add(&s, 0, schedRecv(0, OUT(0)));
  add(&s, 0, schedRecv(0, OUT(1)));
  add(&s, 0, schedSend(2, OUT(0)));
  add(&s, 0, schedSend(2, OUT(1)));
  add(&s, 0, schedRecvReduce(3, SCR(2), OUT(2)));
  add(&s, 0, schedSend(0, OUT(3)));
  add(&s, 0, schedSend(2, OUT(2)));
  schedFuse(&s);
  tdStep want[] = {fused(TD_STEP_RECV_COPY_SEND, 0, 2, IN(0), OUT(0)),
                   fused(TD_STEP_RECV_COPY_SEND, 0, 2, IN(0), OUT(1)),
                   fused(TD_STEP_RECV_REDUCE_SEND, 3, 2, SCR(2), OUT(2)), schedSend(0, OUT(3))};
  expectStream(&s, 0, want, 4);
  schedFree(&s);
}

/* Of two receives into the same chunk, only the later one (whose data is sent) fuses. A chunk
 * received and forwarded twice (two all-gather rounds through one scratch chunk) fuses the first
 * time, since the second receive overwrites all of it before anything reads it, but not the
 * second time, because the final copy reads it after the forward. */
static void testRewrittenChunks(void) {
  tdSched s;
  initSched(&s, 0);
  add(&s, 0, schedRecv(0, OUT(0)));
  add(&s, 0, schedRecvReduce(3, OUT(0), OUT(0)));
  add(&s, 0, schedSend(2, OUT(0)));
  add(&s, 0, schedRecv(0, SCR(1)));
  add(&s, 0, schedSend(2, SCR(1)));
  add(&s, 0, schedRecv(0, SCR(1)));
  add(&s, 0, schedSend(2, SCR(1)));
  add(&s, 0, schedCopy(SCR(1), OUT(1)));
  schedFuse(&s);
  tdStep want[] = {schedRecv(0, OUT(0)),
                   fused(TD_STEP_RECV_REDUCE_SEND, 3, 2, OUT(0), OUT(0)),
                   fused(TD_STEP_RECV_COPY_SEND, 0, 2, IN(0), SCR(1)),
                   schedRecv(0, SCR(1)),
                   schedSend(2, SCR(1)),
                   schedCopy(SCR(1), OUT(1))};
  expectStream(&s, 0, want, 6);
  schedFree(&s);
}

/* In place, all-gather's INPUT is block `rank` of OUTPUT: a write to INPUT blocks fusing a chunk
 * of that block only. */
static void testInplaceAllgatherAliasing(void) {
  for (int rank = 1; rank <= 2; rank++) {
    tdCollArgs a;
    memset(&a, 0, sizeof(a));
    a.coll = TD_COLL_ALLGATHER;
    a.nranks = 4;
    a.rank = rank;
    a.inplace = 1;
    a.count = 10;
    tdSched s;
    schedInit(&s, &a, "ring");
    schedSetLayout(&s, TD_BUF_INPUT, 1, 1);
    schedSetLayout(&s, TD_BUF_OUTPUT, 4, 1);
    add(&s, 0, schedRecv(0, OUT(1)));
    add(&s, 0, schedCopy(SCR(0), IN(0))); /* rank 1: that is OUTPUT block 1 */
    add(&s, 0, schedSend(2, OUT(1)));
    schedFuse(&s);
    CU_ASSERT_EQUAL(s.streams[0].nsteps, rank == 1 ? 3u : 2u);
    CU_ASSERT_EQUAL(s.streams[0].steps[0].op, rank == 1 ? TD_STEP_RECV : TD_STEP_RECV_COPY_SEND);
    schedFree(&s);
  }
}

/* Builds one non-fusable pattern into s; returns the number of streams used. */
static uint32_t buildUnfusable(tdSched *s, int which) {
  switch (which) {
    case 0: /* intervening writer of the chunk */
      add(s, 0, schedRecv(0, OUT(0)));
      add(s, 0, schedCopy(IN(0), OUT(0)));
      add(s, 0, schedSend(2, OUT(0)));
      return 1;
    case 1: /* partial overlap: send covers two chunks */
      add(s, 0, schedRecv(0, OUT(0)));
      add(s, 0, schedSend(2, schedRef(TD_BUF_OUTPUT, 0, 2)));
      return 1;
    case 2: /* same chunk index, other buffer */
      add(s, 0, schedRecvReduce(0, IN(1), SCR(1)));
      add(s, 0, schedSend(2, OUT(1)));
      return 1;
    case 3: /* receive and send in different streams */
      add(s, 0, schedRecv(0, OUT(0)));
      add(s, 1, withDeps(schedSend(2, OUT(0)), 0, 0, -1, 0));
      return 2;
    case 4: /* an intervening send to the same peer would be overtaken */
      add(s, 0, schedRecv(0, OUT(0)));
      add(s, 0, schedSend(2, OUT(3)));
      add(s, 0, schedSend(2, OUT(0)));
      return 1;
    case 5: /* send before receive */
      add(s, 0, schedSend(2, OUT(0)));
      add(s, 0, schedRecv(0, OUT(0)));
      return 1;
    case 6: /* the send waits for a step the receive does not */
      add(s, 1, schedRecv(3, SCR(0)));
      add(s, 1, schedRecv(3, SCR(1)));
      add(s, 0, withDeps(schedRecv(0, OUT(0)), 1, 0, -1, 0));
      add(s, 0, withDeps(schedSend(2, OUT(0)), 1, 1, -1, 0));
      return 2;
    case 7: /* in place: INPUT chunk 0 is OUTPUT chunk 0 */
      add(s, 0, schedRecv(0, OUT(0)));
      add(s, 0, schedRecv(3, IN(0)));
      add(s, 0, schedSend(2, OUT(0)));
      return 1;
    case 8: /* the send depends on a later step of its own stream (invalid, from a file) */
      add(s, 0, schedRecv(0, OUT(0)));
      add(s, 0, schedRecv(3, OUT(1)));
      add(s, 0, withDeps(schedSend(2, OUT(0)), 0, 1, -1, 0));
      return 1;
    case 9: /* recursive doubling: a later step reads the forwarded chunk; fused, both ranks of
               a pair would wait for each other's forward */
      add(s, 0, schedSend(1, OUT(0)));
      add(s, 0, schedRecvReduce(1, OUT(0), SCR(0)));
      add(s, 0, schedSend(2, SCR(0)));
      add(s, 0, schedRecvReduce(2, SCR(0), OUT(0)));
      return 1;
    case 10: /* a reader of the chunk between receive and send */
      add(s, 0, schedRecv(0, OUT(0)));
      add(s, 0, schedCopy(OUT(0), SCR(0)));
      add(s, 0, schedSend(2, OUT(0)));
      return 1;
    case 11: /* a second send of the chunk (two children) would wait for the first forward */
      add(s, 0, schedRecv(0, OUT(0)));
      add(s, 0, schedSend(2, OUT(0)));
      add(s, 0, schedSend(3, OUT(0)));
      return 1;
    case 12: /* another stream depends on the receive (the data landing, not the forward) */
      add(s, 0, schedRecv(0, OUT(0)));
      add(s, 0, schedSend(2, OUT(0)));
      add(s, 1, withDeps(schedCopy(OUT(0), SCR(0)), 0, 0, -1, 0));
      return 2;
    default: /* an intervening receive that overwrites part of the chunk */
      add(s, 0, schedRecv(0, schedRef(TD_BUF_OUTPUT, 0, 2)));
      add(s, 0, schedRecv(3, OUT(1)));
      add(s, 0, schedSend(2, schedRef(TD_BUF_OUTPUT, 0, 2)));
      return 1;
  }
}

static void testUnfusableUntouched(void) {
  for (int which = 0; which < 14; which++) {
    tdSched s, copy;
    initSched(&s, which == 7);
    initSched(&copy, which == 7);
    uint32_t ns = buildUnfusable(&s, which);
    buildUnfusable(&copy, which);
    schedFuse(&s);
    CU_ASSERT_EQUAL(s.nstreams, ns);
    for (uint32_t t = 0; t < ns; t++) {
      if (s.streams[t].nsteps != copy.streams[t].nsteps) fprintf(stderr, "pattern %d\n", which);
      expectStream(&s, t, copy.streams[t].steps, copy.streams[t].nsteps);
    }
    schedFree(&s);
    schedFree(&copy);
  }
  /* the in-place pattern fuses when the schedule is not in place */
  tdSched s;
  initSched(&s, 0);
  buildUnfusable(&s, 7);
  schedFuse(&s);
  tdStep want[] = {fused(TD_STEP_RECV_COPY_SEND, 0, 2, IN(0), OUT(0)), schedRecv(3, IN(0))};
  expectStream(&s, 0, want, 2);
  schedFree(&s);
}

static void testEmpty(void) {
  tdSched s;
  initSched(&s, 0);
  schedFuse(&s);
  CU_ASSERT_EQUAL(s.nstreams, 0);
  add(&s, 0, schedRecv(0, OUT(0)));
  schedFuse(&s);
  CU_ASSERT_EQUAL(s.streams[0].nsteps, 1);
  CU_ASSERT_EQUAL(s.streams[0].steps[0].op, TD_STEP_RECV);
  schedFree(&s);
}

/* Every registered generator over small flat and torus shapes: whenever the validator accepts
 * the unfused schedules, it must accept the fused ones too (matching, progress, data). */
static void testGeneratorsStillValid(void) {
  static const char *const specs[] = {NULL, NULL, NULL, NULL, "4x2", "3x3", "2x2x2"};
  static const int flatRanks[] = {2, 3, 4, 6};
  int checked = 0, bad = 0;
  for (size_t ti = 0; ti < sizeof(specs) / sizeof(specs[0]); ti++) {
    tdTopo topo;
    char err[TD_ERRLEN] = "";
    int n = ti < 4 ? flatRanks[ti] : (ti == 5 ? 9 : 8);
    if (specs[ti]) {
      CU_ASSERT_EQUAL_FATAL(topoParse(specs[ti], n, &topo, err), tpudistSuccess);
    } else {
      topoInitFlat(&topo, n);
    }
    uint64_t vcounts[81];
    for (int i = 0; i < n * n; i++) vcounts[i] = (uint64_t)((i / n + 2 * (i % n)) % 4);
    for (const tdAlgo *al = tdAlgoTable; al->name; al++)
      for (int inplace = 0; inplace < 2; inplace++)
        for (int root = 0; root < n; root += n - 1)
          for (uint64_t count = 1; count < 100; count += 36) {
            if (inplace && (al->coll == TD_COLL_ALLTOALL || al->coll == TD_COLL_ALLTOALLV))
              continue;
            tdCollArgs a;
            memset(&a, 0, sizeof(a));
            a.coll = al->coll;
            a.nranks = n;
            a.root = root;
            a.inplace = inplace;
            a.count = count;
            a.topo = &topo;
            a.elem_size = 4;
            if (al->coll == TD_COLL_ALLTOALLV) a.v_counts = vcounts;
            tpudistResult_t plain = validateAlgo(&a, al->name, 0, err);
            if (plain != tpudistSuccess) continue; /* refused (or another suite's failure) */
            tpudistResult_t fusedRes = validateAlgo(&a, al->name, 1, err);
            checked++;
            if (fusedRes != tpudistSuccess && bad++ < 10)
              fprintf(stderr, "fused %s %s n=%d %s inplace=%d root=%d count=%llu: %s\n",
                      schedCollName(al->coll), al->name, n, specs[ti] ? specs[ti] : "flat", inplace,
                      root, (unsigned long long)count, err);
          }
  }
  CU_ASSERT(checked > 50);
  CU_ASSERT_EQUAL(bad, 0);
}

/* The ring all-reduce generator's schedule actually fuses: n-1 sends disappear into
 * recv_reduce_send / recv_copy_send steps. */
static void testRingGeneratorFuses(void) {
  tdTopo topo;
  topoInitFlat(&topo, 4);
  tdCollArgs a;
  memset(&a, 0, sizeof(a));
  a.coll = TD_COLL_ALLREDUCE;
  a.nranks = 4;
  a.count = 100;
  a.topo = &topo;
  tdSched s;
  char err[TD_ERRLEN] = "";
  tpudistResult_t res = algoGenerate(&a, "ring", &s, err);
  if (res != tpudistSuccess) fprintf(stderr, "ring: %s\n", err);
  CU_ASSERT_EQUAL_FATAL(res, tpudistSuccess);
  uint32_t before = 0, after = 0, fusedSteps = 0;
  for (uint32_t t = 0; t < s.nstreams; t++) before += s.streams[t].nsteps;
  schedFuse(&s);
  for (uint32_t t = 0; t < s.nstreams; t++) {
    after += s.streams[t].nsteps;
    for (uint32_t k = 0; k < s.streams[t].nsteps; k++)
      fusedSteps += s.streams[t].steps[k].op == TD_STEP_RECV_REDUCE_SEND ||
                    s.streams[t].steps[k].op == TD_STEP_RECV_COPY_SEND;
  }
  CU_ASSERT(fusedSteps > 0);
  CU_ASSERT_EQUAL(before - after, fusedSteps);
  schedFree(&s);
}

int main(void) {
  CU_TestInfo tests[] = {{"ring chain fuses", testRingChain},
                         {"deps renumbered", testDepsRenumbered},
                         {"two streams both fuse", testTwoStreamsBothFuse},
                         {"message order kept", testOrderKept},
                         {"rewritten chunks", testRewrittenChunks},
                         {"in-place all-gather aliasing", testInplaceAllgatherAliasing},
                         {"unfusable untouched", testUnfusableUntouched},
                         {"empty and single", testEmpty},
                         {"generators still valid when fused", testGeneratorsStillValid},
                         {"ring generator fuses", testRingGeneratorFuses},
                         CU_TEST_INFO_NULL};
  return tdCUnitMain("fuse", tests);
}
