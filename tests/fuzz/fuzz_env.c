/*
 * fuzz_env.c - fuzz target over the values a user puts in the environment that no other target
 * parses: the first byte picks what the rest is.
 *   even  a row of the configuration table (the second byte picks the row, the rest is its
 *         value): the row's parser must accept it (an integer row then holds a value inside the
 *         row's range) or reject it with a reason naming the variable
 *   odd   TPU_DIST_COMM_ID's host:port (netSplitHostPort, the syntax; the name lookup is the C
 *         library's and is not run here, so nothing leaves the machine): an accepted address has a
 *         host of 1..255 bytes with no ']' where the text was bracketed, and a port of 1..65535
 *         that prints back as the text's port; a rejection gives a reason
 * A violation aborts. Built with clang -fsanitize=fuzzer by tests/fuzz/run.sh; replay.c runs the
 * committed corpus under gcc.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net.h"
#include "rt_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The row's parser runs twice, over a field area filled with 0x00 and with 0xff: the bytes it
 * wrote are those alike in both, which tells an int row from a long one without a type column. */
static void fuzzConfigRow(unsigned pick, const char *text) {
  int rows = 0;
  while (tdConfigTable[rows].name) rows++;
  const tdConfigVar *v = &tdConfigTable[pick % (unsigned)rows];
  union {
    tdConfig cfg;
    unsigned char raw[sizeof(tdConfig) + sizeof(long long)];
  } zero, ones;
  memset(&zero, 0, sizeof(zero));
  memset(&ones, 0xff, sizeof(ones));
  char err[TD_ERRLEN] = "", err2[TD_ERRLEN] = "";
  int r0 = v->parse(v, text, zero.raw + v->offset, err);
  int r1 = v->parse(v, text, ones.raw + v->offset, err2);
  if (r0 != r1) abort(); /* a parser depends on nothing but the text */
  if (r0 != 0) {
    if (!strstr(err, v->name)) abort(); /* a rejection names the variable */
    return;
  }
  if (v->min == 0 && v->max == 0) return; /* not an integer row */
  const unsigned char *f0 = zero.raw + v->offset, *f1 = ones.raw + v->offset;
  long long x;
  if (!memcmp(f0, f1, sizeof(long)))
    x = *(const long *)(const void *)f0;
  else if (!memcmp(f0, f1, sizeof(int)))
    x = *(const int *)(const void *)f0;
  else
    abort(); /* an integer row writes an int or a long */
  if (x < v->min || x > v->max) abort();
}

static void fuzzHostPort(const char *text) {
  char host[256], err[TD_ERRLEN] = "";
  uint16_t port = 0;
  if (netSplitHostPort(text, host, sizeof(host), &port, err) != tpudistSuccess) {
    if (!err[0]) abort();
    return;
  }
  size_t hl = strlen(host);
  if (hl == 0 || hl >= sizeof(host) || port == 0) abort();
  if (text[0] == '[' && strchr(host, ']')) abort();
  const char *colon = strrchr(text, ':');
  if (!colon || strtol(colon + 1, NULL, 10) != port) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char buf[1024];
  if (size < 2 || size > sizeof(buf)) return 0;
  memcpy(buf, data + 2, size - 2);
  buf[size - 2] = 0;
  if (data[0] % 2 == 0)
    fuzzConfigRow(data[1], buf);
  else
    fuzzHostPort(buf);
  return 0;
}
