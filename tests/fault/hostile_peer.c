/*
 * hostile_peer.c - an attacker without the job's secret, for tests/fault/hostile.sh. It knows the
 * protocol (it links the library's wire definitions) and can reach the ports; every attack must be
 * refused, within the handshake deadline, while the real job runs.
 *   hostile_peer rendezvous HOST:PORT IDLE HOLD_MS
 *       at a TPU_DIST_COMM_ID rendezvous point, before the ranks join: garbage, a wrong secret (a
 *       well-formed hello with a made-up proof), a reflected challenge (the root's nonce sent
 *       back as the proof), a hello followed by a frame header announcing 1 TiB, a never-finished
 *       handshake, a slow sender (one byte every 200 ms) and IDLE idle connections held HOLD_MS.
 *   hostile_peer record FILE PORTSFILE
 *       records the first socket-transport hello and proof a real rank of the job sends to one of
 *       the job's listeners (their ports: PORTSFILE, written by the job's rank 0; AF_PACKET on lo:
 *       needs CAP_NET_RAW) into FILE.
 *   hostile_peer sockets FILE IDLE HOLD_MS PORT...
 *       replays the recorded hello and proof to the listener they were sent to, reflects its
 *       challenge, sends a wrong proof and an oversized header there, then a slow sender, a
 *       never-finished handshake and IDLE idle connections over every listener PORT (127.0.0.1).
 *   hostile_peer intrude HOLD_MS HOST:PORT...
 *       an intruder on another host (tests/cluster/run.sh): at every listener of a running job at
 *       once (bootstrap, agreement, socket transport, status: whatever listens), garbage, a
 *       bootstrap hello and a socket-transport hello (a guessed communicator) each followed by a
 *       made-up proof; refused when the listener closes within HOLD_MS, never having answered
 *       success or a verdict; "unserved" (not a failure here: the caller judges) when the
 *       connection stays open without one byte answered (a listener that accepts nothing now).
 * Prints one line per attack ("refused: ..." or "NOT REFUSED: ...") and exits 0 only if every
 * attack was refused.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "boot_priv.h"
#include "net.h"
#include "socket_priv.h"

static int gFailed;

static void verdict(int refused, const char *what, const char *how) {
  printf("hostile_peer: %s: %s (%s)\n", refused ? "refused" : "NOT REFUSED", what, how);
  if (!refused) gFailed++;
}

static int dial(const tdNetAddr *a) {
  char err[TD_ERRLEN];
  int fd = -1;
  if (netConnectRetry(a, netNowMs() + 10000, NULL, &fd, err) != tpudistSuccess) {
    fprintf(stderr, "hostile_peer: connect: %s\n", err);
    return -1;
  }
  return fd;
}

/* Reads until the peer closes or deadline; returns bytes read before the close, -1 on timeout
 * (*got, if not NULL: the bytes read either way). */
static long readAnswer(int fd, int64_t deadline, void *first, size_t first_len, long *got) {
  char buf[4096];
  long total = 0;
  for (;;) {
    int64_t left = deadline - netNowMs();
    if (got) *got = total;
    if (left <= 0) return -1;
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, (int)TD_MIN(left, 100)) <= 0) continue;
    ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) return total;
    if (n < 0) continue;
    if (first && (size_t)total < first_len)
      memcpy((char *)first + total, buf, TD_MIN((size_t)n, first_len - (size_t)total));
    total += n;
  }
}

static long readUntilClosed(int fd, int64_t deadline, void *first, size_t first_len) {
  return readAnswer(fd, deadline, first, first_len, NULL);
}

static void sendAll(int fd, const void *b, size_t n) {
  char err[TD_ERRLEN];
  netSendAll(fd, b, n, netNowMs() + 5000, NULL, "target", err);
}

/* ---- the bootstrap rendezvous point ------------------------------------------------------ */

static tdHello bootHello(void) {
  tdHello h;
  memset(&h, 0, sizeof(h));
  h.magic = TD_BOOT_MAGIC;
  h.version = TPUDIST_VERSION_CODE;
  h.kind = TD_HELLO_INIT;
  h.rank = 1;
  h.nranks = 8;
  h.addr.family = AF_INET;
  h.addr.port = 9;
  for (size_t i = 0; i < sizeof(h.nonce); i++) h.nonce[i] = (uint8_t)rand();
  return h;
}

/* A hello, then proof (NULL: the challenge's own nonce, reflected); 1 if rejected. */
static int bootProof(const tdNetAddr *a, const void *proof, size_t plen, char *how) {
  tdHello h = bootHello();
  tdChallenge ch;
  tdReply rep;
  int fd = dial(a), rejected = 0;
  if (fd < 0) return 0;
  sendAll(fd, &h, sizeof(h));
  char err[TD_ERRLEN];
  if (netRecvAll(fd, &ch, sizeof(ch), netNowMs() + 5000, NULL, "root", err) == tpudistSuccess) {
    sendAll(fd, proof ? proof : ch.nonce, proof ? plen : sizeof(ch.nonce));
    long n = readUntilClosed(fd, netNowMs() + 5000, &rep, sizeof(rep));
    rejected = n >= (long)sizeof(rep) && rep.status == tpudistInvalidUsage;
    snprintf(how, 128, "%s", rejected ? "answered 'rejected: wrong secret', closed" : "?");
  }
  close(fd);
  return rejected;
}

typedef struct {
  tdNetAddr a;
  size_t len; /* bytes of a well-formed hello sent one every 200 ms */
  const void *bytes;
  long closed_after_ms;
} tdSlow;

static void *slowSender(void *arg) {
  tdSlow *s = arg;
  int fd = dial(&s->a);
  int64_t t0 = netNowMs();
  s->closed_after_ms = -1;
  if (fd < 0) return NULL;
  for (size_t i = 0; i < s->len; i++) {
    if (send(fd, (const char *)s->bytes + i, 1, MSG_NOSIGNAL) != 1) break;
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 200) > 0) {
      char c;
      if (recv(fd, &c, 1, MSG_DONTWAIT) <= 0) break;
    }
  }
  if (readUntilClosed(fd, t0 + 30000, NULL, 0) >= 0) s->closed_after_ms = (long)(netNowMs() - t0);
  close(fd);
  return NULL;
}

/* Opens n idle connections spread over the targets (as many as the descriptor limit allows);
 * returns how many are open, fds in out. */
static int openIdle(const tdNetAddr *targets, int ntargets, int n, int *out) {
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur < (rlim_t)n + 64) {
    fprintf(stderr, "hostile_peer: ulimit -n is %ld: %ld idle connections\n", (long)rl.rlim_cur,
            (long)rl.rlim_cur - 64);
    n = (int)rl.rlim_cur - 64;
  }
  int k = 0;
  char err[TD_ERRLEN];
  for (int i = 0; i < n; i++)
    if (netConnectStart(&targets[i % ntargets], &out[k], err) == tpudistSuccess) k++;
  return k;
}

/* 1 if every idle connection was closed by the target before deadline (bounded descriptors). */
static int idleAllClosed(int *fds, int n, int64_t deadline, int *still_open) {
  struct pollfd *p = calloc((size_t)n + 1, sizeof(*p));
  int open = n;
  for (int i = 0; i < n; i++) p[i] = (struct pollfd){fds[i], POLLIN, 0};
  while (open > 0 && netNowMs() < deadline) {
    if (poll(p, (nfds_t)n, 200) <= 0) continue;
    for (int i = 0; i < n; i++) {
      if (p[i].fd < 0 || !p[i].revents) continue;
      char c;
      ssize_t r = recv(fds[i], &c, 1, MSG_DONTWAIT);
      if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
        p[i].fd = -1; /* closed by the target */
        open--;
      }
    }
  }
  for (int i = 0; i < n; i++) close(fds[i]);
  free(p);
  *still_open = open;
  return open == 0;
}

/* A slow sender and a never-finished handshake at once (threads), then whether every idle
 * connection in fds was closed within hold_ms; frees fds. Returns the program's status. */
static int slowAndIdle(tdSlow *slow, tdSlow *stall, int *fds, int nidle, int hold_ms) {
  char how[128];
  pthread_t t1, t2;
  pthread_create(&t1, NULL, slowSender, slow);
  pthread_create(&t2, NULL, slowSender, stall);
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  snprintf(how, sizeof(how), "closed after %ld ms", slow->closed_after_ms);
  verdict(slow->closed_after_ms >= 0, "a slow sender (1 byte / 200 ms)", how);
  snprintf(how, sizeof(how), "closed after %ld ms", stall->closed_after_ms);
  verdict(stall->closed_after_ms >= 0, "a never-finished handshake", how);
  int open = 0;
  int ok = idleAllClosed(fds, nidle, netNowMs() + hold_ms, &open);
  snprintf(how, sizeof(how), "%d of %d still open after %d ms", open, nidle, hold_ms);
  verdict(ok, "idle connections", how);
  free(fds);
  return gFailed ? 1 : 0;
}

static int modeRendezvous(const char *hostport, int idle, int hold_ms) {
  tdNetAddr a;
  char err[TD_ERRLEN], how[128] = "", junk[65536];
  if (netParseHostPort(hostport, &a, err) != tpudistSuccess) return 2;
  srand((unsigned)getpid());
  for (size_t i = 0; i < sizeof(junk); i++) junk[i] = (char)rand();
  /* garbage: dropped without an answer */
  int fd = dial(&a);
  sendAll(fd, junk, 256);
  verdict(readUntilClosed(fd, netNowMs() + 10000, NULL, 0) == 0, "garbage", "closed, no answer");
  close(fd);
  uint8_t made_up[TD_MAC_BYTES];
  memcpy(made_up, junk, sizeof(made_up));
  verdict(bootProof(&a, made_up, sizeof(made_up), how), "a wrong secret", how);
  verdict(bootProof(&a, NULL, 0, how), "a reflected challenge", how);
  /* a frame header announcing 1 TiB where the proof goes, then 64 KiB of junk */
  uint64_t hdr[4] = {1, 0, 0, 1ull << 40};
  memcpy(junk, hdr, sizeof(hdr));
  verdict(bootProof(&a, junk, sizeof(junk), how), "an oversized header", how);
  /* a flood of idle connections, a slow sender and a never-finished handshake, while the ranks
   * join: dropped when the table is full or at the handshake deadline */
  int *fds = calloc((size_t)idle + 1, sizeof(int));
  int nidle = openIdle(&a, 1, idle, fds);
  printf("hostile_peer: %d idle connections to the rendezvous point\n", nidle);
  tdHello h = bootHello();
  tdSlow slow = {a, sizeof(h), &h, -1}, stall = {a, sizeof(h) / 2, &h, -1};
  return slowAndIdle(&slow, &stall, fds, nidle, hold_ms);
}

/* ---- socket-transport listeners ---------------------------------------------------------- */

typedef struct {
  uint16_t dport;
  tdSockHello hello;
  uint8_t proof[TD_MAC_BYTES];
} tdRecorded;

/* 1 if port is one of the job's listener ports, as rank 0 wrote them to the file portsfile (one a
 * line; 0 while the file is not written yet). Other jobs on this machine's loopback say hello
 * too: only the job under attack's own traffic may be recorded. */
static int jobPort(const char *portsfile, uint16_t port) {
  FILE *f = fopen(portsfile, "r");
  unsigned p;
  int found = 0;
  while (f && !found && fscanf(f, "%u", &p) == 1) found = p == port;
  if (f) fclose(f);
  return found;
}

#define TD_SNIFF_FLOWS 64

/* Sniffs lo until a socket-transport hello to one of the job's listeners (portsfile) and the
 * proof that follows it on the same flow. Flows seen before the ports are known are kept (the
 * last TD_SNIFF_FLOWS) and looked at again once they are. */
static int sniff(tdRecorded *rec, const char *portsfile, int64_t deadline) {
  int s = socket(AF_PACKET, SOCK_DGRAM, htons(ETH_P_IP));
  if (s < 0) {
    fprintf(stderr, "hostile_peer: AF_PACKET: %s (needs CAP_NET_RAW)\n", strerror(errno));
    return -1;
  }
  struct sockaddr_ll sll = {.sll_family = AF_PACKET,
                            .sll_protocol = htons(ETH_P_IP),
                            .sll_ifindex = (int)if_nametoindex("lo")};
  bind(s, (struct sockaddr *)&sll, sizeof(sll));
  int rcvbuf = 32 << 20; /* the rendezvous flood must not push the job's packets out */
  setsockopt(s, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf));
  static tdRecorded flows[TD_SNIFF_FLOWS];
  uint16_t sports[TD_SNIFF_FLOWS];
  int proved[TD_SNIFF_FLOWS] = {0}, nflows = 0, got = -1;
  unsigned seen = 0;
  static unsigned char pkt[65536];
  while (got < 0 && netNowMs() < deadline) {
    struct pollfd p = {s, POLLIN, 0};
    if (poll(&p, 1, 100) > 0) {
      ssize_t n = recv(s, pkt, sizeof(pkt), 0);
      if (n < (ssize_t)sizeof(struct iphdr)) continue;
      struct iphdr *ip = (struct iphdr *)pkt;
      if (ip->protocol != IPPROTO_TCP) continue;
      struct tcphdr *tcp = (struct tcphdr *)(pkt + ip->ihl * 4);
      unsigned char *pl = (unsigned char *)tcp + tcp->doff * 4;
      size_t plen = (size_t)(pkt + TD_MIN((size_t)n, (size_t)ntohs(ip->tot_len)) - pl);
      uint64_t magic;
      if (plen == sizeof(tdSockHello) && (memcpy(&magic, pl, 8), magic == TD_SOCK_MAGIC)) {
        int f = nflows < TD_SNIFF_FLOWS ? nflows++ : (int)(seen % TD_SNIFF_FLOWS);
        seen++; /* full: the oldest flow makes room */
        memcpy(&flows[f].hello, pl, sizeof(flows[f].hello));
        flows[f].dport = ntohs(tcp->dest);
        sports[f] = tcp->source;
        proved[f] = 0;
      } else if (plen == TD_MAC_BYTES) {
        for (int f = 0; f < nflows; f++)
          if (!proved[f] && sports[f] == tcp->source && flows[f].dport == ntohs(tcp->dest))
            memcpy(flows[f].proof, pl, TD_MAC_BYTES), proved[f] = 1;
      }
    }
    for (int f = 0; f < nflows && got < 0; f++)
      if (proved[f] && jobPort(portsfile, flows[f].dport)) got = f;
  }
  close(s);
  if (got < 0) return -1;
  *rec = flows[got];
  return 0;
}

/* hello, then proof (NULL: reflect the listener's nonce): 1 if closed without a verdict. */
static int sockProof(const tdNetAddr *a, const tdSockHello *h, const void *proof, size_t plen) {
  uint8_t nonce[TD_NONCE_BYTES], v[TD_SOCK_VERDICT_BYTES];
  char err[TD_ERRLEN];
  int fd = dial(a), refused = 0;
  if (fd < 0) return 0;
  sendAll(fd, h, sizeof(*h));
  if (netRecvAll(fd, nonce, sizeof(nonce), netNowMs() + 5000, NULL, "listener", err) ==
      tpudistSuccess) {
    sendAll(fd, proof ? proof : nonce, proof ? plen : sizeof(nonce));
    refused = readUntilClosed(fd, netNowMs() + 5000, v, sizeof(v)) == 0;
  } else {
    refused = strstr(err, "closed") != NULL; /* the hello itself was refused */
  }
  close(fd);
  return refused;
}

static int modeRecord(const char *path, const char *portsfile) {
  tdRecorded rec;
  if (sniff(&rec, portsfile, netNowMs() + 30000) != 0) {
    fprintf(stderr, "hostile_peer: recorded nothing\n");
    return 1;
  }
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(&rec, sizeof(rec), 1, f) != 1) return 1;
  fclose(f);
  printf("hostile_peer: recorded rank %d's hello and proof to rank %d (port %u)\n", rec.hello.from,
         rec.hello.to, rec.dport);
  return 0;
}

static int modeSockets(const char *recfile, int idle, int hold_ms, int nports, char **ports) {
  tdNetAddr a[64];
  char err[TD_ERRLEN], how[160], junk[65536];
  tdRecorded rec;
  FILE *f = fopen(recfile, "rb");
  if (!f || fread(&rec, sizeof(rec), 1, f) != 1) {
    verdict(0, "a replayed hello and proof", "nothing was recorded from the job");
    return 1;
  }
  fclose(f);
  if (nports > 64) nports = 64;
  for (int i = 0; i < nports; i++) {
    char hp[64];
    snprintf(hp, sizeof(hp), "127.0.0.1:%s", ports[i]);
    if (netParseHostPort(hp, &a[i], err) != tpudistSuccess) return 2;
  }
  srand((unsigned)getpid());
  for (size_t i = 0; i < sizeof(junk); i++) junk[i] = (char)rand();
  tdNetAddr t = a[0];
  t.port = rec.dport;
  snprintf(how, sizeof(how), "rank %d's hello to rank %d, port %u: closed, no verdict",
           rec.hello.from, rec.hello.to, rec.dport);
  verdict(sockProof(&t, &rec.hello, rec.proof, sizeof(rec.proof)), "a replayed hello and proof",
          how);
  verdict(sockProof(&t, &rec.hello, NULL, 0), "a reflected challenge", "closed, no verdict");
  verdict(sockProof(&t, &rec.hello, junk, TD_MAC_BYTES), "a wrong secret", "closed, no verdict");
  uint64_t hdr[4] = {1, 0, 0, 1ull << 40};
  memcpy(junk, hdr, sizeof(hdr));
  verdict(sockProof(&t, &rec.hello, junk, sizeof(junk)), "an oversized header",
          "closed, no verdict");
  int *fds = calloc((size_t)idle + 1, sizeof(int));
  int nidle = openIdle(a, nports, idle, fds);
  printf("hostile_peer: %d idle connections over %d listeners\n", nidle, nports);
  tdSlow slow = {a[0], sizeof(rec.hello), &rec.hello, -1};
  tdSlow stall = {a[nports - 1], sizeof(rec.hello) / 2, &rec.hello, -1};
  return slowAndIdle(&slow, &stall, fds, nidle, hold_ms);
}

/* ---- an intruder on another host: every listener of a running job --------------------------- */

/* An attack's outcome: refused (closed within the hold, never a success or a verdict),
 * unserved (open, not one byte answered: a listener that accepts nothing at present), or not. */
enum { TD_NOT_REFUSED, TD_REFUSED, TD_UNSERVED };

typedef struct {
  tdNetAddr a;
  char name[64];
  int hold_ms;
  int outcome[3];
  char how[3][96];
} tdTarget;

/* Sends first (flen bytes); if chal_len, reads that many bytes of challenge and sends proof; then
 * reads until the target closes. Returns the bytes answered after the last send (the first
 * answered bytes into reply), -1 if still open after hold_ms; *challenged: a challenge came. */
static long probe(const tdTarget *t, const void *first, size_t flen, size_t chal_len,
                  const void *proof, size_t plen, void *reply, size_t rlen, int *challenged,
                  long *got) {
  char err[TD_ERRLEN], chal[64];
  int64_t deadline = netNowMs() + t->hold_ms;
  int fd = dial(&t->a);
  *challenged = 0;
  *got = 0;
  if (fd < 0) return 0; /* nobody listens any more: nothing was accepted */
  sendAll(fd, first, flen);
  if (chal_len && netRecvAll(fd, chal, chal_len, deadline, NULL, "target", err) == tpudistSuccess) {
    *challenged = 1;
    sendAll(fd, proof, plen);
  }
  long n = readAnswer(fd, deadline, reply, rlen, got);
  close(fd);
  return n;
}

/* refused if closed (and ok), unserved if open with nothing answered, else not refused. */
static int outcome(long n, int ok, int challenged, long got) {
  if (n >= 0) return ok ? TD_REFUSED : TD_NOT_REFUSED;
  return !challenged && got == 0 ? TD_UNSERVED : TD_NOT_REFUSED;
}

static void *intrudeOne(void *arg) {
  tdTarget *t = arg;
  unsigned char junk[256], made_up[TD_MAC_BYTES];
  unsigned seed = (unsigned)getpid() ^ (unsigned)(uintptr_t)t;
  for (size_t i = 0; i < sizeof(junk); i++) junk[i] = (unsigned char)rand_r(&seed);
  memcpy(made_up, junk + 64, sizeof(made_up));
  int ch;
  long got;
  /* 1. garbage: closed (whatever it answered) within the hold */
  long n = probe(t, junk, sizeof(junk), 0, NULL, 0, NULL, 0, &ch, &got);
  t->outcome[0] = outcome(n, 1, 0, got);
  snprintf(t->how[0], sizeof(t->how[0]), "%s", n >= 0 ? "closed" : "open, nothing answered");
  /* 2. a bootstrap hello, then a made-up proof: closed, never a successful reply */
  tdHello bh = bootHello();
  tdReply rep;
  memset(&rep, 0, sizeof(rep));
  n = probe(t, &bh, sizeof(bh), sizeof(tdChallenge), made_up, sizeof(made_up), &rep, sizeof(rep),
            &ch, &got);
  int ok_reply = n >= (long)sizeof(rep) && rep.status == tpudistSuccess;
  t->outcome[1] = outcome(n, !ok_reply, ch, got);
  snprintf(t->how[1], sizeof(t->how[1]), "%s%s", n < 0 ? "open" : "closed",
           !ch        ? " at the hello"
           : ok_reply ? " after a SUCCESS reply"
                      : " after the proof");
  /* 3. a socket-transport hello (a guessed communicator), then a made-up proof: closed, no verdict
   */
  tdSockHello sh;
  memset(&sh, 0, sizeof(sh));
  sh.magic = TD_SOCK_MAGIC;
  memcpy(&sh.hash, junk, sizeof(sh.hash));
  sh.from = 0;
  sh.to = 1;
  sh.nstreams = 1;
  memcpy(sh.nonce, junk + 8, sizeof(sh.nonce));
  n = probe(t, &sh, sizeof(sh), TD_NONCE_BYTES, made_up, sizeof(made_up), NULL, 0, &ch, &got);
  t->outcome[2] = outcome(n, n == 0 || !ch, ch, got);
  snprintf(t->how[2], sizeof(t->how[2]), "%s%s", n < 0 ? "open" : "closed",
           !ch     ? " at the hello"
           : n > 0 ? " after a VERDICT"
                   : " after the proof, no verdict");
  return NULL;
}

/* Every target at once (one thread each), each attacked in turn. */
static int modeIntrude(int hold_ms, int ntargets, char **targets) {
  static const char *what[3] = {"garbage", "a bootstrap hello without the secret",
                                "a socket-transport hello without the secret"};
  tdTarget *t = calloc((size_t)ntargets, sizeof(*t));
  pthread_t *th = calloc((size_t)ntargets, sizeof(*th));
  char err[TD_ERRLEN];
  for (int i = 0; i < ntargets; i++) {
    if (netParseHostPort(targets[i], &t[i].a, err) != tpudistSuccess) {
      fprintf(stderr, "hostile_peer: %s: %s\n", targets[i], err);
      return 2;
    }
    snprintf(t[i].name, sizeof(t[i].name), "%s", targets[i]);
    t[i].hold_ms = hold_ms;
    pthread_create(&th[i], NULL, intrudeOne, &t[i]);
  }
  for (int i = 0; i < ntargets; i++) {
    pthread_join(th[i], NULL);
    for (int k = 0; k < 3; k++) {
      char w[160];
      snprintf(w, sizeof(w), "%s to %s", what[k], t[i].name);
      if (t[i].outcome[k] == TD_UNSERVED)
        printf("hostile_peer: unserved: %s (%s in %d ms)\n", w, t[i].how[k], hold_ms);
      else
        verdict(t[i].outcome[k] == TD_REFUSED, w, t[i].how[k]);
    }
  }
  free(t);
  free(th);
  return gFailed ? 1 : 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc >= 5 && !strcmp(argv[1], "rendezvous"))
    return modeRendezvous(argv[2], atoi(argv[3]), atoi(argv[4]));
  if (argc >= 4 && !strcmp(argv[1], "record")) return modeRecord(argv[2], argv[3]);
  if (argc >= 6 && !strcmp(argv[1], "sockets"))
    return modeSockets(argv[2], atoi(argv[3]), atoi(argv[4]), argc - 5, argv + 5);
  if (argc >= 4 && !strcmp(argv[1], "intrude"))
    return modeIntrude(atoi(argv[2]), argc - 3, argv + 3);
  fprintf(stderr,
          "usage: hostile_peer rendezvous HOST:PORT IDLE HOLD_MS | record FILE PORTSFILE | "
          "sockets FILE IDLE HOLD_MS PORT... | intrude HOLD_MS HOST:PORT...\n");
  return 2;
}
