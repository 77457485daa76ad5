/*
 * info_host.h - `tpudist-info --host` (info_host.c).
 */
#ifndef TD_INFO_HOST_H_
#define TD_INFO_HOST_H_

/* Prints the host as the library reads it and where this process runs; inside a TPU_DIST_COMM_ID
 * job (one tpudist-info per rank) rank 0 prints every rank's line and the communicator's NUMA
 * level; outside one, the NUMA level nranks ranks of this host would form. Returns the exit
 * status. */
int infoHost(int nranks);

#endif /* TD_INFO_HOST_H_ */
