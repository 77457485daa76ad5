/*
 * detect_hwloc.c - the host model from hwloc (host_detect.h): packages, NUMA nodes, cores in
 * topology order with their processing units' OS indices, the NUMA nodes' distance matrix, cache
 * sizes and sharing; this process's host read once, with the binding the process had then; the
 * placement applied once.
 */
#include <errno.h>
#include <hwloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host_detect.h"

/* The smallest instance of a cache level and the most cores one instance serves. */
static void cacheLevel(hwloc_topology_t t, hwloc_obj_type_t type, uint64_t *bytes, int *cores) {
  *bytes = 0, *cores = 0;
  for (hwloc_obj_t o = NULL; (o = hwloc_get_next_obj_by_type(t, type, o));) {
    uint64_t b = o->attr->cache.size;
    if (b && (!*bytes || b < *bytes)) *bytes = b;
    int n = hwloc_get_nbobjs_inside_cpuset_by_type(t, o->cpuset, HWLOC_OBJ_CORE);
    *cores = TD_MAX(*cores, n);
  }
}

static int numaOf(hwloc_topology_t t, hwloc_obj_t core) {
  for (hwloc_obj_t n = NULL; (n = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, n));)
    if (hwloc_bitmap_isincluded(core->cpuset, n->cpuset)) return (int)n->logical_index;
  return 0;
}

/* Cores (or processing units where the host shows no cores) with their units, in order. */
static int fillCores(hwloc_topology_t t, tdHost *h) {
  hwloc_obj_type_t ct =
      hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
  h->ncores = hwloc_get_nbobjs_by_type(t, ct);
  h->npus = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU);
  h->cores = calloc((size_t)TD_MAX(h->ncores, 1), sizeof(*h->cores));
  h->pus = calloc((size_t)TD_MAX(h->npus, 1), sizeof(int));
  if (!h->cores || !h->pus) return -1;
  int at = 0;
  for (int c = 0; c < h->ncores; c++) {
    hwloc_obj_t o = hwloc_get_obj_by_type(t, ct, (unsigned)c);
    hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PACKAGE, o);
    tdHostCore *k = &h->cores[c];
    k->os = (int)o->os_index;
    k->package = pkg ? (int)pkg->logical_index : 0;
    k->numa = numaOf(t, o);
    k->pu0 = at;
    for (hwloc_obj_t pu = NULL; at < h->npus && (pu = hwloc_get_next_obj_inside_cpuset_by_type(
                                                     t, o->cpuset, HWLOC_OBJ_PU, pu));)
      h->pus[at++] = (int)pu->os_index, k->npu++;
  }
  h->npus = at;
  return 0;
}

static int fillNuma(hwloc_topology_t t, tdHost *h) {
  h->nnuma = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
  h->numa_os = calloc((size_t)TD_MAX(h->nnuma, 1), sizeof(int));
  h->numa_bytes = calloc((size_t)TD_MAX(h->nnuma, 1), sizeof(uint64_t));
  if (!h->numa_os || !h->numa_bytes) return -1;
  for (int n = 0; n < h->nnuma; n++) {
    hwloc_obj_t o = hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, (unsigned)n);
    h->numa_os[n] = (int)o->os_index;
    h->numa_bytes[n] = o->attr->numanode.local_memory;
  }
  return 0;
}

/* The NUMA nodes' latency matrix (the OS's, e.g. ACPI SLIT, or one an XML file records), indexed
 * by the nodes' logical indices; left NULL when hwloc holds none. */
static int fillDistances(hwloc_topology_t t, tdHost *h) {
  struct hwloc_distances_s *d = NULL;
  unsigned nr = 1;
  if (h->nnuma < 2 ||
      hwloc_distances_get_by_type(t, HWLOC_OBJ_NUMANODE, &nr, &d,
                                  HWLOC_DISTANCES_KIND_MEANS_LATENCY, 0) != 0 ||
      nr < 1 || !d)
    return 0;
  h->numa_dist = calloc((size_t)h->nnuma * (size_t)h->nnuma, sizeof(uint64_t));
  for (unsigned i = 0; h->numa_dist && i < d->nbobjs; i++)
    for (unsigned j = 0; j < d->nbobjs; j++) {
      unsigned a = d->objs[i]->logical_index, b = d->objs[j]->logical_index;
      if (a < (unsigned)h->nnuma && b < (unsigned)h->nnuma)
        h->numa_dist[a * (unsigned)h->nnuma + b] = d->values[i * d->nbobjs + j];
    }
  hwloc_distances_release(t, d);
  return h->numa_dist ? 0 : -1;
}

static void fillSource(hwloc_topology_t t, const char *synthetic, const char *xml, tdHost *h) {
  hwloc_obj_t root = hwloc_get_root_obj(t);
  const char *desc = hwloc_obj_get_info_by_name(root, "SyntheticDescription");
  h->this_system = hwloc_topology_is_thissystem(t);
  if (synthetic || (!xml && desc && !h->this_system))
    snprintf(h->source, sizeof(h->source), "synthetic: %s", synthetic ? synthetic : desc);
  else if (xml || !h->this_system)
    snprintf(h->source, sizeof(h->source), "xml: %s", xml ? xml : "(HWLOC_XMLFILE)");
  else
    snprintf(h->source, sizeof(h->source), "this host");
}

static tpudistResult_t fillHost(hwloc_topology_t t, tdHost *h, char *err) {
  h->npackages = TD_MAX(hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE), 1);
  if (fillCores(t, h) || fillNuma(t, h) || fillDistances(t, h)) {
    hostFree(h);
    return tdErr(err, tpudistNoMemory, "host: out of memory for the topology");
  }
  cacheLevel(t, HWLOC_OBJ_L1CACHE, &h->l1d_bytes, &(int){0});
  cacheLevel(t, HWLOC_OBJ_L2CACHE, &h->l2_bytes, &h->l2_cores);
  cacheLevel(t, HWLOC_OBJ_L3CACHE, &h->l3_bytes, &h->l3_cores);
  return tpudistSuccess;
}

/* Loads the topology (synthetic, XML or this machine) into *t. */
static tpudistResult_t loadTopo(const char *synthetic, const char *xml, hwloc_topology_t *t,
                                char *err) {
  if (hwloc_topology_init(t) != 0) return tdErr(err, tpudistSystemError, "hwloc: init failed");
  /* what the model needs: no I/O devices, no instruction caches; the x86 backend (cpuid on every
   * unit, moving the thread to each) adds nothing to what Linux's sysfs gives */
  hwloc_topology_set_io_types_filter(*t, HWLOC_TYPE_FILTER_KEEP_NONE);
  hwloc_topology_set_icache_types_filter(*t, HWLOC_TYPE_FILTER_KEEP_NONE);
  hwloc_topology_set_components(*t, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "x86");
  int rc = 0;
  if (synthetic)
    rc = hwloc_topology_set_synthetic(*t, synthetic);
  else if (xml)
    rc = hwloc_topology_set_xml(*t, xml);
  if (rc == 0) rc = hwloc_topology_load(*t);
  if (rc != 0) {
    const char *what = synthetic ? "the synthetic machine" : xml ? "the XML file" : "this host";
    hwloc_topology_destroy(*t);
    return tdErr(err, synthetic || xml ? tpudistInvalidArgument : tpudistSystemError,
                 "hwloc: cannot read %s %s", what,
                 synthetic ? synthetic
                 : xml     ? xml
                           : "");
  }
  return tpudistSuccess;
}

tpudistResult_t hostDetect(const char *synthetic, const char *xml, tdHost *h, char *err) {
  hwloc_topology_t t;
  memset(h, 0, sizeof(*h));
  TD_CHECK(loadTopo(synthetic, xml, &t, err));
  fillSource(t, synthetic, xml, h);
  tpudistResult_t res = fillHost(t, h, err);
  hwloc_topology_destroy(t);
  return res;
}

static struct {
  pthread_once_t once;
  pthread_mutex_t lock;
  hwloc_topology_t topo; /* kept until the placement is applied */
  tdHost host;
  uint8_t *bound; /* the process's units when read */
  tpudistResult_t res;
  char err[TD_ERRLEN];
  int decided;
  tdHostPlace place;
} gThis = {.once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER};

static void readThis(void) {
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  gThis.res = loadTopo(NULL, NULL, &gThis.topo, gThis.err);
  if (gThis.res != tpudistSuccess) return;
  fillSource(gThis.topo, NULL, NULL, &gThis.host);
  gThis.res = fillHost(gThis.topo, &gThis.host, gThis.err);
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  gThis.bound = calloc((size_t)TD_MAX(gThis.host.npus, 1), 1);
  if (gThis.res != tpudistSuccess || !set || !gThis.bound) {
    if (gThis.res == tpudistSuccess)
      gThis.res = tdErr(gThis.err, tpudistNoMemory, "host: no memory");
    hwloc_bitmap_free(set);
    return;
  }
  int known =
      gThis.host.this_system && hwloc_get_cpubind(gThis.topo, set, HWLOC_CPUBIND_PROCESS) == 0;
  for (int i = 0; i < gThis.host.npus; i++)
    gThis.bound[i] = !known || hwloc_bitmap_isset(set, (unsigned)gThis.host.pus[i]);
  hwloc_bitmap_free(set);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  gThis.host.read_ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
}

const tdHost *hostThis(const uint8_t **bound, char *err) {
  pthread_once(&gThis.once, readThis);
  if (gThis.res != tpudistSuccess) {
    snprintf(err, TD_ERRLEN, "%s", gThis.err);
    return NULL;
  }
  if (bound) *bound = gThis.bound;
  return &gThis.host;
}

/* Binds every thread of the process to the units of p. */
static tpudistResult_t applyPlace(const tdHost *h, const tdHostPlace *p, char *err) {
  uint8_t *mask = calloc((size_t)TD_MAX(h->npus, 1), 1);
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  tpudistResult_t res = tpudistSuccess;
  if (!mask || !set) {
    res = tdErr(err, tpudistNoMemory, "host: no memory to bind");
  } else if (hostPlaceMask(h, p, mask) > 0) {
    for (int i = 0; i < h->npus; i++)
      if (mask[i]) hwloc_bitmap_set(set, (unsigned)h->pus[i]);
    if (hwloc_set_cpubind(gThis.topo, set, HWLOC_CPUBIND_PROCESS) != 0)
      res =
          tdErr(err, tpudistSystemError, "host: binding (%s) failed: %s", p->why, strerror(errno));
  }
  hwloc_bitmap_free(set);
  free(mask);
  return res;
}

tpudistResult_t hostBindOnce(int local_rank, int local_size, int mode, tdHostPlace *out, int *first,
                             char *err) {
  const uint8_t *bound;
  const tdHost *h = hostThis(&bound, err);
  if (!h) return tpudistSystemError;
  pthread_mutex_lock(&gThis.lock);
  tpudistResult_t res = tpudistSuccess;
  *first = !gThis.decided;
  if (!gThis.decided) {
    hostPlace(h, local_rank, local_size, mode, bound, &gThis.place);
    int binds = gThis.place.action == TD_PLACE_CORE || gThis.place.action == TD_PLACE_NUMA;
    if (binds && !h->this_system) {
      gThis.place.action = TD_PLACE_NONE;
      snprintf(gThis.place.why, sizeof(gThis.place.why),
               "the topology read is not this "
               "machine: not bound");
    } else if (binds) {
      res = applyPlace(h, &gThis.place, err);
    }
    gThis.decided = 1;
    hwloc_topology_destroy(gThis.topo); /* bound once: the model is all that is used from now */
    gThis.topo = NULL;
  }
  *out = gThis.place;
  pthread_mutex_unlock(&gThis.lock);
  return res;
}

char *hostCpusNow(char *buf, size_t len) {
  cpu_set_t set;
  size_t used = 0;
  buf[0] = 0;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return snprintf(buf, len, "?"), buf;
  for (int i = 0; i < CPU_SETSIZE && used < len;) {
    if (!CPU_ISSET(i, &set)) {
      i++;
      continue;
    }
    int j = i;
    while (j + 1 < CPU_SETSIZE && CPU_ISSET(j + 1, &set)) j++;
    used +=
        (size_t)snprintf(buf + used, len - used, j > i ? "%s%d-%d" : "%s%d", used ? "," : "", i, j);
    i = j + 1;
  }
  return buf;
}
