/*
 * fuzz_bootstrap.c - fuzz target over the bootstrap's wire checks (src/bootstrap): the first input
 * byte picks the message, the rest is what a peer sent:
 *   0  a rendezvous hello (after its proof), checked against this version and 4 ranks
 *   1  the root's challenge
 *   2  the root's reply to a joining rank (4 ranks), against a fixed key and a transcript: the
 *      first 120 bytes are the transcript (hello + challenge nonce), the rest the reply
 *   3  a unique id (128 bytes, zero padded)
 *   4  a listen address from the address table
 *   5  a rank's proof: transcript (120 bytes) then the 32-byte HMAC, checked as the root does
 * Every accepted message must also satisfy what the callers rely on (rank in range, a valid
 * address, a success reply only with the root's true proof); a violation aborts, which the fuzzer
 * reports. Built with clang -fsanitize=fuzzer by tests/fuzz/run.sh; replay.c runs the committed
 * corpus under gcc in the normal test run.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "boot_priv.h"

#define FUZZ_NRANKS 4

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const tdKey gKey = {{0x5e, 0xc1, 0x2e, 0x7f, 0x00, 0xd5, 0xee, 0xd0, 1,  2,  3,
                            4,    5,    6,    7,    8,    9,    10,   11,   12, 13, 14,
                            15,   16,   17,   18,   19,   20,   21,   22,   23, 24}};

static void checkHello(const uint8_t *m, size_t n) {
  char err[TD_ERRLEN] = "";
  int rank = -1;
  uint32_t kind = 0;
  uint64_t tag = 0;
  tdNetAddr addr;
  tdHelloVerdict v =
      bootstrapHelloCheck(m, n, TPUDIST_VERSION_CODE, FUZZ_NRANKS, &rank, &kind, &tag, &addr, err);
  if (v == TD_HELLO_OK && (rank < 1 || rank >= FUZZ_NRANKS ||
                           bootstrapAddrCheck(&addr, sizeof(addr), err) != tpudistSuccess))
    abort();
  if (v == TD_HELLO_FATAL && !err[0]) abort(); /* a fatal verdict always says why */
}

static void checkReply(const uint8_t *m, size_t n) {
  char err[TD_ERRLEN] = "";
  tdBootTranscript tr;
  tdReply rep;
  uint64_t nonce = 0;
  if (n < sizeof(tr)) return;
  memcpy(&tr, m, sizeof(tr));
  tpudistResult_t r = bootstrapReplyCheck(m + sizeof(tr), n - sizeof(tr), FUZZ_NRANKS, &gKey, &tr,
                                          sizeof(tr), &nonce, err);
  if (r != tpudistSuccess && (r <= tpudistSuccess || r >= tpudistNumResults || !err[0])) abort();
  if (r == tpudistSuccess) { /* only the root's true proof passes */
    memcpy(&rep, m + sizeof(tr), sizeof(rep));
    bootReplyMac(&gKey, &tr, &rep);
    if (memcmp(rep.mac, m + sizeof(tr) + offsetof(tdReply, mac), TD_MAC_BYTES) != 0) abort();
  }
}

static void checkProof(const uint8_t *m, size_t n) {
  uint8_t want[TD_MAC_BYTES];
  if (n != sizeof(tdBootTranscript) + TD_MAC_BYTES) return;
  authMac(&gKey, TD_BOOT_LABEL_RANK, m, sizeof(tdBootTranscript), NULL, 0, want);
  int ok = authEqual(want, m + sizeof(tdBootTranscript), TD_MAC_BYTES);
  if (ok != (memcmp(want, m + sizeof(tdBootTranscript), TD_MAC_BYTES) == 0)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[TD_ERRLEN];
  if (size < 1) return 0;
  const uint8_t *m = data + 1;
  size_t n = size - 1;
  switch (data[0] % 6) {
    case 0:
      checkHello(m, n);
      break;
    case 1: {
      uint8_t nonce[TD_NONCE_BYTES];
      if (bootstrapChallengeCheck(m, n, nonce, err) == tpudistSuccess &&
          (n != sizeof(tdChallenge) || memcmp(nonce, m + 8, sizeof(nonce)) != 0))
        abort();
      break;
    }
    case 2:
      checkReply(m, n);
      break;
    case 3: {
      tpudistUniqueId id;
      memset(&id, 0, sizeof(id));
      memcpy(id.internal, m, n < sizeof(id) ? n : sizeof(id));
      bootstrapIdCheck(&id, err);
      break;
    }
    case 4:
      if (bootstrapAddrCheck(m, n, err) == tpudistSuccess) {
        tdNetAddr a;
        char buf[64];
        memcpy(&a, m, sizeof(a));
        netAddrStr(&a, buf, sizeof(buf));
        if (!memchr(buf, 0, sizeof(buf))) abort();
      }
      break;
    default:
      checkProof(m, n);
      break;
  }
  return 0;
}
