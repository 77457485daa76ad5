/*
 * rt_error.c - the error recorder: per communicator (tdErrRec) and per thread; the result strings
 * (tpudistGetErrorString).
 */
#include "rt_error.h"

#include <stdarg.h>
#include <string.h>

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

const char *errThreadLast(void) {
  return tlsLastError;
}

tpudistResult_t errRecord(tdErrRec *e, tdSubsys subsys, tpudistResult_t res, const char *msg) {
  if (res == tpudistSuccess || res == tpudistInProgress) return res;
  if (msg != tlsLastError) snprintf(tlsLastError, sizeof(tlsLastError), "%s", msg);
  if (!e) {
    TD_ERROR(TD_SUBSYS_INIT, "%s (%s)", msg, tpudistGetErrorString(res));
    return res;
  }
  if (msg == e->msg || strcmp(e->msg, msg) == 0) return res; /* already recorded and logged */
  snprintf(e->msg, sizeof(e->msg), "%s", msg);
  if (e->who)
    TD_ERROR(subsys, "%s rank %d: %s (%s)", e->who, e->rank, msg, tpudistGetErrorString(res));
  else
    TD_ERROR(subsys, "rank %d: %s (%s)", e->rank, msg, tpudistGetErrorString(res));
  return res;
}

tpudistResult_t errRecordf(tdErrRec *e, tdSubsys subsys, tpudistResult_t res, const char *fmt,
                           ...) {
  char msg[TD_ERRLEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  return errRecord(e, subsys, res, msg);
}

void errNote(tdErrRec *e, const char *fmt, ...) {
  char msg[TD_ERRLEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  snprintf(e->msg, sizeof(e->msg), "%s", msg);
  snprintf(tlsLastError, sizeof(tlsLastError), "%s", msg);
}
