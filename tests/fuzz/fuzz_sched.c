/*
 * fuzz_sched.c - fuzz target over the schedule text loader (collectives/ir/sched_io.c), the parser
 * of TPU_DIST_SCHED_FILE: the input is the file's text. Whatever loads must dump back to text that
 * loads again into the same schedules (dump(load(dump(s))) == dump(s)), and a rejected text must
 * say why ("line N: ..."); a violation aborts. Built with clang -fsanitize=fuzzer by
 * tests/fuzz/run.sh; replay.c runs the committed corpus under gcc.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sched_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void freeAll(tdSched *s, int n) {
  for (int i = 0; i < n; i++) schedFree(&s[i]);
  free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[TD_ERRLEN] = "";
  tdSched *all = NULL, *again = NULL;
  int n = 0, m = 0;
  if (schedLoadAll((const char *)data, size, &all, &n, err) != tpudistSuccess) {
    if (!err[0]) abort(); /* a rejection always says why */
    return 0;
  }
  for (int i = 0; i < n; i++) {
    char *t1 = NULL, *t2 = NULL;
    size_t l1 = 0, l2 = 0;
    if (schedDumpString(&all[i], &t1, &l1, err) != tpudistSuccess) continue; /* not expressible */
    if (schedLoadAll(t1, l1, &again, &m, err) != tpudistSuccess || m != 1) abort();
    if (schedDumpString(&again[0], &t2, &l2, err) != tpudistSuccess) abort();
    if (l1 != l2 || memcmp(t1, t2, l1) != 0) abort();
    freeAll(again, m);
    free(t1);
    free(t2);
  }
  freeAll(all, n);
  return 0;
}
