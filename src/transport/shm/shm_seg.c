/*
 * shm_seg.c - shared-memory segments of the shm transport (layout in shm.h): lazy creation by
 * either side of a pair (O_CREAT|O_EXCL decides who creates), a free-space check of /dev/shm
 * before creating (a clear error naming the bytes needed and available), space reserved with
 * posix_fallocate so a full /dev/shm is an error here and never a SIGBUS later (each ring by the
 * side that writes it, so that its pages are first touched by their owner and lie on its NUMA
 * node: the creator allocates the header, the control pages and its own ring, the other side its
 * ring when it maps), unlinking as soon as both sides have mapped, the CMA probe (the receiver
 * reads the sender's header through process_vm_readv once; a refusal or TPU_DIST_SHM_CMA=0 means
 * the ring carries everything), and peer liveness through a pidfd (a peer that exited fails its
 * transfers instead of hanging them).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "rt_log.h"
#include "shm.h"

int64_t shmNowMs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static size_t segBytes(uint64_t ring_bytes) {
  return TD_SHM_HDR_BYTES + 2 * TD_SHM_CTL_BYTES + 2 * (size_t)ring_bytes;
}

/* Offset of the ring that side writes. */
static size_t ringOff(uint64_t ring_bytes, int side) {
  return TD_SHM_HDR_BYTES + 2 * TD_SHM_CTL_BYTES + (size_t)side * (size_t)ring_bytes;
}

/* Maps the pages of [off, off + len) of m, already allocated, so that the hot path takes no fault
 * (MAP_POPULATE would also allocate the peer's ring here, on this rank's node). */
static void mapPages(char *m, size_t off, size_t len) {
  for (size_t i = 0; i < len; i += 4096) (void)*(volatile char *)(m + off + i);
}

/* Points the peer's views into its mapping. */
static void segViews(tdShmPeer *pe) {
  char *m = pe->map;
  int out = pe->side, in = 1 - pe->side;
  pe->hdr = (tdShmSegHdr *)m;
  pe->ring_bytes = pe->hdr->ring_bytes;
  pe->ctl_out = (tdShmRingCtl *)(m + TD_SHM_HDR_BYTES + (size_t)out * TD_SHM_CTL_BYTES);
  pe->ctl_in = (tdShmRingCtl *)(m + TD_SHM_HDR_BYTES + (size_t)in * TD_SHM_CTL_BYTES);
  char *data = m + TD_SHM_HDR_BYTES + 2 * TD_SHM_CTL_BYTES;
  pe->data_out = data + (size_t)out * pe->ring_bytes;
  pe->data_in = data + (size_t)in * pe->ring_bytes;
  pe->frag_max = (pe->ring_bytes / 4) & ~(uint64_t)(TD_SHM_REC - 1);
}

/* This side has mapped: publish pid and base, then mark mapped. */
static void segPublish(tdShmCtx *c, tdShmPeer *pe) {
  pe->hdr->pid[pe->side] = c->my_pid;
  pe->hdr->base[pe->side] = (uint64_t)(uintptr_t)pe->map;
  __atomic_store_n(&pe->hdr->mapped[pe->side], 1, __ATOMIC_RELEASE);
  pe->state = SHM_READY;
}

static tpudistResult_t segCreate(tdNet *comm, tdShmCtx *c, tdShmPeer *pe, int fd, int p) {
  size_t bytes = segBytes(c->ring_bytes);
  struct statvfs sv;
  if (fstatvfs(fd, &sv) == 0 && (unsigned long long)sv.f_bavail * sv.f_frsize < bytes) {
    unsigned long long avail = (unsigned long long)sv.f_bavail * sv.f_frsize;
    close(fd);
    shm_unlink(pe->name);
    return transportError(comm, tpudistNoMemory,
                          "shm: /dev/shm has %llu bytes free, the segment for ranks %d and %d "
                          "needs %zu (enlarge /dev/shm, e.g. docker --shm-size, lower "
                          "TPU_DIST_SHM_BUF_BYTES, or set TPU_DIST_TRANSPORTS=socket)",
                          avail, TD_MIN(comm->rank, p), TD_MAX(comm->rank, p), bytes);
  }
  size_t own = ringOff(c->ring_bytes, pe->side);
  int e = ftruncate(fd, (off_t)bytes) != 0 ? errno : posix_fallocate(fd, 0, (off_t)ringOff(0, 0));
  if (!e) e = posix_fallocate(fd, (off_t)own, (off_t)c->ring_bytes);
  void *m = e ? MAP_FAILED : mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (!e && m == MAP_FAILED) e = errno;
  close(fd);
  if (!e) mapPages(m, 0, ringOff(0, 0)), mapPages(m, own, c->ring_bytes);
  if (e) {
    shm_unlink(pe->name);
    return transportError(comm, e == ENOSPC ? tpudistNoMemory : tpudistSystemError,
                          "shm: cannot reserve %zu bytes for %s in /dev/shm: %s", bytes, pe->name,
                          strerror(e));
  }
  pe->map = m;
  pe->map_bytes = bytes;
  pe->creator = 1;
  tdShmSegHdr *h = m;
  h->ring_bytes = c->ring_bytes;
  h->lo = TD_MIN(comm->rank, p);
  h->hi = TD_MAX(comm->rank, p);
  segViews(pe);
  segPublish(c, pe);
  __atomic_store_n(&h->magic, TD_SHM_MAGIC, __ATOMIC_RELEASE);
  return tpudistSuccess;
}

/* The other side created the segment: map it once it is complete. Stays OPENING otherwise. */
static tpudistResult_t segOpen(tdNet *comm, tdShmCtx *c, tdShmPeer *pe) {
  int fd = shm_open(pe->name, O_RDWR, 0600);
  if (fd < 0) {
    if (errno == ENOENT) return tpudistSuccess; /* not yet (or the creator is gone) */
    return transportError(comm, tpudistSystemError, "shm: open %s: %s", pe->name, strerror(errno));
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size < (off_t)(TD_SHM_HDR_BYTES + 2 * TD_SHM_CTL_BYTES)) {
    close(fd);
    return tpudistSuccess; /* still being sized */
  }
  void *m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) {
    int e = errno;
    close(fd);
    return transportError(comm, tpudistSystemError, "shm: map %s: %s", pe->name, strerror(e));
  }
  tdShmSegHdr *h = m;
  if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != TD_SHM_MAGIC ||
      segBytes(h->ring_bytes) != (size_t)st.st_size) {
    munmap(m, (size_t)st.st_size);
    close(fd);
    return tpudistSuccess; /* not initialised yet */
  }
  /* this side's ring: allocated here, by its writer (the creator left it a hole) */
  size_t own = ringOff(h->ring_bytes, pe->side);
  int e = posix_fallocate(fd, (off_t)own, (off_t)h->ring_bytes);
  close(fd);
  if (e) {
    munmap(m, (size_t)st.st_size);
    return transportError(comm, e == ENOSPC ? tpudistNoMemory : tpudistSystemError,
                          "shm: cannot reserve the %llu-byte ring of %s in /dev/shm: %s",
                          (unsigned long long)h->ring_bytes, pe->name, strerror(e));
  }
  mapPages(m, 0, (size_t)st.st_size);
  pe->map = m;
  pe->map_bytes = (size_t)st.st_size;
  pe->creator = 0;
  segViews(pe);
  segPublish(c, pe);
  shm_unlink(pe->name); /* both sides have it now */
  return tpudistSuccess;
}

/* The ring size of the segments this rank creates (shm.h): by the number of ranks on this host. */
static uint64_t ringBytes(const tdNet *comm, const tdShmCtx *c) {
  int local_rank, local;
  netLocalRank(comm, &local_rank, &local);
  int others = local - 1;
  uint64_t ring = TD_MIN(c->ring_max, c->rank_bytes / (uint64_t)TD_MAX(others, 1));
  return TD_MAX(ring & ~(uint64_t)4095, (uint64_t)TD_SHM_MIN_RING);
}

tpudistResult_t shmConnect(tdNet *comm, tdShmCtx *c, int p) {
  tdShmPeer *pe = &c->peers[p];
  if (pe->state == SHM_READY) return tpudistSuccess;
  if (!c->ring_bytes) {
    c->ring_bytes = ringBytes(comm, c);
    TD_INFO(TD_SUBSYS_SHM, "%s: shm rings of %llu bytes", comm->name,
            (unsigned long long)c->ring_bytes);
  }
  if (pe->state == SHM_FAILED)
    return transportError(comm, tpudistRemoteError, "shm: rank %d: %s", p, pe->why);
  if (pe->state == SHM_NONE) {
    pe->side = comm->rank < p ? 0 : 1;
    snprintf(pe->name, sizeof(pe->name), "/tdshm-%016llx-%d-%d",
             (unsigned long long)comm->comm_hash, TD_MIN(comm->rank, p), TD_MAX(comm->rank, p));
    pe->state = SHM_OPENING;
    c->active[c->nactive++] = p;
    int fd = shm_open(pe->name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd >= 0) {
      tpudistResult_t res = segCreate(comm, c, pe, fd, p);
      if (res != tpudistSuccess) {
        pe->state = SHM_FAILED;
        snprintf(pe->why, sizeof(pe->why), "%s", comm->err.msg);
      }
      return res;
    }
    if (errno != EEXIST)
      return transportError(comm, tpudistSystemError, "shm: create %s: %s", pe->name,
                            strerror(errno));
  }
  return segOpen(comm, c, pe);
}

void shmDisconnect(tdShmCtx *c, int p) {
  tdShmPeer *pe = &c->peers[p];
  (void)c;
  if (pe->map) {
    __atomic_store_n(&pe->hdr->closed[pe->side], 1, __ATOMIC_RELEASE);
    if (pe->creator && !__atomic_load_n(&pe->hdr->mapped[1 - pe->side], __ATOMIC_ACQUIRE))
      shm_unlink(pe->name); /* the peer never mapped it */
    munmap(pe->map, pe->map_bytes);
    pe->map = NULL;
  }
  if (pe->pidfd >= 0) close(pe->pidfd);
  pe->pidfd = -1;
}

void shmProbeCma(tdShmCtx *c, tdShmPeer *pe) {
  int in = 1 - pe->side;
  if (pe->hdr->cma_ok[in] != CMA_UNKNOWN) return;
  if (!__atomic_load_n(&pe->hdr->mapped[in], __ATOMIC_ACQUIRE)) return;
  int ok = CMA_OFF;
  if (c->use_cma) {
    uint64_t word = 0;
    struct iovec l = {&word, sizeof(word)};
    struct iovec r = {(void *)(uintptr_t)pe->hdr->base[in], sizeof(word)};
    ssize_t n = process_vm_readv(pe->hdr->pid[in], &l, 1, &r, 1, 0);
    if (n == (ssize_t)sizeof(word) && word == TD_SHM_MAGIC)
      ok = CMA_OK;
    else
      TD_INFO(TD_SUBSYS_SHM, "shm: single-copy reads from pid %d refused (%s): using the ring",
              pe->hdr->pid[in], n < 0 ? strerror(errno) : "short read");
  }
  __atomic_store_n(&pe->hdr->cma_ok[in], ok, __ATOMIC_RELEASE);
}

static void unlinkPair(const tdNet *comm, int a, int b) {
  char name[64];
  snprintf(name, sizeof(name), "/tdshm-%016llx-%d-%d", (unsigned long long)comm->comm_hash,
           TD_MIN(a, b), TD_MAX(a, b));
  shm_unlink(name);
}

void shmUnlinkUnmapped(tdNet *comm, tdShmCtx *c) {
  const tdPeerInfo *peers = comm->peers;
  for (int p = 0; peers && p < comm->nranks; p++) {
    tdShmPeer *pe = &c->peers[p];
    if (p != comm->rank && peers[p].host_hash == peers[comm->rank].host_hash && !pe->map &&
        pe->state != SHM_READY)
      unlinkPair(comm, comm->rank, p);
  }
}

void shmUnlinkDeadPairs(tdNet *comm) {
  const tdPeerInfo *peers = comm->peers;
  uint8_t *gone = peers ? calloc((size_t)comm->nranks, 1) : NULL;
  if (!gone) return;
  int n = 0;
  for (int p = 0; p < comm->nranks; p++)
    n += gone[p] =
        (uint8_t)(peers[p].host_hash == peers[comm->rank].host_hash && transportPeerGone(comm, p));
  for (int p = 0; n > 1 && p < comm->nranks; p++)
    for (int q = p + 1; gone[p] && q < comm->nranks; q++)
      if (gone[q]) unlinkPair(comm, p, q); /* ENOENT for every pair that got mapped */
  free(gone);
}

int shmPeerDead(tdNet *comm, tdShmPeer *pe, int p) {
  int pid = comm->peers[p].pid;
  const char *mine = strchr(comm->peers[comm->rank].shm_name, ':');
  const char *theirs = strchr(comm->peers[p].shm_name, ':');
  if (!mine || !theirs || strcmp(mine, theirs) != 0) return 0; /* other pid namespace: unknown */
  if (pe->pidfd == -2) return transportProcGone(pid); /* no pidfd here (old kernel, valgrind) */
  if (pe->pidfd < 0) {
#ifdef SYS_pidfd_open
    pe->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pe->pidfd < 0 && errno == ESRCH) return 1;
#endif
    if (pe->pidfd < 0) {
      pe->pidfd = -2;
      return transportProcGone(pid);
    }
  }
  struct pollfd pf = {pe->pidfd, POLLIN, 0};
  return poll(&pf, 1, 0) > 0;
}
