/*
 * sendrecv.h - the send/recv generator (sendrecv_direct.c) and its row of the algorithm table.
 */
#ifndef TD_SENDRECV_H_
#define TD_SENDRECV_H_

#include "generator.h"

tpudistResult_t genSendrecvDirect(const tdCollArgs *a, tdSched *s, char *err);

/* Its rows of the algorithm table (algos.c), in the order its candidates are considered. */
/* clang-format off */
#define TD_ALGO_ROWS_SENDRECV                        \
  {TD_COLL_SENDRECV, "direct", genSendrecvDirect, 0}
/* clang-format on */

#endif /* TD_SENDRECV_H_ */
