/*
 * step_table.c - the one table of step semantics: what each step op reads, writes and puts on or
 * takes off the wire. The executor, the validator, the cost model and the simulator read this;
 * nothing re-derives step meaning.
 */
#include "sched_ir.h"

const tdStepSem tdStepSemTable[TD_NUM_STEP_OPS] = {
    [TD_STEP_SEND] = {"send", TD_SEM_READ_SRC | TD_SEM_WIRE_OUT},
    [TD_STEP_RECV] = {"recv", TD_SEM_WRITE_DST | TD_SEM_WIRE_IN},
    [TD_STEP_RECV_REDUCE] = {"recv_reduce",
                             TD_SEM_READ_SRC | TD_SEM_WRITE_DST | TD_SEM_WIRE_IN | TD_SEM_REDUCES},
    [TD_STEP_COPY] = {"copy", TD_SEM_READ_SRC | TD_SEM_WRITE_DST},
    [TD_STEP_REDUCE] = {"reduce",
                        TD_SEM_READ_SRC | TD_SEM_READ_DST | TD_SEM_WRITE_DST | TD_SEM_REDUCES},
    [TD_STEP_RECV_REDUCE_SEND] = {"recv_reduce_send", TD_SEM_READ_SRC | TD_SEM_WRITE_DST |
                                                          TD_SEM_WIRE_IN | TD_SEM_WIRE_OUT |
                                                          TD_SEM_REDUCES},
    [TD_STEP_RECV_COPY_SEND] = {"recv_copy_send",
                                TD_SEM_WRITE_DST | TD_SEM_WIRE_IN | TD_SEM_WIRE_OUT},
};

int schedSendPeer(const tdStep *st) {
  if (st->op == TD_STEP_SEND) return st->peer;
  if (st->op == TD_STEP_RECV_REDUCE_SEND || st->op == TD_STEP_RECV_COPY_SEND) return st->peer2;
  return -1;
}

int schedRecvPeer(const tdStep *st) {
  return (tdStepSemTable[st->op].flags & TD_SEM_WIRE_IN) ? st->peer : -1;
}

tdBufRef schedWireRef(const tdStep *st) {
  return st->op == TD_STEP_SEND ? st->src : st->dst;
}
