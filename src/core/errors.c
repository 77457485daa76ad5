/*
 * errors.c - result strings and the last detailed error: per communicator, plus a thread-local
 * one for errors without a communicator (init) or with an invalid one. An error is logged once,
 * here, where the runtime first records it.
 */
#include <stdarg.h>
#include <string.h>

#include "comm_priv.h"
#include "log.h"

static __thread char tlsLastError[TD_ERRLEN];

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
    const char *m = comm->c.last_error;
    commLeave(&comm->c);
    return m;
  }
  return tlsLastError;
}

tpudistResult_t commErrorMsg(tdComm *comm, tpudistResult_t res, const char *msg) {
  if (res == tpudistSuccess || res == tpudistInProgress) return res;
  snprintf(tlsLastError, sizeof(tlsLastError), "%s", msg);
  if (comm) {
    if (strcmp(comm->last_error, msg) == 0) return res; /* already recorded and logged */
    snprintf(comm->last_error, sizeof(comm->last_error), "%s", msg);
    TD_ERROR(TD_SUBSYS_COLL, "%s rank %d: %s (%s)", comm->name, comm->rank, msg,
             tpudistGetErrorString(res));
  } else {
    TD_ERROR(TD_SUBSYS_INIT, "%s (%s)", msg, tpudistGetErrorString(res));
  }
  return res;
}

tpudistResult_t commError(tdComm *comm, tpudistResult_t res, const char *fmt, ...) {
  char msg[TD_ERRLEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  return commErrorMsg(comm, res, msg);
}
