/*
 * errors.c - result strings and the last detailed error (tpudistGetLastError): per communicator
 * (its tdNet's recorder), else the calling thread's, for errors without a communicator (init) or
 * with an invalid one. Recording and logging once is rt_error.c's.
 */
#include "comm.h"

TPUDIST_API const char *tpudistGetErrorString(tpudistResult_t result) {
  switch (result) {
    case tpudistSuccess:
      return "no error";
    case tpudistSystemError:
      return "system error (a system call failed)";
    case tpudistInternalError:
      return "internal error (a bug in tpu_dist)";
    case tpudistInvalidArgument:
      return "invalid argument";
    case tpudistInvalidUsage:
      return "invalid usage (call not allowed now)";
    case tpudistRemoteError:
      return "remote error (a peer failed or disconnected)";
    case tpudistInProgress:
      return "operation in progress";
    case tpudistNotSupported:
      return "not supported";
    case tpudistTimeout:
      return "timeout";
    case tpudistAborted:
      return "communicator aborted";
    case tpudistNoMemory:
      return "out of memory";
    default:
      return "unknown result code";
  }
}

TPUDIST_API const char *tpudistGetLastError(tpudistComm_t comm) {
  if (comm && commEnter(&comm->c, NULL) == tpudistSuccess) {
    const char *m = comm->c.net.err.msg;
    commLeave(&comm->c);
    return m;
  }
  return errThreadLast();
}
