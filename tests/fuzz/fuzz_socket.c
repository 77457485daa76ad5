/*
 * fuzz_socket.c - fuzz target over the socket transport's wire checks (src/transport/socket): the
 * input is the byte stream a peer sends on a new connection: a hello (checked against a fixed
 * communicator hash and secret, as rank 0 of 4), then frames {header, payload}. Each header goes
 * through sockHeaderCheck; a rejected header ends the stream as the transport would drop the
 * connection. Accepted headers must announce at most TD_SOCK_MAX_MSG bytes and a hello must name a
 * valid other rank; a violation aborts. Built with clang -fsanitize=fuzzer by tests/fuzz/run.sh;
 * replay.c runs the committed corpus under gcc in the normal test run.
 */
#include <stdint.h>
#include <stdlib.h>

#include "socket.h"

#define FUZZ_HASH 0x0123456789abcdefull
#define FUZZ_SECRET 0x5ec12e7f00d5eedull

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[TD_ERRLEN];
  int from = -1;
  if (size < TD_SOCK_HELLO_BYTES) return 0;
  if (sockHelloCheck(data, TD_SOCK_HELLO_BYTES, FUZZ_HASH, FUZZ_SECRET, 0, 4, &from) &&
      (from < 1 || from >= 4))
    abort();
  size_t off = TD_SOCK_HELLO_BYTES;
  while (size - off >= TD_SOCK_HDR_BYTES) {
    tdMsgKey key;
    uint64_t len = 0;
    if (sockHeaderCheck(data + off, TD_SOCK_HDR_BYTES, &key, &len, err) != tpudistSuccess) {
      if (!err[0]) abort();
      break;
    }
    if (len > TD_SOCK_MAX_MSG) abort();
    off += TD_SOCK_HDR_BYTES;
    off += len < size - off ? (size_t)len : size - off; /* the payload, or what is left */
  }
  /* a header cut short is refused too */
  if (size - off > 0 && sockHeaderCheck(data + off, size - off, &(tdMsgKey){0}, &(uint64_t){0},
                                        err) == tpudistSuccess)
    abort();
  return 0;
}
