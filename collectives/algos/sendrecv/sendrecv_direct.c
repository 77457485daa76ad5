/*
 * sendrecv_direct.c - the shifted send/receive: every rank sends its INPUT to (rank + shift) mod n
 * and receives its OUTPUT from (rank - shift) mod n, shift = args->root.
 *
 * Algorithm: one send and one receive on one stream, posted together. A shift of 0 (mod n), or a
 * single rank, is a local COPY (nothing in place). In place (INPUT = OUTPUT, a send/receive that
 * replaces the buffer) the receive lands in SCRATCH and is copied to OUTPUT once the send has
 * completed (a second stream holding only that copy, with explicit dependencies on both), so no
 * rank's receive waits on its own send. The messages are the same in both forms, so ranks may
 * differ in whether they call in place.
 *
 * Cost: alpha + m beta, m = count * elem_size (in place: + one local copy).
 *
 * Preconditions: any nranks >= 1, any count, any shift (taken mod n; negative allowed), in place
 * or out of place. No reduction. SCRATCH: one block in place, else none.
 */
#include "sendrecv.h"

/* Stream 1: copy SCRATCH -> OUTPUT after stream 0's send (step 0) and receive (step 1). */
static tpudistResult_t addFinalCopy(tdSched *s) {
  tdStep st = schedCopy(schedRef(TD_BUF_SCRATCH, 0, 1), schedRef(TD_BUF_OUTPUT, 0, 1));
  st.deps[0].stream = 0, st.deps[0].step = 0;
  st.deps[1].stream = 0, st.deps[1].step = 1;
  return schedAppend(s, 1, &st, NULL);
}

tpudistResult_t genSendrecvDirect(const tdCollArgs *a, tdSched *s, char *err) {
  int n = a->nranks, r = a->rank;
  (void)err;
  int shift = ((a->root % n) + n) % n;
  tdBufRef in = schedRef(TD_BUF_INPUT, 0, 1), out = schedRef(TD_BUF_OUTPUT, 0, 1);
  schedSetLayout(s, TD_BUF_INPUT, 1, 1);
  schedSetLayout(s, TD_BUF_OUTPUT, 1, 1);
  schedSetLayout(s, TD_BUF_SCRATCH, shift && a->inplace ? 1 : 0, 1);
  if (shift == 0) return a->inplace ? tpudistSuccess : schedPush(s, schedCopy(in, out));
  TD_CHECK(schedPush(s, schedSend((r + shift) % n, in)));
  if (!a->inplace) return schedPush(s, schedRecv((r - shift + n) % n, out));
  tdBufRef tmp = schedRef(TD_BUF_SCRATCH, 0, 1);
  TD_CHECK(schedPush(s, schedRecv((r - shift + n) % n, tmp)));
  return addFinalCopy(s);
}
