/*
 * sched_io.h - schedules to and from the versioned text format (v1) of docs/schedule-ir.md,
 * "Text format". Dump -> load -> dump is byte-identical. The loader checks the grammar and every
 * number's bounds (peers within nranks, refs within their layout, deps naming existing steps of
 * other streams) and names the line of the first problem; it never trusts a count before
 * bounding it. Pure: no environment, no logging.
 */
#ifndef TD_SCHED_IO_H_
#define TD_SCHED_IO_H_

#include <stdio.h>

#include "sched_ir.h"

#define TD_SCHED_IO_MAX_NRANKS (1 << 24)
#define TD_SCHED_IO_MAX_STEPS (1u << 26)  /* per stream */
#define TD_SCHED_IO_MAX_CHUNKS (1u << 30) /* nblocks * chunks_per_block per buffer */

/* Writes s to f. tpudistSystemError if writing fails, tpudistInvalidArgument if s cannot be
 * expressed (an algo name with spaces, an op out of range). */
tpudistResult_t schedDump(const tdSched *s, FILE *f, char *err);
/* The same into a malloc'ed NUL-terminated string (*len its length, may be NULL). */
tpudistResult_t schedDumpString(const tdSched *s, char **out, size_t *len, char *err);

/* Reads schedules one after another from a text held in memory. */
typedef struct {
  const char *p, *end;
  int line; /* number of the last line read */
} tdSchedReader;

void schedReaderInit(tdSchedReader *rd, const char *text, size_t len);
/* Parses the next schedule into s (schedFree it after use). At the end of the text (only blank
 * lines and comments left) returns tpudistSuccess with *eof = 1 and s zeroed. Malformed text:
 * tpudistInvalidArgument with "line N: what is wrong" in err, s left zeroed. */
tpudistResult_t schedLoad(tdSchedReader *rd, tdSched *s, int *eof, char *err);
/* Parses a whole text holding one or more schedules (e.g. one per rank): *out is a malloc'ed
 * array of *n schedules (free each with schedFree, then the array). */
tpudistResult_t schedLoadAll(const char *text, size_t len, tdSched **out, int *n, char *err);

#endif /* TD_SCHED_IO_H_ */
