/*
 * test_validate.c - unit tests of the schedule validator (collectives/validate/validate.c) on
 * hand-built schedules: correct ring all-reduces (2, 3 and 257 ranks, in and out of place, unfused
 * and fused) and other small collectives must pass; broken variants (missing receive, size
 * mismatch, deadlocking order, double contribution, wrong output, overlapping writes, bad refs,
 * peers, deps, writes to the send buffer, ...) must each fail with the right message.
 */
#include <stdlib.h>
#include <string.h>

#include "../cu_main.h"
#include "validate.h"

enum {
  V_OK = 0,
  V_MISSING_RECV,
  V_MISSING_SEND,
  V_SIZE,
  V_DEADLOCK,
  V_DOUBLE,
  V_WRONG,
  V_RACE,
  V_PEER,
  V_SELF,
  V_REF,
  V_DEP,
  V_OWN_DEP,
  V_WRITE_INPUT,
  V_UNINIT,
  V_FUSED,
};

#define MAXR 300
static tdSched g_s[MAXR];
static tdSched *g_p[MAXR];
static char g_err[TD_ERRLEN];

static void add(tdSched *s, uint32_t stream, tdStep st) {
  CU_ASSERT_FATAL(schedAppend(s, stream, &st, NULL) == tpudistSuccess);
}

static tdBufRef out(int N, int c, uint32_t n) {
  return schedRef(TD_BUF_OUTPUT, (uint32_t)(((c % N) + N) % N), n);
}

static tdStep fused(tdStepOp op, int from, int to, tdBufRef src, tdBufRef dst) {
  tdStep st = schedRecv(from, dst);
  st.op = (uint8_t)op;
  st.peer2 = to;
  st.src = src;
  return st;
}

/* Fused ring (what schedFuse makes of the ring below): send, N-1 recv_reduce_send,
 * N-2 recv_copy_send, recv. */
static void ringFused(tdSched *s, int N, int r) {
  int nx = (r + 1) % N, pv = (r + N - 1) % N;
  add(s, 0, schedSend(nx, out(N, r, 1)));
  for (int k = 0; k < N - 1; k++)
    add(s, 0, fused(TD_STEP_RECV_REDUCE_SEND, pv, nx, out(N, r - k - 1, 1), out(N, r - k - 1, 1)));
  for (int k = 0; k < N - 2; k++)
    add(s, 0, fused(TD_STEP_RECV_COPY_SEND, pv, nx, out(N, 0, 1), out(N, r - k, 1)));
  add(s, 0, schedRecv(pv, out(N, r - (N - 2), 1)));
}

/* Ring all-reduce of rank r, OUTPUT in N chunks, with an optional defect. */
static void ringAR(tdSched *s, int N, int r, int inplace, int variant) {
  tdCollArgs a;
  memset(&a, 0, sizeof(a));
  a.coll = TD_COLL_ALLREDUCE, a.nranks = N, a.rank = r, a.inplace = inplace, a.count = 12;
  schedInit(s, &a, "ring");
  schedSetLayout(s, TD_BUF_INPUT, 1, (uint32_t)N);
  schedSetLayout(s, TD_BUF_OUTPUT, 1, (uint32_t)N);
  schedSetLayout(s, TD_BUF_SCRATCH, 1, (uint32_t)N);
  int nx = (r + 1) % N, pv = (r + N - 1) % N;
  if (!inplace)
    add(s, 0, schedCopy(schedRef(TD_BUF_INPUT, 0, (uint32_t)N), out(N, 0, (uint32_t)N)));
  if (variant == V_FUSED) {
    ringFused(s, N, r);
    return;
  }
  if (variant == V_DOUBLE && r == 1)
    add(s, 0, schedReduce(schedRef(TD_BUF_INPUT, 0, 1), out(N, 0, 1)));
  if (variant == V_RACE && r == 0) add(s, 1, schedCopy(schedRef(TD_BUF_INPUT, 1, 1), out(N, 1, 1)));
  if (variant == V_UNINIT && r == 0)
    add(s, 0, schedReduce(schedRef(TD_BUF_SCRATCH, 0, 1), out(N, 0, 1)));
  for (int k = 0; k < N - 1; k++) {
    uint32_t nc = (variant == V_SIZE && r == 0 && k == 0) ? 2 : 1;
    add(s, 0, schedSend(variant == V_PEER && r == 1 ? N : nx, out(N, r - k, nc)));
    tdStep rr = schedRecvReduce(pv, out(N, r - k - 1, 1), out(N, r - k - 1, 1));
    if (variant == V_WRONG && r == 0 && k == 0) rr = schedRecv(pv, rr.dst);
    if (variant == V_REF && r == 2 && k == 0) rr.dst.nchunks = (uint32_t)N + 1;
    if (variant == V_WRITE_INPUT && r == 0 && k == 0) rr.dst.buf = TD_BUF_INPUT, rr.src = rr.dst;
    add(s, 0, rr);
  }
  for (int k = 0; k < N - 1; k++) {
    tdStep snd = schedSend(variant == V_SELF && r == 0 ? 0 : nx, out(N, r + 1 - k, 1));
    tdStep rcv = schedRecv(pv, out(N, r - k, 1));
    if (variant == V_DEADLOCK && k == 0) rcv.dst = snd.src;
    if (variant == V_DEP && r == 1 && k == 0) rcv.deps[0] = (tdDep){3, 0};
    if (variant == V_OWN_DEP && r == 1 && k == 0) rcv.deps[0] = (tdDep){0, 0};
    if (variant == V_DEADLOCK) {
      add(s, 0, rcv);
      add(s, 0, snd);
      continue;
    }
    add(s, 0, snd);
    if (!(variant == V_MISSING_RECV && r == 1 && k == N - 2)) add(s, 0, rcv);
    if (variant == V_MISSING_SEND && r == 2 && k == N - 2) add(s, 0, schedRecv(pv, rcv.dst));
  }
}

static tpudistResult_t runRing(int N, int inplace, int variant, uint64_t count) {
  for (int r = 0; r < N; r++) {
    ringAR(&g_s[r], N, r, inplace, variant);
    g_p[r] = &g_s[r];
  }
  g_err[0] = 0;
  tpudistResult_t res = validateSchedules(g_p, N, count, g_err);
  for (int r = 0; r < N; r++) schedFree(&g_s[r]);
  return res;
}

#define EXPECT_FAIL(N, variant, needle)                                              \
  do {                                                                               \
    CU_ASSERT_EQUAL(runRing(N, 0, variant, 12), tpudistInternalError);               \
    CU_ASSERT_PTR_NOT_NULL(strstr(g_err, needle));                                   \
    if (!strstr(g_err, needle)) printf("\n  expected '%s' in: %s\n", needle, g_err); \
  } while (0)

static void testRingCorrect(void) {
  const uint64_t counts[] = {0, 1, 2, 3, 7, 12, 1001};
  for (int N = 1; N <= 5; N++)
    for (int ip = 0; ip < 2; ip++)
      for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
        tpudistResult_t r = runRing(N, ip, V_OK, counts[i]);
        CU_ASSERT_EQUAL(r, tpudistSuccess);
        if (r)
          printf("\n  N=%d inplace=%d count=%llu: %s\n", N, ip, (unsigned long long)counts[i],
                 g_err);
      }
}

static void testRingFused(void) {
  for (int N = 2; N <= 5; N++) {
    CU_ASSERT_EQUAL(runRing(N, 0, V_FUSED, 10), tpudistSuccess);
    CU_ASSERT_EQUAL(runRing(N, 1, V_FUSED, 10), tpudistSuccess);
    if (g_err[0]) printf("\n  fused N=%d: %s\n", N, g_err);
  }
}

static void testRingLarge(void) {
  uint64_t rounds = 0;
  for (int r = 0; r < 257; r++) {
    ringAR(&g_s[r], 257, r, 0, V_OK);
    g_p[r] = &g_s[r];
  }
  tdValidateOpts o;
  memset(&o, 0, sizeof(o));
  o.out_rounds = &rounds;
  CU_ASSERT_EQUAL(validateSchedulesOpts(g_p, 257, 3000, &o, g_err), tpudistSuccess);
  CU_ASSERT(rounds >= 2 * 256);                   /* a ring takes 2(N-1) message rounds at least */
  g_s[200].streams[0].steps[2].op = TD_STEP_RECV; /* drops partial sums */
  CU_ASSERT_EQUAL(validateSchedules(g_p, 257, 3000, g_err), tpudistInternalError);
  CU_ASSERT_PTR_NOT_NULL(strstr(g_err, "missing rank"));
  for (int r = 0; r < 257; r++) schedFree(&g_s[r]);
}

static void testBroken(void) {
  EXPECT_FAIL(3, V_MISSING_RECV, "no matching receive");
  EXPECT_FAIL(3, V_MISSING_RECV, "rank 0 stream 0 step");
  EXPECT_FAIL(3, V_MISSING_SEND, "no matching send");
  EXPECT_FAIL(3, V_SIZE, "size mismatch: rank 0 stream 0 step 1 (send to 1) sends 8 elements");
  EXPECT_FAIL(2, V_DEADLOCK, "deadlock: wait-for cycle");
  EXPECT_FAIL(3, V_DEADLOCK, "deadlock: wait-for cycle");
  EXPECT_FAIL(3, V_DEADLOCK, "(recv from");
  EXPECT_FAIL(2, V_DOUBLE, "rank 1's contribution to element 0 is added twice");
  EXPECT_FAIL(3, V_DOUBLE, "rank 1 stream 0 step 1 (reduce)");
  EXPECT_FAIL(3, V_WRONG, "wrong result");
  EXPECT_FAIL(3, V_WRONG, "missing rank");
  EXPECT_FAIL(2, V_WRONG, "missing rank 0's contribution");
  EXPECT_FAIL(2, V_RACE, "data race: rank 0 stream");
  EXPECT_FAIL(3, V_RACE, "both write output elements [4,8) concurrently");
  EXPECT_FAIL(3, V_PEER, "rank 1 stream 0 step 1 (send to 3): destination peer 3 out of range");
  EXPECT_FAIL(3, V_SELF, "is the rank itself");
  EXPECT_FAIL(3, V_REF, "out of range (the layout has 3 chunks)");
  EXPECT_FAIL(3, V_DEP, "no such step");
  EXPECT_FAIL(3, V_OWN_DEP, "its own stream");
  EXPECT_FAIL(3, V_WRITE_INPUT, "must leave intact");
  EXPECT_FAIL(3, V_UNINIT, "reduces uninitialised data");
}

static void testDeadlockNamesCycle(void) {
  char report[4096];
  for (int r = 0; r < 2; r++) {
    ringAR(&g_s[r], 2, r, 0, V_DEADLOCK);
    g_p[r] = &g_s[r];
  }
  tdValidateOpts o;
  memset(&o, 0, sizeof(o));
  o.report = report, o.report_len = sizeof(report);
  CU_ASSERT_EQUAL(validateSchedulesOpts(g_p, 2, 8, &o, g_err), tpudistInternalError);
  /* Both ranks' receives wait for sends that wait behind them: all four steps are named. */
  CU_ASSERT_PTR_NOT_NULL(strstr(report, "rank 0 stream 0 step 3 (recv from 1)"));
  CU_ASSERT_PTR_NOT_NULL(strstr(report, "rank 1 stream 0 step 3 (recv from 0)"));
  CU_ASSERT_PTR_NOT_NULL(strstr(report, "rank 0 stream 0 step 4 (send to 1)"));
  CU_ASSERT_PTR_NOT_NULL(strstr(report, "rank 1 stream 0 step 4 (send to 0)"));
  for (int r = 0; r < 2; r++) schedFree(&g_s[r]);
}

static tdSched *mk(tdColl coll, int N, int r, int root, int inplace, const char *algo) {
  tdCollArgs a;
  memset(&a, 0, sizeof(a));
  a.coll = coll, a.nranks = N, a.rank = r, a.root = root, a.inplace = inplace;
  schedInit(&g_s[r], &a, algo);
  g_p[r] = &g_s[r];
  return &g_s[r];
}

/* sendrecv: rank r sends to r+shift and receives from r-shift; shift 0 messages itself. */
static void testSendrecv(void) {
  for (int N = 1; N <= 4; N++)
    for (int root = 0; root < N; root++) {
      for (int r = 0; r < N; r++) {
        tdSched *s = mk(TD_COLL_SENDRECV, N, r, root, 0, "direct");
        schedSetLayout(s, TD_BUF_INPUT, 1, 1);
        schedSetLayout(s, TD_BUF_OUTPUT, 1, 1);
        add(s, 0, schedSend((r + root) % N, schedRef(TD_BUF_INPUT, 0, 1)));
        add(s, 0, schedRecv((r - root + N) % N, schedRef(TD_BUF_OUTPUT, 0, 1)));
      }
      CU_ASSERT_EQUAL(validateSchedules(g_p, N, 5, g_err), tpudistSuccess);
      if (N > 2) {
        /* receiving from the wrong peer (with matching sends) is a wrong result */
        for (int r = 0; r < N; r++) {
          g_s[r].streams[0].steps[0].peer = (r + root + 1) % N;
          g_s[r].streams[0].steps[1].peer = (r - root - 1 + 2 * N) % N;
        }
        CU_ASSERT_EQUAL(validateSchedules(g_p, N, 5, g_err), tpudistInternalError);
        CU_ASSERT_PTR_NOT_NULL(strstr(g_err, "wrong result"));
      }
      for (int r = 0; r < N; r++) schedFree(&g_s[r]);
    }
}

/* Broadcast chain from a root: non-roots must not touch the send buffer. */
static void testBroadcast(void) {
  int N = 4, root = 2;
  for (int bad = 0; bad < 2; bad++) {
    for (int r = 0; r < N; r++) {
      tdSched *s = mk(TD_COLL_BROADCAST, N, r, root, 0, "chain");
      schedSetLayout(s, TD_BUF_INPUT, 1, 1);
      schedSetLayout(s, TD_BUF_OUTPUT, 1, 1);
      int pos = (r - root + N) % N;
      tdBufRef o = schedRef(TD_BUF_OUTPUT, 0, 1);
      if (pos == 0) add(s, 0, schedCopy(schedRef(TD_BUF_INPUT, 0, 1), o));
      if (pos > 0) add(s, 0, schedRecv((r + N - 1) % N, o));
      if (bad && pos == 1)
        add(s, 1, schedCopy(schedRef(TD_BUF_INPUT, 0, 1), schedRef(TD_BUF_SCRATCH, 0, 1)));
      if (pos < N - 1) add(s, 0, schedSend((r + 1) % N, o));
    }
    schedSetLayout(&g_s[3], TD_BUF_SCRATCH, 1, 1);
    tpudistResult_t res = validateSchedules(g_p, N, 9, g_err);
    CU_ASSERT_EQUAL(res, bad ? tpudistInternalError : tpudistSuccess);
    if (bad) CU_ASSERT_PTR_NOT_NULL(strstr(g_err, "outside the caller's input of 0 elements"));
    for (int r = 0; r < N; r++) schedFree(&g_s[r]);
  }
}

/* All-to-all-v, direct, explicit layouts from a count matrix with zeros and a hot receiver. */
static void testAlltoallv(void) {
  enum { N = 4 };
  uint64_t vc[N * N], sd[N * N], rd[N * N];
  for (int s = 0; s < N; s++)
    for (int r = 0; r < N; r++) vc[s * N + r] = r == 3 ? 50 + s : (s + r) % 3;
  for (int a = 0; a < N; a++) {
    uint64_t ps = 7, pr = 3; /* gaps in front: the caller's elements there stay intact */
    for (int b = 0; b < N; b++) {
      sd[a * N + b] = ps, ps += vc[a * N + b];
      rd[a * N + b] = pr, pr += vc[b * N + a] + 1;
    }
  }
  for (int bad = 0; bad < 4; bad++) {
    for (int r = 0; r < N; r++) {
      tdSched *s = mk(TD_COLL_ALLTOALLV, N, r, 0, 0, "direct");
      uint64_t ic[N], oc[N];
      for (int j = 0; j < N; j++) ic[j] = vc[r * N + j], oc[j] = vc[j * N + r];
      CU_ASSERT(schedSetLayoutExplicit(s, TD_BUF_INPUT, N, 1, sd + r * N, ic) == tpudistSuccess);
      CU_ASSERT(schedSetLayoutExplicit(s, TD_BUF_OUTPUT, N, 1, rd + r * N, oc) == tpudistSuccess);
      for (int k = 1; k < N; k++) {
        int to = (r + k) % N, from = (r - k + N) % N;
        add(s, 0, schedSend(to, schedRef(TD_BUF_INPUT, (uint32_t)to, 1)));
        tdBufRef o = schedRef(TD_BUF_OUTPUT, (uint32_t)from, 1);
        if (bad == 3 && r == 0 && from == 1) o.nchunks = 2; /* blocks 1, 2 do not abut */
        add(s, 0, schedRecv(from, o));
      }
      tdBufRef self = schedRef(TD_BUF_OUTPUT, (uint32_t)r, 1);
      if (bad == 2 && r == 1) self.chunk = 3; /* overwrites the hot block with its own */
      if (!(bad == 1 && r == 2)) add(s, 0, schedCopy(schedRef(TD_BUF_INPUT, (uint32_t)r, 1), self));
    }
    tdValidateOpts o;
    memset(&o, 0, sizeof(o));
    o.v_counts = vc, o.v_sdispls = sd, o.v_rdispls = rd;
    tpudistResult_t res = validateSchedulesOpts(g_p, N, 0, &o, g_err);
    if (bad == 0) CU_ASSERT_EQUAL(res, tpudistSuccess);
    if (bad == 1) CU_ASSERT_PTR_NOT_NULL(strstr(g_err, "rank 2 output element"));
    if (bad == 1) CU_ASSERT_PTR_NOT_NULL(strstr(g_err, "prior buffer contents"));
    if (bad == 2) CU_ASSERT_PTR_NOT_NULL(strstr(g_err, "src has 2 elements but dst has 1"));
    if (bad == 3) CU_ASSERT_PTR_NOT_NULL(strstr(g_err, "output chunks [1,+2) are not contiguous"));
    if (res && bad == 0) printf("\n  %s\n", g_err);
    for (int r = 0; r < N; r++) schedFree(&g_s[r]);
  }
}

/* In-place reduce-scatter: only block `rank` of the send buffer may be written. */
static void testReduceScatterInplace(void) {
  enum { N = 3 };
  for (int bad = 0; bad < 2; bad++) {
    for (int r = 0; r < N; r++) {
      tdSched *s = mk(TD_COLL_REDUCESCATTER, N, r, 0, 1, "ring");
      schedSetLayout(s, TD_BUF_INPUT, N, 1);
      schedSetLayout(s, TD_BUF_OUTPUT, 1, 1);
      schedSetLayout(s, TD_BUF_SCRATCH, 1, 1);
      /* ring: scratch accumulates block r-1-k, forwarded; the last lands in OUTPUT */
      int nx = (r + 1) % N, pv = (r + N - 1) % N;
      tdBufRef sc = schedRef(TD_BUF_SCRATCH, 0, 1);
      add(s, 0, schedSend(nx, schedRef(TD_BUF_INPUT, (uint32_t)((r + N - 1) % N), 1)));
      for (int k = 0; k < N - 1; k++) {
        int b = (r - k - 2 + 2 * N) % N;
        tdBufRef in = schedRef(TD_BUF_INPUT, (uint32_t)b, 1);
        tdBufRef dst = k == N - 2 ? schedRef(TD_BUF_OUTPUT, 0, 1) : sc;
        if (bad && k == 0) dst = in;
        add(s, 0, schedRecvReduce(pv, in, dst));
        if (k < N - 2) add(s, 0, schedSend(nx, dst));
      }
    }
    tpudistResult_t res = validateSchedules(g_p, N, 4, g_err);
    CU_ASSERT_EQUAL(res, bad ? tpudistInternalError : tpudistSuccess);
    if (bad) CU_ASSERT_PTR_NOT_NULL(strstr(g_err, "must leave intact"));
    if (!bad && res) printf("\n  %s\n", g_err);
    for (int r = 0; r < N; r++) schedFree(&g_s[r]);
  }
}

/* A race the lock-step order hides (the send completes before the overwrite issues) but a
 * randomised completion order finds: rank 0 rewrites the scratch chunk its send reads. */
static void testRandomRace(void) {
  for (int r = 0; r < 2; r++) {
    tdSched *s = mk(TD_COLL_SENDRECV, 2, r, 1, 0, "direct");
    schedSetLayout(s, TD_BUF_INPUT, 1, 1);
    schedSetLayout(s, TD_BUF_OUTPUT, 1, 1);
    schedSetLayout(s, TD_BUF_SCRATCH, 2, 1);
    tdBufRef in = schedRef(TD_BUF_INPUT, 0, 1), o = schedRef(TD_BUF_OUTPUT, 0, 1);
    tdBufRef s0 = schedRef(TD_BUF_SCRATCH, 0, 1), s1 = schedRef(TD_BUF_SCRATCH, 1, 1);
    if (r == 0) {
      add(s, 0, schedCopy(in, s0));
      add(s, 0, schedSend(1, s0));
      add(s, 1, schedRecv(1, o));
      add(s, 1, schedCopy(o, s1));
      add(s, 1, schedCopy(s1, s0));
    } else {
      add(s, 0, schedRecv(0, o));
      add(s, 1, schedSend(0, in));
    }
  }
  tdValidateOpts opt;
  memset(&opt, 0, sizeof(opt));
  CU_ASSERT_EQUAL(validateSchedulesOpts(g_p, 2, 6, &opt, g_err), tpudistSuccess);
  opt.random_runs = 16, opt.seed = 1;
  CU_ASSERT_EQUAL(validateSchedulesOpts(g_p, 2, 6, &opt, g_err), tpudistInternalError);
  CU_ASSERT_PTR_NOT_NULL(strstr(g_err, "data race: rank 0 stream 1 step 2 (copy) writes scratch"));
  CU_ASSERT_PTR_NOT_NULL(strstr(g_err, "[in randomised completion order"));
  /* ordering the overwrite after the send makes it correct in every order */
  g_s[0].streams[1].steps[2].deps[0] = (tdDep){0, 1};
  CU_ASSERT_EQUAL(validateSchedulesOpts(g_p, 2, 6, &opt, g_err), tpudistSuccess);
  for (int r = 0; r < 2; r++) schedFree(&g_s[r]);
}

/* Direct all-reduce where each rank adds the others' inputs in rank order: every rank gets every
 * contribution once, but rank 2 sums ((2+0)+1) where ranks 0 and 1 sum ((0+1)+2). */
static void testReductionOrder(void) {
  enum { N = 3 };
  for (int fixed = 0; fixed < 2; fixed++) {
    for (int r = 0; r < N; r++) {
      tdSched *s = mk(TD_COLL_ALLREDUCE, N, r, 0, 0, "direct");
      schedSetLayout(s, TD_BUF_INPUT, 1, 1);
      schedSetLayout(s, TD_BUF_OUTPUT, 1, 1);
      schedSetLayout(s, TD_BUF_SCRATCH, N, 1);
      tdBufRef in = schedRef(TD_BUF_INPUT, 0, 1), o = schedRef(TD_BUF_OUTPUT, 0, 1);
      for (int p = 0; p < N; p++) {
        if (p == r) continue;
        add(s, 0, schedSend(p, in));
        add(s, 0, schedRecv(p, schedRef(TD_BUF_SCRATCH, (uint32_t)p, 1)));
      }
      /* fixed: everybody sums 0, 1, 2 in rank order (own input in its place) */
      add(s, 0, schedCopy(fixed && r != 0 ? schedRef(TD_BUF_SCRATCH, 0, 1) : in, o));
      for (int p = fixed ? 1 : 0; p < N; p++)
        if (p != (fixed ? -1 : r))
          add(s, 0, schedReduce(p == r ? in : schedRef(TD_BUF_SCRATCH, (uint32_t)p, 1), o));
    }
    tpudistResult_t res = validateSchedules(g_p, N, 5, g_err);
    CU_ASSERT_EQUAL(res, fixed ? tpudistSuccess : tpudistInternalError);
    if (!fixed) {
      CU_ASSERT_PTR_NOT_NULL(strstr(g_err,
                                    "reduction order differs: rank 0 output element 0 is "
                                    "((0+1)+2) but rank 2's is ((0+2)+1)"));
    }
    if (res != (fixed ? tpudistSuccess : tpudistInternalError)) printf("\n  %s\n", g_err);
    for (int r = 0; r < N; r++) schedFree(&g_s[r]);
  }
}

static void testMeta(void) {
  for (int r = 0; r < 2; r++) {
    ringAR(&g_s[r], 2, r, 0, V_OK);
    g_p[r] = &g_s[r];
  }
  g_s[1].rank = 0;
  CU_ASSERT_EQUAL(validateSchedules(g_p, 2, 4, g_err), tpudistInternalError);
  CU_ASSERT_PTR_NOT_NULL(strstr(g_err, "rank 1: schedule is for"));
  g_s[1].rank = 1;
  CU_ASSERT_EQUAL(validateSchedules(g_p, 0, 4, g_err), tpudistInvalidArgument);
  g_s[0].streams[0].steps[1].op = 77;
  CU_ASSERT_EQUAL(validateSchedules(g_p, 2, 4, g_err), tpudistInternalError);
  CU_ASSERT_PTR_NOT_NULL(strstr(g_err, "op 77 is not a step op"));
  g_s[0].streams[0].steps[1].op = TD_STEP_SEND;
  for (int r = 0; r < 2; r++) schedFree(&g_s[r]);
}

int main(void) {
  CU_TestInfo tests[] = {
      {"ring allreduce correct", testRingCorrect},
      {"fused ring allreduce", testRingFused},
      {"ring allreduce 257 ranks", testRingLarge},
      {"broken variants", testBroken},
      {"deadlock names the cycle", testDeadlockNamesCycle},
      {"sendrecv shift", testSendrecv},
      {"broadcast non-root input", testBroadcast},
      {"alltoallv explicit layouts", testAlltoallv},
      {"reducescatter in place", testReduceScatterInplace},
      {"metadata", testMeta},
      {"reduction order across ranks", testReductionOrder},
      {"race found by random completion order", testRandomRace},
      CU_TEST_INFO_NULL,
  };
  return tdCUnitMain("validate", tests);
}
