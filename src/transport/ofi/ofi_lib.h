/*
 * ofi_lib.h - libfabric, loaded at run time (ofi_lib.c).
 *
 * The transport is built against libfabric's headers but not linked with it: libfabric.so.1 is
 * opened with dlopen the first time a communicator enables ofi, so the library runs where
 * libfabric is absent and says why ofi is off. Only a handful of libfabric's entry points are
 * real symbols (fi_getinfo, fi_freeinfo, fi_dupinfo, fi_fabric, fi_strerror); every other fi_*
 * call (fi_domain, fi_endpoint, fi_tsend, fi_cq_read, fi_mr_reg, ...) is an inline wrapper in the
 * headers that calls through the ops tables of the objects those five return, so it needs no
 * symbol.
 */
#ifndef TD_OFI_LIB_H_
#define TD_OFI_LIB_H_

#include <rdma/fabric.h>

#include "rt_config.h"

/* libfabric API version the transport asks for (1.10: fi_context2, FI_MR_ENDPOINT). */
#define TD_OFI_API FI_VERSION(1, 10)

typedef struct {
  int (*getinfo)(uint32_t version, const char *node, const char *service, uint64_t flags,
                 const struct fi_info *hints, struct fi_info **info);
  void (*freeinfo)(struct fi_info *info);
  struct fi_info *(*dupinfo)(const struct fi_info *info);
  int (*fabric)(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);
  const char *(*strerror)(int errnum);
} tdOfiLib;

/* libfabric's entry points, loaded once per process; NULL if it cannot be loaded, with the reason
 * (dlopen's) in why (at least TD_ERRLEN bytes). */
const tdOfiLib *ofiLib(char *why);

/* 1 if this machine shows an RDMA device that one of the RDMA providers drives
 * (/sys/class/infiniband: verbs, efa, psm3; /dev/hfi1_*: psm2; /dev/cxi*: cxi). */
int ofiRdmaDevicePresent(void);

/* 1 if provider name prov (e.g. "verbs;ofi_rxm") runs over an RDMA provider. */
int ofiProvIsRdma(const char *prov);

#endif /* TD_OFI_LIB_H_ */
