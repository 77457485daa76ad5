// group_defer.cpp - the group in defer mode (TPU_DIST_MODE=defer, docs/torch.md): all-reduces go to
// the library non-blocking, so it defers and fuses them, and their Works complete when a thread
// waits for one (the library's flush point is the first tpudistWait).
//
// Whoever finds the group idle (nothing executing, `busy` clear) does the work on its own thread,
// with no hand-off and no wake-up: the caller of an all-reduce issues it (a deferral in the
// library, a few microseconds), and the caller of Work::wait issues whatever is queued and then
// harvests -- waits for every issued request in order and completes each Work with its own
// result. Otherwise the worker does it: it issues what was queued meanwhile, harvests when a
// thread waits for it, when the group stops, and when nothing was issued for TPU_DIST_DEFER_US
// (futures are not waited through Work::wait, so they complete too). An operation that is not
// deferred is a flush point in the library: once it ran, every Work issued before it completes too.
//
// Every rank issues each all-reduce the same way (non-blocking, whichever thread), so the ranks'
// flush points are the same in their issue sequences (docs/runtime.md); every other operation runs
// as it would alone (a flush point in the library).
#include <cstdlib>

#include "process_group.hpp"

namespace tpu_dist {

bool WorkQueue::harvestHere() {
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!round || stop || busy || (q.empty() && pending == 0)) return false;
    busy = true;
  }
  round(true);
  done();
  return true;
}

void ProcessGroupTpuDist::deferIssue(const c10::intrusive_ptr<WorkTpuDist> &w) {
  DeferBatch &b = dbatch_;
  DeferSpan sp{w, b.reqs.size(), 0, b.steps.size(), 0, nullptr};
  // only a plain all-reduce is left pending; every other operation runs as it would alone
  bool pend = w->retrieveOpType() == c10d::OpType::ALLREDUCE;
  reqs_ = pend ? &b.reqs : nullptr;
  deferred_ = pend ? &b.steps : nullptr;
  try {
    w->body(*w);
  } catch (...) {
    sp.err = std::current_exception();
  }
  reqs_ = nullptr;
  deferred_ = nullptr;
  if (!pend && b.out.empty()) {  // done, and nothing issued before it: complete it now
    w->complete(sp.err);
    return;
  }
  sp.req1 = b.reqs.size();
  sp.step1 = b.steps.size();
  b.out.push_back(std::move(sp));
  // a flush point in the library: what was issued before w has been flushed, so its Works
  // complete now (with w), not at the next wait or timer
  if (!pend) deferHarvest();
}

void ProcessGroupTpuDist::deferIssueHere(const c10::intrusive_ptr<WorkTpuDist> &w) {
  WorkQueue &wq = *queue_;
  deferIssue(w);
  bool wake;
  {
    std::lock_guard<std::mutex> lock(wq.mu);
    // the worker sleeps without a timer while nothing is pending, and must run what was queued
    // meanwhile; otherwise it is not woken (a wake-up per call would cost what deferral saves)
    wake = wq.pending == 0 || !wq.q.empty() || wq.waiters > 0 || wq.stop;
    wq.pending = dbatch_.out.size();
    wq.issued++;
    wq.busy = false;
  }
  if (wake) wq.cv.notify_all();
}

void ProcessGroupTpuDist::deferRound(bool harvest) {
  WorkQueue &wq = *queue_;
  std::unique_lock<std::mutex> lock(wq.mu);
  while (!wq.q.empty()) {
    auto w = wq.q.front();
    wq.q.pop_front();
    lock.unlock();
    deferIssue(w);
    lock.lock();
    wq.pending = dbatch_.out.size();
    wq.issued++;
  }
  lock.unlock();
  if (harvest) deferHarvest();
}

void ProcessGroupTpuDist::deferHarvest() {
  DeferBatch &b = dbatch_;
  for (DeferSpan &sp : b.out) {
    for (size_t r = sp.req0; r < sp.req1; r++) {
      tpudistResult_t res = tpudistWait(b.reqs[r]);  // the first is the flush point
      try {
        if (!sp.err) check(res, *sp.w);
      } catch (...) {
        sp.err = std::current_exception();
      }
    }
    try {
      for (size_t k = sp.step0; !sp.err && k < sp.step1; k++) b.steps[k]();
    } catch (...) {
      sp.err = std::current_exception();
    }
    sp.w->complete(sp.err);
  }
  b.out.clear();
  b.reqs.clear();
  b.steps.clear();
  std::lock_guard<std::mutex> lock(queue_->mu);
  queue_->pending = 0;
}

void ProcessGroupTpuDist::deferLoop() {
  WorkQueue &wq = *queue_;
  const char *us = std::getenv("TPU_DIST_DEFER_US");
  auto poll = std::chrono::microseconds(std::max(100L, us && *us ? std::atol(us) : 1000L));
  auto work = [&] {
    return !wq.busy && (!wq.q.empty() || wq.stop || (wq.pending && wq.waiters > 0));
  };
  std::unique_lock<std::mutex> lock(wq.mu);
  for (;;) {
    bool harvest = true;
    if (!wq.pending) {
      wq.cv.wait(lock, [&] { return work() || (!wq.busy && wq.pending); });
      if (!work()) continue;  // something was issued: wait with the timer
      harvest = wq.stop || wq.waiters > 0;
    } else {
      uint64_t seen = wq.issued;
      if (!wq.cv.wait_for(lock, poll, work)) {
        // issues go on (or a caller harvested): wait another period
        if (wq.busy || wq.issued != seen || !wq.pending) continue;
      } else {
        harvest = wq.stop || wq.waiters > 0;
      }
    }
    if (wq.stop && wq.q.empty() && !wq.pending) return;
    wq.busy = true;
    lock.unlock();
    deferRound(harvest);
    wq.done();
    lock.lock();
  }
}

}  // namespace tpu_dist
