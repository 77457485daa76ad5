/*
 * errors.c - the last detailed error (tpudistGetLastError): per communicator (its tdNet's
 * recorder), else the calling thread's, for errors without a communicator (init) or with an
 * invalid one. Recording, logging once and the result strings are rt_error.c's.
 */
#include "comm.h"

TPUDIST_API const char *tpudistGetLastError(tpudistComm_t comm) {
  if (comm && commEnter(&comm->c, NULL) == tpudistSuccess) {
    const char *m = comm->c.net.err.msg;
    commLeave(&comm->c);
    return m;
  }
  return errThreadLast();
}
