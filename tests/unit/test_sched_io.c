/*
 * test_sched_io.c - unit tests of the schedule text format (collectives/ir/sched_io.c): dump ->
 * load
 * -> dump is byte-identical on hand-built schedules (uniform and explicit layouts, fused steps,
 * deps, several streams, empty ones); the example of docs/schedule-ir.md loads; malformed texts
 * are rejected naming the right line; random corruptions of a valid text never crash the loader.
 */
#include <stdlib.h>
#include <string.h>

#include "../cu_main.h"
#include "../xorshift.h"
#include "sched_io.h"
#include "validate.h"

static void add(tdSched *s, uint32_t stream, tdStep st) {
  CU_ASSERT_FATAL(schedAppend(s, stream, &st, NULL) == tpudistSuccess);
}

/* A schedule using every op, deps, three streams (one empty) and an explicit layout. */
static void build(tdSched *s, int expl) {
  tdCollArgs a;
  memset(&a, 0, sizeof(a));
  a.coll = expl ? TD_COLL_ALLTOALLV : TD_COLL_ALLREDUCE;
  a.nranks = 5, a.rank = 3, a.root = 2, a.count = 1234;
  schedInit(s, &a, "ring2");
  schedSetLayout(s, TD_BUF_INPUT, 1, 5);
  schedSetLayout(s, TD_BUF_OUTPUT, 1, 5);
  schedSetLayout(s, TD_BUF_SCRATCH, 2, 5);
  if (expl) {
    uint64_t off[5] = {0, 4, 4, 9, 100}, cnt[5] = {4, 0, 5, 91, 1ull << 40};
    CU_ASSERT(schedSetLayoutExplicit(s, TD_BUF_OUTPUT, 5, 1, off, cnt) == tpudistSuccess);
  }
  add(s, 0, schedCopy(schedRef(TD_BUF_INPUT, 0, 5), schedRef(TD_BUF_SCRATCH, 5, 5)));
  add(s, 0, schedSend(4, schedRef(TD_BUF_SCRATCH, 5, 1)));
  add(s, 0, schedRecvReduce(2, schedRef(TD_BUF_INPUT, 1, 1), schedRef(TD_BUF_OUTPUT, 1, 1)));
  tdStep f = schedRecvReduce(2, schedRef(TD_BUF_INPUT, 2, 1), schedRef(TD_BUF_OUTPUT, 2, 1));
  f.op = TD_STEP_RECV_REDUCE_SEND, f.peer2 = 4;
  f.deps[1] = (tdDep){2, 1};
  add(s, 0, f);
  tdStep g = schedRecv(2, schedRef(TD_BUF_OUTPUT, 3, 2));
  g.op = TD_STEP_RECV_COPY_SEND, g.peer2 = 0;
  add(s, 0, g);
  add(s, 2, schedReduce(schedRef(TD_BUF_SCRATCH, 0, 1), schedRef(TD_BUF_OUTPUT, 0, 1)));
  tdStep r = schedRecv(1, schedRef(TD_BUF_SCRATCH, 9, 1));
  r.deps[0] = (tdDep){0, 4};
  add(s, 2, r); /* stream 1 stays empty */
}

static char *dump(const tdSched *s) {
  char *t = NULL, err[TD_ERRLEN] = "";
  CU_ASSERT_EQUAL(schedDumpString(s, &t, NULL, err), tpudistSuccess);
  return t;
}

/* dump -> load -> dump; returns 1 if identical. */
static int roundTrip(const tdSched *s) {
  char *a = dump(s), err[TD_ERRLEN] = "";
  if (!a) return 0;
  tdSchedReader rd;
  schedReaderInit(&rd, a, strlen(a));
  tdSched l;
  int eof = 1, same = 0;
  if (schedLoad(&rd, &l, &eof, err) == tpudistSuccess && !eof) {
    char *b = dump(&l);
    same = b && strcmp(a, b) == 0;
    if (!same) printf("\n--- first:\n%s--- second:\n%s", a, b ? b : "(null)");
    CU_ASSERT_EQUAL(l.needs_reduce, s->needs_reduce);
    free(b);
    schedFree(&l);
  } else {
    printf("\n  load failed: %s\n%s", err, a);
  }
  free(a);
  return same;
}

static void testRoundTrip(void) {
  tdSched s;
  for (int e = 0; e < 2; e++) {
    build(&s, e);
    CU_ASSERT(roundTrip(&s));
    schedFree(&s);
  }
  tdCollArgs a;
  memset(&a, 0, sizeof(a));
  a.nranks = 1;
  schedInit(&s, &a, ""); /* no algo, no streams, empty layouts */
  CU_ASSERT(roundTrip(&s));
  schedFree(&s);
}

static void testExactText(void) {
  tdSched s;
  build(&s, 1);
  char *t = dump(&s);
  const char *want =
      "tpu_dist-schedule 1\n"
      "coll alltoallv algo ring2 nranks 5 rank 3 root 2 inplace 0 count 0\n"
      "layout input 1 5\n"
      "layout-explicit output 5 1 0:4 4:0 4:5 9:91 100:1099511627776\n"
      "layout scratch 2 5\n"
      "stream 0 5\n"
      "step copy src input 0 5 dst scratch 5 5\n"
      "step send peer 4 src scratch 5 1\n"
      "step recv_reduce peer 2 src input 1 1 dst output 1 1\n"
      "step recv_reduce_send peer 2 peer2 4 src input 2 1 dst output 2 1 dep 2:1\n"
      "step recv_copy_send peer 2 peer2 0 dst output 3 2\n"
      "stream 1 0\n"
      "stream 2 2\n"
      "step reduce src scratch 0 1 dst output 0 1\n"
      "step recv peer 1 dst scratch 9 1 dep 0:4\n"
      "end\n";
  CU_ASSERT_STRING_EQUAL(t, want);
  free(t);
  schedFree(&s);
}

/* The example of docs/schedule-ir.md, with comments, blank lines and two ranks. */
static const char *docExample =
    "# a 2-rank ring all-reduce\n"
    "tpu_dist-schedule 1\n"
    "coll allreduce algo ring nranks 2 rank 0 root 0 inplace 0 count 0\n"
    "layout input 1 2\n"
    "layout output 1 2\n"
    "layout scratch 0 0\n"
    "stream 0 5\n"
    "step copy src input 0 2 dst output 0 2\n"
    "step send peer 1 src output 0 1\n"
    "step recv_reduce peer 1 src output 1 1 dst output 1 1\n"
    "step send peer 1 src output 1 1\n"
    "step recv peer 1 dst output 0 1   # the last chunk\n"
    "end\n"
    "\n"
    "tpu_dist-schedule 1\r\n"
    "coll allreduce algo ring nranks 2 rank 1 root 0 inplace 0 count 0\n"
    "layout input 1 2\n"
    "layout output 1 2\n"
    "layout scratch 0 0\n"
    "stream 0 5\n"
    "step copy src input 0 2 dst output 0 2\n"
    "step send peer 0 src output 1 1\n"
    "step recv_reduce peer 0 src output 0 1 dst output 0 1\n"
    "step send peer 0 src output 0 1\n"
    "step recv peer 0 dst output 1 1\n"
    "end\n";

static void testLoadAll(void) {
  tdSched *arr = NULL;
  int n = 0;
  char err[TD_ERRLEN] = "";
  CU_ASSERT_EQUAL_FATAL(schedLoadAll(docExample, strlen(docExample), &arr, &n, err),
                        tpudistSuccess);
  CU_ASSERT_EQUAL(n, 2);
  CU_ASSERT_EQUAL(arr[1].rank, 1);
  CU_ASSERT_EQUAL(arr[0].streams[0].nsteps, 5);
  CU_ASSERT_EQUAL(arr[0].streams[0].steps[4].op, TD_STEP_RECV);
  CU_ASSERT_EQUAL(arr[1].needs_reduce, 1);
  tdSched *p[2] = {&arr[0], &arr[1]};
  CU_ASSERT_EQUAL(validateSchedules(p, 2, 10, err), tpudistSuccess); /* and it is correct */
  for (int i = 0; i < n; i++) schedFree(&arr[i]);
  free(arr);
  CU_ASSERT_EQUAL(schedLoadAll("# nothing\n\n", 11, &arr, &n, err), tpudistInvalidArgument);
}

/* Replaces the first occurrence of `from` in the valid text by `to`; expects failure at line. */
static void bad(const char *from, const char *to, int line, const char *needle) {
  tdSched s;
  build(&s, 1);
  char *t = dump(&s), *p = strstr(t, from), err[TD_ERRLEN] = "", want[32];
  schedFree(&s);
  CU_ASSERT_PTR_NOT_NULL_FATAL(p);
  size_t len = strlen(t) + strlen(to) + 1;
  char *u = malloc(len);
  snprintf(u, len, "%.*s%s%s", (int)(p - t), t, to, p + strlen(from));
  tdSchedReader rd;
  schedReaderInit(&rd, u, strlen(u));
  int eof = 0;
  CU_ASSERT_EQUAL(schedLoad(&rd, &s, &eof, err), tpudistInvalidArgument);
  snprintf(want, sizeof(want), "line %d: ", line);
  CU_ASSERT(strncmp(err, want, strlen(want)) == 0 && strstr(err, needle));
  if (strncmp(err, want, strlen(want)) != 0 || !strstr(err, needle))
    printf("\n  '%s'->'%s': expected '%s...%s', got '%s'\n", from, to, want, needle, err);
  free(u);
  free(t);
}

static void testMalformed(void) {
  bad("tpu_dist-schedule 1", "tpu_dist-schedule 2", 1, "version 2");
  bad("tpu_dist-schedule 1", "tpu_dist-schedul 1", 1, "expected 'tpu_dist-schedule'");
  bad("alltoallv", "alltoallw", 2, "unknown collective 'alltoallw'");
  bad("nranks 5", "nranks 0", 2, "nranks '0' is not a number");
  bad("nranks 5", "nranks 99999999999999999999999", 2, "is not a number");
  bad("rank 3", "rank 5", 2, "rank '5'");
  bad("count 0", "count 0 extra", 2, "unexpected 'extra'");
  bad("count 0\n", "count -3\n", 2, "count '-3'");
  bad("algo ring2", "algo ring2ring2ring2ring2", 2, "longer than 15");
  bad("layout input 1 5", "layout output 1 5", 3, "order: input, output, scratch");
  bad("layout input 1 5", "layout input 1 0", 3, "chunks_per_block '0'");
  bad("layout input 1 5", "layout input 65536 65536", 3, "chunks, at most");
  bad("4:0 4:5", "4:0 4;5", 4, "block 2 is not offset:count");
  bad(" 100:1099511627776", "", 4, "4 of 5 offset:count pairs");
  bad("output 5 1", "output 4000000 1", 4, "the line is too short");
  bad("stream 0 5", "stream 1 5", 6, "stream 1 where stream 0 belongs");
  bad("stream 0 5", "stream 0 6", 12, "expected 'step'");
  bad("stream 2 2", "stream 2 3", 16, "expected 'step', found 'end'");
  bad("step send peer 4", "step sned peer 4", 8, "unknown step op 'sned'");
  bad("step send peer 4", "step send peer 5", 8, "peer '5'");
  bad("step send peer 4", "step send peer -1", 8, "peer '-1'");
  bad("step send peer 4 src scratch 5 1", "step send peer 4", 8, "send needs src");
  bad("step send peer 4", "step send peer 4 peer2 1", 8, "send takes no peer2");
  bad("src scratch 5 1\n", "src scratch 5 1 dst output 0 1\n", 8, "send takes no dst");
  bad("src scratch 5 1\n", "src scratch 9 2\n", 8, "beyond its 10 chunks");
  bad("src scratch 5 1\n", "src scratch 5 0\n", 8, "nchunks '0'");
  bad("src scratch 5 1\n", "src scratch 5 1 dep 0:1\n", 8, "dep on its own stream");
  bad("src scratch 5 1\n", "src scratch 5 1 dep 1:0\n", 16, "dep 1:0 names no step");
  bad("src scratch 5 1\n", "src scratch 5 1 dep 2:1 dep 2:0 dep 2:0\n", 8, "unexpected 'dep'");
  bad("dst output 1 1\n", "src input 1 1\n", 9, "unexpected 'src'");
  bad("peer 2 peer2 4", "peer2 4 peer 2", 10, "unexpected 'peer'");
  bad("step reduce src", "step reduce peer 1 src", 14, "reduce takes no peer");
  bad("dst output 1 1\n", "dst outptu 1 1\n", 9, "unknown buffer 'outptu'");
  bad("end\n", "", 15, "ends before 'end'");
  bad("end\n", "end now\n", 16, "unexpected 'now'");
  bad("stream 1 0\n", "stream 1 0\nstep copy\n", 13, "expected 'stream' or 'end'");
}

/* Random corruption: the loader either rejects with "line N: " or yields a schedule that
 * round-trips. */
static void testFuzz(void) {
  tdSched s;
  build(&s, 1);
  char *t = dump(&s);
  schedFree(&s);
  size_t n = strlen(t);
  char *u = malloc(n + 64);
  static const char pool[] = "0123456789 :#-\n\r\tabcdeinoprstu";
  uint64_t x = 88172645463325252ull;
  int ok = 0, rejected = 0;
  for (int it = 0; it < 20000; it++) {
    memcpy(u, t, n + 1);
    size_t m = n;
    for (int k = 0; k < 1 + it % 4 && m > 1; k++) {
      tdXorshift(&x);
      size_t pos = (size_t)(x % m);
      int kind = (int)((x >> 20) % 3);
      if (kind == 0) u[pos] = pool[(x >> 32) % (sizeof(pool) - 1)];
      if (kind == 1) memmove(u + pos, u + pos + 1, m - pos), m--;
      if (kind == 2 && (x >> 40) % 8 == 0) m = pos, u[m] = 0; /* truncate */
    }
    tdSchedReader rd;
    schedReaderInit(&rd, u, m);
    char err[TD_ERRLEN] = "";
    int eof = 0;
    if (schedLoad(&rd, &s, &eof, err) == tpudistSuccess) {
      if (!eof) {
        ok++;
        CU_ASSERT(roundTrip(&s));
        schedFree(&s);
      }
    } else {
      rejected++;
      CU_ASSERT(strncmp(err, "line ", 5) == 0);
    }
  }
  CU_ASSERT(ok > 0 && rejected > 0);
  free(u);
  free(t);
}

int main(void) {
  CU_TestInfo tests[] = {
      {"round trip", testRoundTrip},
      {"exact text", testExactText},
      {"load all (doc example)", testLoadAll},
      {"malformed", testMalformed},
      {"fuzz", testFuzz},
      CU_TEST_INFO_NULL,
  };
  return tdCUnitMain("sched-io", tests);
}
