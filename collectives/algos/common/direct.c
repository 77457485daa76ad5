/*
 * direct.c - the one-shot reduce-scatter and all-gather phases of direct.h.
 */
#include "direct.h"

/* st, issued once at has completed (a step of another stream; none on st's own stream, whose
 * order already covers it). */
static tdStep waitFor(tdStep st, uint32_t stream, const tdDirectAt *at) {
  if (at && at->stream != TD_NO_DEP && at->stream != stream) {
    int k = st.deps[0].stream == TD_NO_DEP ? 0 : 1;
    st.deps[k].stream = (uint16_t)at->stream, st.deps[k].step = at->step;
  }
  return st;
}

static tpudistResult_t add(tdSched *s, uint32_t stream, tdStep st, tdDirectAt *at) {
  uint32_t idx;
  TD_CHECK(schedAppend(s, stream, &st, &idx));
  if (at) at->stream = stream, at->step = idx;
  return tpudistSuccess;
}

static tdBufRef part(tdBufKind buf, int j) {
  return schedRef(buf, (uint32_t)j, 1);
}

/* Folds the n parts of chunk r into out in rank order, one step after the other (*prev: the last
 * step so far, or stream TD_NO_DEP): x_0 (received, or this rank's own), then (+) x_j, received and
 * reduced on the stream of its sender's distance, or this rank's own (INPUT chunk r, or stash in
 * place). */
static tpudistResult_t fold(tdSched *s, int n, int r, int inplace, tdBufRef out, tdBufRef stash,
                            tdDirectAt *prev) {
  tdBufRef own = inplace ? stash : part(TD_BUF_INPUT, r);
  for (int j = 0; j < n; j++) {
    uint32_t st = j == r ? 0 : directStream(n, (r - j + n) % n);
    tdStep x;
    if (j == r && j == 0 && inplace) continue; /* out already holds x_0 */
    if (j == r)
      x = j == 0 ? schedCopy(part(TD_BUF_INPUT, r), out) : schedReduce(own, out);
    else
      x = j == 0 ? schedRecv(j, out) : schedRecvReduce(j, out, out);
    TD_CHECK(add(s, st, waitFor(x, st, prev), prev));
  }
  return tpudistSuccess;
}

tpudistResult_t directReduceScatter(tdSched *s, int n, int r, int inplace, tdBufRef out,
                                    tdBufRef stash, tdDirectAt *sent, tdDirectAt *done) {
  tdDirectAt prev = {TD_NO_DEP, 0};
  s->rank_order = 1; /* fold: x_0 (+) x_1 (+) ... (+) x_{n-1} for every element */
  if (inplace && r != 0) TD_CHECK(add(s, 0, schedCopy(part(TD_BUF_INPUT, r), stash), &prev));
  for (int i = 1; i < n; i++) {
    int to = (r + i) % n;
    TD_CHECK(
        add(s, directStream(n, i), schedSend(to, part(TD_BUF_INPUT, to)), sent ? &sent[to] : NULL));
  }
  TD_CHECK(fold(s, n, r, inplace, out, stash, &prev));
  *done = prev;
  return tpudistSuccess;
}

tpudistResult_t directAllgather(tdSched *s, int n, int r, tdBufRef src, const tdDirectAt *after,
                                const tdDirectAt *ready) {
  for (int i = 1; i < n; i++) {
    int to = (r + i) % n, from = (r - i + n) % n;
    uint32_t st = directStream(n, i);
    tdStep rv = schedRecv(from, part(TD_BUF_OUTPUT, from));
    TD_CHECK(add(s, st, after ? waitFor(rv, st, &after[from]) : rv, NULL));
    TD_CHECK(add(s, st, waitFor(schedSend(to, src), st, ready), NULL));
  }
  return tpudistSuccess;
}
