/*
 * host.c - the pure host model's decisions (host.h): placement under TPU_DIST_BIND, the launcher's
 * binding, NUMA nodes of a set of processing units, the piece size from the caches, and printing.
 */
#include "host.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *gBindNames[] = {"none", "core", "numa", "auto"};

int hostBindParse(const char *name) {
  for (int i = 0; i < (int)TD_ARRAY_SIZE(gBindNames); i++)
    if (!strcasecmp(name, gBindNames[i])) return i;
  return -1;
}

const char *hostBindName(int mode) {
  return mode >= 0 && mode < (int)TD_ARRAY_SIZE(gBindNames) ? gBindNames[mode] : "?";
}

int hostMultiNuma(const tdHost *h) {
  return h->nnuma > 1;
}

/* 1 if bound lacks a processing unit of the host. */
static int launcherBound(const tdHost *h, const uint8_t *bound) {
  for (int i = 0; bound && i < h->npus; i++)
    if (!bound[i]) return 1;
  return 0;
}

void hostPlace(const tdHost *h, int local_rank, int local_size, int mode, const uint8_t *bound,
               tdHostPlace *out) {
  memset(out, 0, sizeof(*out));
  out->action = TD_PLACE_NONE;
  out->core = out->numa = -1;
  if (local_size < 1 || local_rank < 0 || local_rank >= local_size || h->ncores < 1) {
    snprintf(out->why, sizeof(out->why), "local rank %d of %d on a host of %d cores: not placed",
             local_rank, local_size, h->ncores);
    return;
  }
  if (launcherBound(h, bound)) {
    out->action = TD_PLACE_LAUNCHER;
    out->numa = hostMaskNuma(h, bound);
    snprintf(out->why, sizeof(out->why), "already bound by its launcher: left alone");
    return;
  }
  int asked = mode;
  if (mode == TD_BIND_AUTO) mode = hostMultiNuma(h) ? TD_BIND_NUMA : TD_BIND_NONE;
  long r = local_rank, l = local_size;
  if (mode == TD_BIND_CORE) {
    out->action = TD_PLACE_CORE;
    out->core = (int)(r * h->ncores / l);
    out->numa = h->cores[out->core].numa;
    snprintf(out->why, sizeof(out->why), "local rank %d of %d on core %d of %d", local_rank,
             local_size, out->core, h->ncores);
  } else if (mode == TD_BIND_NUMA && h->nnuma > 0) {
    out->action = TD_PLACE_NUMA;
    out->numa = (int)(r * h->nnuma / l);
    snprintf(out->why, sizeof(out->why), "local rank %d of %d on NUMA node %d of %d", local_rank,
             local_size, out->numa, h->nnuma);
  } else {
    snprintf(out->why, sizeof(out->why), "TPU_DIST_BIND=%s%s: not bound", hostBindName(asked),
             asked == TD_BIND_AUTO ? " on one NUMA node" : "");
  }
}

void hostPlaceNodes(const tdHost *h, int local_size, int mode, int *node) {
  for (int r = 0; r < local_size; r++) {
    tdHostPlace p;
    hostPlace(h, r, local_size, mode, NULL, &p);
    node[r] = p.action == TD_PLACE_CORE || p.action == TD_PLACE_NUMA ? p.numa : -1;
  }
}

int hostNumaBlocks(const int *node, int n) {
  int k = 0, run = 0;
  for (int r = 0; r < n; r++) {
    if (node[r] < 0) return 0;
    if (r && node[r] == node[r - 1]) {
      run++;
      continue;
    }
    if (k && run != k) return 0;
    if (r && !k) k = run;
    for (int e = 0; e < r; e++) /* one block a node */
      if (node[e] == node[r]) return 0;
    run = 1;
  }
  if (!k) return 0; /* one node (or no rank) */
  return run == k ? k : 0;
}

/* Flags of the nodes in node[0 .. n-1] (nnuma of them, calloc'd); NULL if one is out of range. */
static uint8_t *nodesUsed(const int *node, int n, int nnuma) {
  uint8_t *used = calloc((size_t)TD_MAX(nnuma, 1), 1);
  for (int r = 0; used && r < n; r++) {
    if (node[r] < 0 || node[r] >= nnuma) return free(used), NULL;
    used[node[r]] = 1;
  }
  return used;
}

int hostNumaFactorPct(const tdHost *h, const int *node, int n) {
  int nn = h->nnuma, pct = 0;
  uint8_t *used = h->numa_dist ? nodesUsed(node, n, nn) : NULL;
  uint64_t local = 0, remote = 0, nlocal = 0, nremote = 0, missing = 0;
  for (int i = 0; used && i < nn; i++)
    for (int j = 0; used[i] && j < nn; j++) {
      uint64_t d = h->numa_dist[i * nn + j];
      if (!used[j]) continue;
      missing += d == 0;
      if (i == j)
        local += d, nlocal++;
      else
        remote += d, nremote++;
    }
  if (used && !missing && nremote && local)
    pct = (int)((remote * nlocal * 200 + local * nremote) / (2 * local * nremote));
  free(used);
  return pct;
}

char *hostNodeList(const int *node, int n, char *buf, size_t len) {
  int max = -1;
  size_t used = 0;
  buf[0] = 0;
  for (int r = 0; r < n; r++) max = TD_MAX(max, node[r]);
  uint8_t *in = max >= 0 ? nodesUsed(node, n, max + 1) : NULL;
  for (int i = 0; in && i <= max && used < len;) {
    if (!in[i]) {
      i++;
      continue;
    }
    int j = i;
    while (j + 1 <= max && in[j + 1]) j++;
    used +=
        (size_t)snprintf(buf + used, len - used, j > i ? "%s%d-%d" : "%s%d", used ? "," : "", i, j);
    i = j + 1;
  }
  if (!in) snprintf(buf, len, "?");
  free(in);
  return buf;
}

int hostPlaceMask(const tdHost *h, const tdHostPlace *p, uint8_t *mask) {
  int n = 0;
  memset(mask, 0, (size_t)h->npus);
  for (int c = 0; c < h->ncores; c++) {
    const tdHostCore *k = &h->cores[c];
    int take = (p->action == TD_PLACE_CORE && c == p->core) ||
               (p->action == TD_PLACE_NUMA && k->numa == p->numa);
    for (int i = 0; take && i < k->npu; i++) mask[k->pu0 + i] = 1, n++;
  }
  return n;
}

int hostMaskNuma(const tdHost *h, const uint8_t *mask) {
  int node = -1;
  for (int c = 0; c < h->ncores; c++)
    for (int i = 0; i < h->cores[c].npu; i++) {
      if (!mask[h->cores[c].pu0 + i]) continue;
      if (node >= 0 && node != h->cores[c].numa) return -1;
      node = h->cores[c].numa;
    }
  return node;
}

int hostMaskCores(const tdHost *h, const uint8_t *mask) {
  int n = 0;
  for (int c = 0; c < h->ncores; c++) {
    int in = 0;
    for (int i = 0; i < h->cores[c].npu; i++) in |= mask[h->cores[c].pu0 + i];
    n += in;
  }
  return n;
}

long hostChunkBytes(const tdHost *h, long explicit_bytes) {
  if (explicit_bytes > 0) return explicit_bytes;
  uint64_t share = 0;
  if (h && h->l2_bytes) share = h->l2_bytes / (uint64_t)TD_MAX(h->l2_cores, 1);
  if (h && !share && h->l3_bytes) share = h->l3_bytes / (uint64_t)TD_MAX(h->l3_cores, 1);
  if (!share) return TD_HOST_CHUNK_DEFAULT;
  long c = TD_HOST_CHUNK_MIN;
  while (c < TD_HOST_CHUNK_MAX && (uint64_t)c * 2 <= share / 8) c *= 2;
  return c;
}

/* OS indices of mask, in increasing order, as ranges. */
char *hostMaskList(const tdHost *h, const uint8_t *mask, char *buf, size_t len) {
  int *os = malloc(sizeof(int) * (size_t)TD_MAX(h->npus, 1)), n = 0;
  size_t used = 0;
  buf[0] = 0;
  if (!os) return snprintf(buf, len, "?"), buf;
  for (int i = 0; i < h->npus; i++)
    if (mask[i]) os[n++] = h->pus[i];
  for (int i = 1; i < n; i++) /* insertion sort: a few hundred at most */
    for (int j = i; j > 0 && os[j - 1] > os[j]; j--) {
      int t = os[j];
      os[j] = os[j - 1], os[j - 1] = t;
    }
  for (int i = 0; i < n && used < len;) {
    int j = i;
    while (j + 1 < n && os[j + 1] == os[j] + 1) j++;
    used += (size_t)snprintf(buf + used, len - used, j > i ? "%s%d-%d" : "%s%d", i ? "," : "",
                             os[i], os[j]);
    i = j + 1;
  }
  free(os);
  return buf;
}

static void printBytes(FILE *f, const char *name, uint64_t b, int sharing) {
  if (!b) return (void)fprintf(f, " %s=none", name);
  if (b % (1u << 20) == 0)
    fprintf(f, " %s=%lluMiB", name, (unsigned long long)(b >> 20));
  else
    fprintf(f, " %s=%lluKiB", name, (unsigned long long)(b >> 10));
  if (sharing > 1) fprintf(f, "/%dcores", sharing);
}

void hostPrint(const tdHost *h, FILE *f) {
  fprintf(f, "host: %s\n", h->source);
  fprintf(f, "packages %d numa %d cores %d pus %d\n", h->npackages, h->nnuma, h->ncores, h->npus);
  fprintf(f, "caches:");
  printBytes(f, "L1d", h->l1d_bytes, 1);
  printBytes(f, "L2", h->l2_bytes, h->l2_cores);
  printBytes(f, "L3", h->l3_bytes, h->l3_cores);
  fprintf(f, "\nchunk from caches: %ld bytes\n", hostChunkBytes(h, 0));
  uint8_t *mask = calloc((size_t)TD_MAX(h->npus, 1), 1);
  char list[512];
  for (int n = 0; mask && n < h->nnuma; n++) {
    tdHostPlace p = {.action = TD_PLACE_NUMA, .core = -1, .numa = n};
    int pus = hostPlaceMask(h, &p, mask);
    fprintf(f, "numa %d (os %d): %llu MiB, cores %d, pus %d: %s\n", n, h->numa_os[n],
            (unsigned long long)(h->numa_bytes[n] >> 20), hostMaskCores(h, mask), pus,
            hostMaskList(h, mask, list, sizeof(list)));
  }
  for (int i = 0; h->numa_dist && i < h->nnuma; i++) {
    fprintf(f, "numa %d distances:", i);
    for (int j = 0; j < h->nnuma; j++)
      fprintf(f, " %llu", (unsigned long long)h->numa_dist[i * h->nnuma + j]);
    fprintf(f, "\n");
  }
  free(mask);
}

void hostFree(tdHost *h) {
  free(h->cores);
  free(h->pus);
  free(h->numa_os);
  free(h->numa_bytes);
  free(h->numa_dist);
  memset(h, 0, sizeof(*h));
}
