/*
 * rt_error.h - the one error recorder (runtime base). Every layer of the runtime records a failure
 * here: the detailed message becomes the communicator's last error (tpudistGetLastError) and the
 * calling thread's (for errors without a communicator), and it is logged once, where it is first
 * seen. A layer that passes a cause up records it again unchanged (no second log line) or wraps it
 * with errNote (recorded, not logged: the cause already was).
 */
#ifndef TD_RT_ERROR_H_
#define TD_RT_ERROR_H_

#include "rt_log.h"
#include "td_base.h"

typedef struct {
  char msg[TD_ERRLEN]; /* the last detailed error ("" none) */
  const char *who;     /* communicator name for log lines (NULL: none yet) */
  int rank;
} tdErrRec;

/* Records msg for e and logs it under subsys unless it equals the message e already holds; e NULL
 * (no communicator yet): only the calling thread's record, logged under INIT. Success and
 * InProgress record nothing. Returns res. */
tpudistResult_t errRecord(tdErrRec *e, tdSubsys subsys, tpudistResult_t res, const char *msg);
/* errRecord with a formatted message. */
tpudistResult_t errRecordf(tdErrRec *e, tdSubsys subsys, tpudistResult_t res, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Records a message that wraps an already logged cause (e.g. "transport failure: <cause>"), without
 * logging it. fmt may use e->msg as an argument. */
void errNote(tdErrRec *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The calling thread's last recorded error ("" none). */
const char *errThreadLast(void);

#endif /* TD_RT_ERROR_H_ */
