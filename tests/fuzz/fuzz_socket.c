/*
 * fuzz_socket.c - fuzz target over what a peer can send the socket transport
 * (src/transport/socket), through the real code paths: first byte even: the byte stream of an
 * authenticated connection, fed through the full receive path (header checks, matching against
 * posted receives, unexpected messages, reducing receives, length mismatches, a connection cut
 * short). Rank 0 of a real 2-rank communicator (socket transport, built once over a bootstrap with
 * rank 1 in a thread) adopts one end of a socketpair as its connection with rank 1 (sockTestAdopt);
 * the input goes in the other end. The next byte says how many receives to post before and after
 * the bytes arrive (bits 0-1, 2-3) and whether they reduce (bit 4, float32 sum); one byte per
 * receive picks its key (sequence 0-3) and length (0, 4, 64 or 4096 bytes); the rest is the stream.
 *   first byte odd: a connection's first bytes at the listener: a hello, then a proof, checked
 *     against a fixed communicator hash and key as rank 0 of 4.
 * Invariants (a violation aborts): once the stream has ended every receive is done (no hang), a
 * successful copy receive holds exactly the bytes of a frame, an accepted hello names a valid
 * other rank, and a proof is accepted only if it is the HMAC the initiator computes. Built with
 * clang -fsanitize=fuzzer by tests/fuzz/run.sh; replay.c runs the committed corpus under gcc.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bootstrap.h"
#include "net.h"
#include "registry.h"
#include "rt_config.h"
#include "socket_priv.h"

#define FUZZ_HASH 0x0123456789abcdefull
#define FUZZ_MAX_RX 6

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static tdNet *gComm, *gPeer;
static tdConfig gCfg;
static tpudistUniqueId gId;

static void *rank1(void *arg) {
  char err[TD_ERRLEN];
  tdBootstrap *bs;
  (void)arg;
  if (bootstrapInit(&gId, 1, 2, 30000, NULL, &bs, err) != tpudistSuccess ||
      transportTestComm(bs, &gCfg, &gPeer, err) != tpudistSuccess) {
    fprintf(stderr, "fuzz_socket: rank 1: %s\n", err);
    abort();
  }
  return NULL;
}

static void setup(void) {
  char err[TD_ERRLEN];
  tdBootstrap *bs;
  pthread_t t;
  gCfg = *configGet();
  gCfg.transports = "socket";
  gCfg.socket_ifname = "lo";
  if (bootstrapGetUniqueId(&gId, NULL, err) != tpudistSuccess) abort();
  pthread_create(&t, NULL, rank1, NULL);
  if (bootstrapInit(&gId, 0, 2, 30000, NULL, &bs, err) != tpudistSuccess ||
      transportTestComm(bs, &gCfg, &gComm, err) != tpudistSuccess) {
    fprintf(stderr, "fuzz_socket: rank 0: %s\n", err);
    abort();
  }
  pthread_join(t, NULL);
}

static void postRecvs(tdXfer *x, int n, const uint8_t *sel, int reduce, char (*buf)[4096]) {
  static const size_t lens[4] = {0, 4, 64, 4096};
  static const float zeros[1024];
  for (int i = 0; i < n; i++) {
    memset(&x[i], 0, sizeof(x[i]));
    x[i].peer = 1;
    x[i].key = (tdMsgKey){sel[i] & 3u, 0, 0, 0};
    x[i].buf = buf[i];
    x[i].len = lens[(sel[i] >> 2) & 3u];
    if (reduce) {
      x[i].reduce_src = zeros;
      x[i].dtype = tpudistFloat32;
      x[i].op = tpudistSum;
    }
    memset(buf[i], 0xa5, sizeof(buf[i]));
    transportPostRecv(gComm, &x[i]); /* an error completes x */
  }
}

/* 1 if some frame of the stream carries exactly the n bytes at b (key k). */
static int inStream(const uint8_t *s, size_t len, const tdMsgKey *k, const void *b, size_t n) {
  size_t off = 0;
  while (len - off >= TD_SOCK_HDR_BYTES) {
    tdMsgKey key;
    uint64_t mlen;
    size_t poff, plen;
    int part, nparts;
    char err[TD_ERRLEN];
    if (sockHeaderCheck(s + off, TD_SOCK_HDR_BYTES, &key, &mlen, &part, &nparts, err) !=
        tpudistSuccess)
      return 0;
    off += TD_SOCK_HDR_BYTES;
    sockPartRange((size_t)mlen, nparts, part, &poff, &plen); /* a part's payload */
    if (plen > len - off) return 0;
    /* one stream carries one part of a message: only a whole frame completes a receive here */
    if (nparts == 1 && keyEq(&key, k) && plen == n && memcmp(s + off, b, n) == 0) return 1;
    off += plen;
  }
  return 0;
}

static void feedStream(const uint8_t *data, size_t size) {
  static char buf[2 * FUZZ_MAX_RX][4096];
  tdXfer x[2 * FUZZ_MAX_RX];
  if (size < 1) return;
  int nb = data[0] & 3, na = (data[0] >> 2) & 3, reduce = (data[0] >> 4) & 1;
  if (size < 1 + (size_t)(nb + na)) return;
  const uint8_t *sel = data + 1, *s = data + 1 + nb + na;
  size_t slen = size - 1 - (size_t)(nb + na), sent = 0;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) abort();
  netSetNonBlocking(sv[0]);
  netSetNonBlocking(sv[1]);
  sockTestAdopt(gComm, 1, sv[0]);
  postRecvs(x, nb, sel, reduce, buf);
  int wfd = sv[1];
  for (int it = 0; sockTestPeerOpen(gComm, 1); it++) {
    if (it > 100000) abort(); /* the stream has ended: the connection must close */
    if (sent < slen) {
      ssize_t n = send(wfd, s + sent, slen - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n > 0) sent += (size_t)n;
    }
    if (sent == slen && wfd >= 0) { /* all written: the peer closes */
      close(wfd);
      wfd = -1;
    }
    int progressed = 0;
    transportProgressAll(gComm, &progressed);
  }
  if (wfd >= 0) close(wfd);
  postRecvs(x + nb, na, sel + nb, reduce, buf + nb);
  for (int i = 0; i < nb + na; i++) {
    if (!x[i].done) abort(); /* would wait forever */
    if (x[i].result == tpudistSuccess && !reduce && !inStream(s, slen, &x[i].key, buf[i], x[i].len))
      abort();
  }
}

static void checkHandshake(const uint8_t *data, size_t size) {
  static const tdKey key = {{1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
                             17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32}};
  static const uint8_t nonce[TD_NONCE_BYTES] = {0x42};
  int from = -1, stream = -1, nstreams = 0;
  if (size < TD_SOCK_HELLO_BYTES) return;
  if (!sockHelloCheck(data, TD_SOCK_HELLO_BYTES, FUZZ_HASH, 0, 4, &from, &stream, &nstreams))
    return;
  if (from < 1 || from >= 4 || nstreams < 1 || nstreams > TD_SOCK_MAX_STREAMS || stream < 0 ||
      stream >= nstreams)
    abort();
  if (size < TD_SOCK_HELLO_BYTES + TD_MAC_BYTES) return;
  const uint8_t *proof = data + TD_SOCK_HELLO_BYTES;
  uint8_t want[TD_MAC_BYTES];
  authProof(&key, TD_SOCK_LABEL_INIT, data, TD_SOCK_HELLO_BYTES, nonce, 0, want);
  if (sockProofCheck(&key, data, nonce, proof) != (memcmp(want, proof, TD_MAC_BYTES) == 0)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int ready;
  if (!ready) {
    setup();
    ready = 1;
  }
  if (size < 1) return 0;
  if (data[0] & 1)
    checkHandshake(data + 1, size - 1);
  else
    feedStream(data + 1, size - 1);
  return 0;
}
