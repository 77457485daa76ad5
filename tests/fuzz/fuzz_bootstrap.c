/*
 * fuzz_bootstrap.c - fuzz target over the bootstrap's wire checks (src/bootstrap/bootstrap.c): the
 * first input byte picks the message, the rest is what a peer sent:
 *   0  a rendezvous hello, checked against a fixed secret, this version and 4 ranks
 *   1  the root's reply to a hello (4 ranks)
 *   2  a unique id (128 bytes, zero padded)
 *   3  a listen address from the address table
 * Every accepted message must also satisfy what the callers rely on (rank in range, a valid
 * address); a violation aborts, which the fuzzer reports. Built with clang -fsanitize=fuzzer by
 * tests/fuzz/run.sh; replay.c runs the committed corpus under gcc in the normal test run.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap.h"
#include "net.h"

#define FUZZ_SECRET 0x5ec12e7f00d5eedull
#define FUZZ_NRANKS 4

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[TD_ERRLEN];
  if (size < 1) return 0;
  const uint8_t *m = data + 1;
  size_t n = size - 1;
  switch (data[0] % 4) {
    case 0: {
      int rank = -1;
      uint32_t kind = 0;
      uint64_t tag = 0;
      tdNetAddr addr;
      tdHelloVerdict v = bootstrapHelloCheck(m, n, FUZZ_SECRET, TPUDIST_VERSION_CODE, FUZZ_NRANKS,
                                             &rank, &kind, &tag, &addr, err);
      if (v == TD_HELLO_OK && (rank < 1 || rank >= FUZZ_NRANKS ||
                               bootstrapAddrCheck(&addr, sizeof(addr), err) != tpudistSuccess))
        abort();
      if (v == TD_HELLO_FATAL && !err[0]) abort(); /* a fatal verdict always says why */
      break;
    }
    case 1: {
      uint64_t nonce = 0;
      tpudistResult_t r = bootstrapReplyCheck(m, n, FUZZ_NRANKS, &nonce, err);
      if (r != tpudistSuccess && (r <= tpudistSuccess || r >= tpudistNumResults || !err[0]))
        abort();
      break;
    }
    case 2: {
      tpudistUniqueId id;
      memset(&id, 0, sizeof(id));
      memcpy(id.internal, m, n < sizeof(id) ? n : sizeof(id));
      bootstrapIdCheck(&id, err);
      break;
    }
    default:
      if (bootstrapAddrCheck(m, n, err) == tpudistSuccess) {
        tdNetAddr a;
        char buf[64];
        memcpy(&a, m, sizeof(a));
        netAddrStr(&a, buf, sizeof(buf));
        if (!memchr(buf, 0, sizeof(buf))) abort();
      }
      break;
  }
  return 0;
}
