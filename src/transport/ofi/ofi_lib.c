/*
 * ofi_lib.c - opens libfabric.so.1 once per process and finds its five real entry points; tells
 * whether an RDMA device is present (ofi_lib.h).
 */
#include "ofi_lib.h"

#include <dirent.h>
#include <dlfcn.h>
#include <glob.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "td_base.h"

static tdOfiLib gLib;
static const tdOfiLib *gLibp;
static char gWhy[TD_ERRLEN];
static pthread_once_t gOnce = PTHREAD_ONCE_INIT;

static void *sym(void *h, const char *name) {
  void *p = dlsym(h, name);
  if (!p && !gWhy[0]) snprintf(gWhy, sizeof(gWhy), "libfabric.so.1 lacks %s", name);
  return p;
}

static void libLoad(void) {
  void *h = dlopen("libfabric.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(gWhy, sizeof(gWhy), "libfabric cannot be loaded (%s)", dlerror());
    return;
  }
  gLib.getinfo = (int (*)(uint32_t, const char *, const char *, uint64_t, const struct fi_info *,
                          struct fi_info **))sym(h, "fi_getinfo");
  gLib.freeinfo = (void (*)(struct fi_info *))sym(h, "fi_freeinfo");
  gLib.dupinfo = (struct fi_info * (*)(const struct fi_info *)) sym(h, "fi_dupinfo");
  gLib.fabric = (int (*)(struct fi_fabric_attr *, struct fid_fabric **, void *))sym(h, "fi_fabric");
  gLib.strerror = (const char *(*)(int))sym(h, "fi_strerror");
  if (gWhy[0]) return; /* an incomplete library: not used */
  uint32_t (*version)(void) = (uint32_t(*)(void))dlsym(h, "fi_version");
  if (version && FI_VERSION_LT(version(), TD_OFI_API)) {
    snprintf(gWhy, sizeof(gWhy), "libfabric %u.%u is older than 1.10", FI_MAJOR(version()),
             FI_MINOR(version()));
    return;
  }
  gLibp = &gLib; /* kept loaded until exit: providers may keep threads and handlers */
}

const tdOfiLib *ofiLib(char *why) {
  pthread_once(&gOnce, libLoad);
  if (!gLibp && why) snprintf(why, TD_ERRLEN, "%s", gWhy);
  return gLibp;
}

static int dirHasEntries(const char *path) {
  DIR *d = opendir(path);
  if (!d) return 0;
  int n = 0;
  for (struct dirent *e; !n && (e = readdir(d));) n = e->d_name[0] != '.';
  closedir(d);
  return n;
}

static int globAny(const char *pattern) {
  glob_t g;
  int n = glob(pattern, 0, NULL, &g) == 0 && g.gl_pathc > 0;
  globfree(&g);
  return n;
}

int ofiRdmaDevicePresent(void) {
  return dirHasEntries("/sys/class/infiniband") || globAny("/dev/hfi1_*") || globAny("/dev/cxi*");
}

int ofiProvIsRdma(const char *prov) {
  static const char *const rdma[] = {"verbs", "efa", "psm2", "psm3", "cxi"};
  size_t n = strcspn(prov, ";");
  for (size_t i = 0; i < TD_ARRAY_SIZE(rdma); i++)
    if (strlen(rdma[i]) == n && !strncmp(prov, rdma[i], n)) return 1;
  return 0;
}
