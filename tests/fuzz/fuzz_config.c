/*
 * fuzz_config.c - fuzz target over the parsers of configuration values that are more than a
 * number: the first byte picks the variable, the rest is its value.
 *   0  TPU_DIST_ALGO ("allreduce=torus,alltoall=pairwise"): the selection table of 8 ranks on a
 *      2x4 torus (or flat, by the second byte) with this override
 *   1  TPU_DIST_TOPOLOGY with TPU_DIST_ALGO: "SPEC;OVERRIDE" through selectPrintTopology, what
 *      `tpudist-info -s` runs
 * An accepted override must force what it names (selectOverride); a rejection must say why. A
 * violation aborts. Built with clang -fsanitize=fuzzer by tests/fuzz/run.sh; replay.c runs the
 * committed corpus under gcc.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "select.h"
#include "torus.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char buf[1024], err[TD_ERRLEN] = "";
  if (size < 2 || size > sizeof(buf)) return 0;
  memcpy(buf, data + 2, size - 2);
  buf[size - 2] = 0;
  if (data[0] % 2 == 0) {
    tdTopo t;
    int dims[2] = {2, 4}, wrap[2] = {0, 1};
    if (data[1] & 1)
      topoInitFlat(&t, 8);
    else if (topoInit(&t, 2, dims, wrap, 0, err) != tpudistSuccess)
      abort();
    tdSelectTable *tab = NULL;
    tpudistResult_t r = selectBuild(&t, 8, buf, NULL, &tab, err);
    if (r != tpudistSuccess) {
      if (!err[0]) abort();
      return 0;
    }
    for (int c = 0; c < TD_NUM_COLLS; c++) {
      const char *names[TD_SELECT_MAX_CANDIDATES];
      const char *o = selectOverride(tab, (tdColl)c);
      int n = selectCandidates(tab, (tdColl)c, 4096, names, TD_SELECT_MAX_CANDIDATES);
      if (o && (n < 1 || strcmp(names[0], o) != 0)) abort();
    }
    selectFree(tab);
    return 0;
  }
  char *semi = strchr(buf, ';');
  if (semi) *semi++ = 0;
  FILE *devnull = fopen("/dev/null", "w");
  if (!devnull) return 0;
  tpudistResult_t r = selectPrintTopology(buf, data[1] % 16 + 1, semi, devnull, err);
  fclose(devnull);
  if (r != tpudistSuccess && !err[0]) abort();
  return 0;
}
