/*
 * perf_tool.c - main() of one *_perf tool; PERF_COLL names its collective (set per program by
 * bench/Makefile.inc).
 */
#include "perf.h"

extern const perfColl PERF_COLL;

int main(int argc, char **argv) {
  return perfMain(argc, argv, &PERF_COLL);
}
