// group.cpp - the tpu_dist group's life: bootstrap through the c10d Store or split from a parent,
// the operation queue and its worker, coalesced batches, shutdown and abort.
#include <Python.h>  // first, as Python asks
#include <c10/util/Exception.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "process_group.hpp"

namespace tpu_dist {

namespace {

// ---- the c10d Store as the C library's external store (counting its operations) ----
struct StoreCtx {
  c10d::Store *store;
  std::atomic<int> *ops;
};

int storeSet(void *ctx, const char *key, const void *value, size_t len) {
  try {
    auto *c = static_cast<StoreCtx *>(ctx);
    const uint8_t *p = static_cast<const uint8_t *>(value);
    c->ops->fetch_add(1);
    c->store->set(key, std::vector<uint8_t>(p, p + len));
    return 0;
  } catch (...) {
    return 1;
  }
}

int storeGet(void *ctx, const char *key, void **value, size_t *len, int /*timeoutMs*/) {
  try {
    auto *c = static_cast<StoreCtx *>(ctx);
    c->ops->fetch_add(1);
    std::vector<uint8_t> v = c->store->get(key);  // blocks until set, bounded by its timeout
    void *out = std::malloc(v.empty() ? 1 : v.size());
    if (!out) return 1;
    if (!v.empty()) std::memcpy(out, v.data(), v.size());
    *value = out;
    *len = v.size();
    return 0;
  } catch (...) {
    return 1;
  }
}

std::chrono::milliseconds pick(std::chrono::milliseconds opTimeout,
                               std::chrono::milliseconds groupTimeout) {
  return opTimeout == c10d::kUnsetTimeout ? groupTimeout : opTimeout;
}

}  // namespace

tpudistConfig_t configFor(std::chrono::milliseconds timeout) {
  tpudistConfig_t cfg = TPUDIST_CONFIG_INITIALIZER;
  cfg.timeoutMs = (int)std::min<int64_t>(timeout.count(), INT32_MAX);
  return cfg;
}

// The group's execution mode: Options.mode, else TPU_DIST_MODE (what the C library reads).
// Sets cfg.mode when the option names one; returns 1 for defer.
int modeOf(const std::string &opt, tpudistConfig_t *cfg) {
  const char *env = std::getenv("TPU_DIST_MODE");
  std::string m = !opt.empty() ? opt : env ? env : "";
  for (auto &ch : m) ch = (char)std::tolower((unsigned char)ch);
  if (!opt.empty() && cfg) {
    TORCH_CHECK(m == "strict" || m == "debug" || m == "defer",
                "tpu_dist: Options.mode must be strict, debug or defer, not '", opt, "'");
    cfg->mode = m == "defer"   ? TPUDIST_MODE_DEFER
                : m == "debug" ? TPUDIST_MODE_DEBUG
                               : TPUDIST_MODE_STRICT;
  }
  return m == "defer";
}

// ---- Work ----
namespace {
// The type of every Work's Future value (made once: a Work is made per call).
const c10::TypePtr &tensorListType() {
  static const c10::TypePtr t = c10::ListType::create(c10::TensorType::get());
  return t;
}
}  // namespace

WorkTpuDist::WorkTpuDist(int rank, c10d::OpType type, const char *name, uint64_t sequence,
                         std::vector<at::Tensor> outputs, std::chrono::milliseconds timeout)
    : c10d::Work(rank, type),
      opName(name),
      seq(sequence),
      outputs_(std::move(outputs)),
      timeout_(timeout) {}

// The result is set, and the Future completed, before the Work itself (complete() below), so a
// Work whose Future is done already counts as completed: get_future().wait() then is_completed()
// is true on every thread.
bool WorkTpuDist::isCompleted() {
  if (done_.load(std::memory_order_acquire)) return true;
  if (queue) queue->kick();
  return false;
}

bool WorkTpuDist::isSuccess() const {
  return done_.load(std::memory_order_acquire) && !err_;
}

c10::intrusive_ptr<c10::ivalue::Future> WorkTpuDist::getFuture() {
  if (queue) queue->kick();
  std::lock_guard<std::mutex> lock(mutex_);
  if (!future_) {
    future_ = c10::make_intrusive<c10::ivalue::Future>(tensorListType());
    if (done_.load(std::memory_order_relaxed)) settle(*future_, err_);  // no callbacks yet
  }
  return future_;
}

void WorkTpuDist::settle(c10::ivalue::Future &fut, const std::exception_ptr &err) {
  if (err)
    fut.setError(err);
  else
    fut.markCompleted(c10::IValue(outputs_));
}

namespace {
// Counts a thread waiting for a Work in the queue's waiters while it lives (the worker runs the
// queue, or in defer mode harvests, when someone waits).
struct WaitMark {
  WorkQueue *q;
  explicit WaitMark(WorkQueue *queue) : q(queue) {
    if (!q) return;
    std::lock_guard<std::mutex> lock(q->mu);
    q->waiters++;
    q->cv.notify_all();
  }
  ~WaitMark() {
    if (!q) return;
    std::lock_guard<std::mutex> lock(q->mu);
    q->waiters--;
  }
};
}  // namespace

bool WorkQueue::runIfHead(WorkTpuDist *w) {
  c10::intrusive_ptr<WorkTpuDist> head;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!runInline || busy || q.empty() || q.front().get() != w) return false;
    head = std::move(q.front());
    q.pop_front();
    busy = true;
  }
  head->execute();
  head.reset();
  done();
  return true;
}

void WorkQueue::done() {
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mu);
    busy = false;
    wake = !runInline || !q.empty() || stop;  // defer mode's worker watches busy
  }
  if (wake) cv.notify_all();
}

void WorkQueue::kick() {
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!runInline || q.empty() || kicked) return;
    kicked = true;
  }
  cv.notify_all();
}

bool WorkTpuDist::wait(std::chrono::milliseconds timeout) {
  auto limit = timeout == kNoTimeout ? timeout_ : timeout;
  bool waitsForWorker = queue && !done_.load(std::memory_order_acquire);
  if (waitsForWorker && queue->runInline) waitsForWorker = !queue->runIfHead(this);
  if (waitsForWorker && !queue->runInline) waitsForWorker = !queue->harvestHere();
  WaitMark mark(waitsForWorker ? queue.get() : nullptr);  // defer mode: the worker harvests
  std::unique_lock<std::mutex> lock(mutex_);
  // completed (run here, say): no clock read for a deadline
  if (!completed_ && !cv_.wait_for(lock, limit, [&] { return completed_; })) {
    if (queue) queue->lastError = 1;  // c10d::ErrorType::TIMEOUT
    std::ostringstream os;
    os << "tpu_dist: " << opName << " (sequence " << seq << ") on rank " << rank_
       << " timed out after " << limit.count() << " ms";
    TORCH_CHECK(false, os.str());
  }
  if (exception_) std::rethrow_exception(exception_);
  return true;
}

// The result and the Future, then the Work (wait() returns once both are done): see isCompleted.
void WorkTpuDist::complete(std::exception_ptr err) {
  if (completing_.exchange(true)) return;  // once (a batch's op may be failed twice)
  c10::intrusive_ptr<c10::ivalue::Future> fut;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    err_ = err;
    done_.store(true, std::memory_order_release);
    fut = future_;
  }
  if (fut) settle(*fut, err);  // outside the lock: its callbacks may use this Work
  finish(err);
}

void WorkTpuDist::execute() {
  std::exception_ptr err;
  try {
    body(*this);
  } catch (...) {
    err = std::current_exception();
  }
  complete(err);
}

// ---- ProcessGroup: creation, worker, destruction ----
ProcessGroupTpuDist::ProcessGroupTpuDist(const c10::intrusive_ptr<c10d::Store> &store, int rank,
                                         int size, c10::intrusive_ptr<Options> options)
    : BaseGroup(rank, size), options_(std::move(options)), timeout_(options_->timeout) {
  if (openEndpoint()) {  // enable_reconfigure: no communicator until reconfigure()
    defer_ = modeOf(options_->mode, nullptr);
    start();
    return;
  }
  StoreCtx ctx{store.get(), &storeOps_};
  tpudistStore_t st;
  st.ctx = &ctx;
  st.set = storeSet;
  st.get = storeGet;
  tpudistConfig_t cfg = configFor(timeout_);
  defer_ = modeOf(options_->mode, &cfg);
  tpudistResult_t res = tpudistCommInitStore(&comm_, size, rank, &st, "tpu_dist", &cfg);
  TORCH_CHECK(res == tpudistSuccess, "tpu_dist: communicator init failed on rank ", rank, ": ",
              tpudistGetErrorString(res), ": ", tpudistGetLastError(nullptr));
  start();
}

ProcessGroupTpuDist::ProcessGroupTpuDist(tpudistComm_t comm, int rank, int size,
                                         c10::intrusive_ptr<Options> options)
    : BaseGroup(rank, size),
      comm_(comm),
      options_(std::move(options)),
      timeout_(options_->timeout) {
  defer_ = modeOf(options_->mode, nullptr);  // a split inherits its parent's mode in the library
  start();
}

void ProcessGroupTpuDist::start() {
#if TD_TORCH_2_0
  init();  // torch's per-backend setup (debug level, logging)
#endif
  queue_->runInline = !defer_;
  if (defer_) queue_->round = [this](bool harvest) { deferRound(harvest); };
  startWorkerLocked();
}

ProcessGroupTpuDist::~ProcessGroupTpuDist() {
  shutdown();
}

std::vector<c10::intrusive_ptr<WorkTpuDist>> ProcessGroupTpuDist::takeQueuedLocked() {
  std::vector<c10::intrusive_ptr<WorkTpuDist>> out(queue_->q.begin(), queue_->q.end());
  out.insert(out.end(), coalesced_.begin(), coalesced_.end());
  queue_->q.clear();
  coalesced_.clear();
  coalescing_ = false;
  return out;
}

NoGil::NoGil() {
  if (Py_IsInitialized() && PyGILState_Check()) st_ = PyEval_SaveThread();
}

NoGil::~NoGil() {
  if (st_) PyEval_RestoreThread((PyThreadState *)st_);
}

void failAll(const std::vector<c10::intrusive_ptr<WorkTpuDist>> &works, const std::string &msg) {
  auto err = std::make_exception_ptr(std::runtime_error(msg));
  for (auto &w : works) w->complete(err);
}

void ProcessGroupTpuDist::shutdown() {
  NoGil nogil;
  std::lock_guard<std::mutex> admin(adminMu_);
  tpudistReconfDestroy(endpoint_);
  endpoint_ = nullptr;
  if (closed_) return;
  closed_ = true;
  std::ostringstream os;
  os << "tpu_dist: the process group was shut down on rank " << getRank()
     << " before this operation ran";
  stopWorkerLocked(os.str());
  if (comm_ && !aborted_) tpudistCommDestroy(comm_);
  comm_ = nullptr;
}

void ProcessGroupTpuDist::abort() {
  NoGil nogil;
  std::lock_guard<std::mutex> admin(adminMu_);
  if (closed_) return;
  closed_ = true;
  aborted_ = true;
  std::vector<c10::intrusive_ptr<WorkTpuDist>> pending;
  {
    std::lock_guard<std::mutex> lock(queue_->mu);
    pending = takeQueuedLocked();
    queue_->stop = true;
  }
  queue_->cv.notify_all();
  std::ostringstream os;
  os << "tpu_dist: the process group was aborted on rank " << getRank();
  failAll(pending, os.str());
  // Safe from any thread: fails the running operation, releases its waits, frees the
  // communicator once the calls inside it have left.
  if (comm_) tpudistCommAbort(comm_);
  if (worker_.joinable()) worker_.join();
  comm_ = nullptr;
  runAbortHooks();
}

// Strict and debug mode (the header's WorkQueue): a hot worker leaves the head to its caller's
// wait unless something says it will not come soon; seen is the head at the last period. While
// operations are issued and every one is claimed by its caller before the worker looks (blocking
// calls), the period doubles up to kMaxStretch base periods: such a worker has nothing to do, and
// each of its wake-ups takes a core from a rank in the middle of a collective. Sighting an
// operation that waits brings the period back to the base one.
namespace {
constexpr auto kPoll = std::chrono::microseconds(200);
constexpr int kMaxStretch = 8;
constexpr int kQuietPolls = 50;
}  // namespace

void ProcessGroupTpuDist::workerLoop() {
  if (defer_) return deferLoop();
  WorkQueue &wq = *queue_;
  std::unique_lock<std::mutex> lock(wq.mu);
  uint64_t seen = 0, issues = wq.enqueued;
  int quiet = 0, stretch = 1;  // quiet: base periods without an issue
  for (;;) {
    if (wq.stop && wq.q.empty()) return;  // stopped and drained
    if (!wq.q.empty() && !wq.busy) {
      uint64_t head = wq.q.front()->seq;
      if (!wq.hot || wq.stop || wq.kicked || wq.waiters > 0 || wq.q.size() > 1 || head == seen) {
        c10::intrusive_ptr<WorkTpuDist> w = std::move(wq.q.front());
        wq.q.pop_front();
        wq.busy = true;
        wq.kicked = false;
        lock.unlock();
        w->execute();
        w.reset();
        wq.done();
        lock.lock();
        wq.hot = true;
        quiet = 0;
        stretch = 1;
        continue;
      }
      seen = head;
      stretch = 1;  // it runs after one base period unless its caller claims it
    }
    if (!wq.hot) {  // cold: the next issue wakes the worker, which turns hot
      wq.cv.wait(lock);
      wq.hot = true;
      quiet = 0;
      stretch = 1;
      issues = wq.enqueued;
    } else if (wq.cv.wait_for(lock, kPoll * stretch) == std::cv_status::timeout) {
      bool issued = wq.enqueued != issues;
      quiet = issued ? 0 : quiet + stretch;
      issues = wq.enqueued;
      if (issued && wq.q.empty()) stretch = std::min(2 * stretch, kMaxStretch);
      if (quiet >= kQuietPolls && wq.q.empty()) wq.hot = false;
    }
  }
}

c10::intrusive_ptr<WorkTpuDist> ProcessGroupTpuDist::makeWork(
    c10d::OpType type, const char *name, std::vector<at::Tensor> outputs,
    std::chrono::milliseconds timeout, std::function<void(WorkTpuDist &)> body) {
  auto w = c10::make_intrusive<WorkTpuDist>(getRank(), type, name, ++seq_, std::move(outputs),
                                            pick(timeout, timeout_));
  w->body = std::move(body);
  return w;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpuDist::enqueue(
    c10d::OpType type, const char *name, std::vector<at::Tensor> outputs,
    std::chrono::milliseconds timeout, std::function<void(WorkTpuDist &)> body) {
  auto w = makeWork(type, name, std::move(outputs), timeout, std::move(body));
  bool stopped = false, here = false, wake = false;
  {
    WorkQueue &wq = *queue_;
    std::lock_guard<std::mutex> lock(wq.mu);
    stopped = wq.stop || !comm_;
    if (!stopped && coalescing_) {
      coalesced_.push_back(w);  // completed by the batch endCoalescing queues
      return w;
    }
    if (!stopped) {
      w->queue = queue_;
      wq.enqueued++;
      // defer mode: an all-reduce goes to the library now, on this thread, if nothing executes
      here = defer_ && type == c10d::OpType::ALLREDUCE && wq.q.empty() && !wq.busy;
      if (here)
        wq.busy = true;
      else
        wq.q.push_back(w);
      // strict and debug mode: a hot worker is not woken for an operation its caller may run
      wake = !here && (defer_ || !wq.hot || wq.q.size() > 1);
    }
  }
  if (here) {
    deferIssueHere(w);
    return w;
  }
  if (stopped) {  // fails at once (outside the lock: its Future's callbacks may issue work)
    std::ostringstream os;
    os << "tpu_dist: " << name << " on rank " << getRank() << ": the process group "
       << (aborted_  ? "was aborted"
           : closed_ ? "was shut down"
                     : "was made with enable_reconfigure=True and has no communicator until "
                       "reconfigure");
    w->complete(std::make_exception_ptr(std::runtime_error(os.str())));
    return w;
  }
  if (wake) queue_->cv.notify_one();
  return w;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpuDist::enqueueBatch(
    c10d::OpType type, const char *name, std::vector<c10::intrusive_ptr<WorkTpuDist>> ops,
    std::chrono::milliseconds timeout) {
  std::vector<at::Tensor> outs;
  for (auto &op : ops) {
    auto r = op->result();
    outs.insert(outs.end(), r.begin(), r.end());
  }
  return enqueue(type, name, outs, timeout, [this, ops](WorkTpuDist &w) {
    std::vector<std::function<void()>> steps;
    std::exception_ptr err;
    check(tpudistGroupStart(), w);
    deferred_ = &steps;
    try {
      for (auto &op : ops) op->body(*op);
    } catch (...) {
      err = std::current_exception();
    }
    deferred_ = nullptr;
    tpudistResult_t res = tpudistGroupEnd();  // always closes the group, even after an error
    try {
      if (!err) check(res, w);
      if (!err)
        for (auto &fn : steps) fn();
    } catch (...) {
      err = std::current_exception();
    }
    for (auto &op : ops) op->complete(err);
    if (err) std::rethrow_exception(err);
  });
}

// ---- split ----
c10::intrusive_ptr<ProcessGroupTpuDist> ProcessGroupTpuDist::splitByColor(
    int color, int key, c10::intrusive_ptr<Options> options) {
  auto child = std::make_shared<tpudistComm_t>(nullptr);
  auto work = enqueue(c10d::OpType::UNKNOWN, "split", {}, c10d::kUnsetTimeout,
                      [this, color, key, child, options](WorkTpuDist &w) {
                        tpudistConfig_t cfg = configFor(options ? options->timeout : timeout_);
                        check(tpudistCommSplit(comm_, color, key, child.get(), &cfg), w);
                      });
  work->wait();
  if (!*child) return {};
  int rank = 0, size = 0;
  tpudistCommUserRank(*child, &rank);
  tpudistCommCount(*child, &size);
  if (!options) options = c10::make_intrusive<Options>(timeout_);
  return c10::make_intrusive<ProcessGroupTpuDist>(*child, rank, size, options);
}

// ---- shrink ----
c10::intrusive_ptr<ProcessGroupTpuDist> ProcessGroupTpuDist::shrinkExcluding(
    const std::vector<int> &exclude, bool abort, c10::intrusive_ptr<Options> options,
    std::vector<int> *members) {
  NoGil nogil;  // the agreement waits for the other survivors
  {
    std::lock_guard<std::mutex> admin(adminMu_);
    TORCH_CHECK(!closed_, "tpu_dist: shrink of a process group that was shut down or aborted");
  }
  if (abort) {
    // Fails the running operation at once (any thread) and every queued one, so the shrink runs
    // next instead of behind operations that would each wait for the dead ranks.
    std::vector<c10::intrusive_ptr<WorkTpuDist>> pending;
    {
      std::lock_guard<std::mutex> admin(adminMu_);
      if (!closed_) tpudistCommRevoke(comm_);
      std::lock_guard<std::mutex> lock(queue_->mu);
      pending = takeQueuedLocked();
    }
    std::ostringstream os;
    os << "tpu_dist: the process group was revoked on rank " << getRank()
       << " to be shrunk before this operation ran";
    failAll(pending, os.str());
  }
  auto child = std::make_shared<tpudistComm_t>(nullptr);
  auto old = std::make_shared<std::vector<int>>();
  auto work = enqueue(
      c10d::OpType::UNKNOWN, "shrink", {}, c10d::kUnsetTimeout,
      [this, exclude, abort, child, old, options](WorkTpuDist &w) {
        tpudistConfig_t cfg = configFor(options ? options->timeout : timeout_);
        check(tpudistCommShrink(comm_, exclude.empty() ? nullptr : exclude.data(),
                                (int)exclude.size(), child.get(), &cfg,
                                abort ? TPUDIST_SHRINK_ABORT : TPUDIST_SHRINK_DEFAULT),
              w);
        // The members' ranks in this group, in their new order: with the agreed failed set only
        // the library knows them, so each member says its own.
        int size = 0, me = getRank();
        tpudistCommCount(*child, &size);
        old->assign((size_t)size, -1);
        tpudistResult_t res = tpudistAllGather(&me, old->data(), 1, tpudistInt32, *child, nullptr);
        if (res != tpudistSuccess) {
          std::string why = tpudistGetLastError(*child);
          tpudistCommAbort(*child);
          *child = nullptr;
          TORCH_CHECK(false, "tpu_dist: shrink on rank ", me,
                      ": the new group failed its first collective: ", tpudistGetErrorString(res),
                      ": ", why);
        }
      });
  // The library bounds a shrink by a few agreement timeouts (TPU_DIST_AGREE_TIMEOUT_MS, default
  // 10 s; docs/reliability.md) plus the group's timeout, which may be shorter than that: wait that
  // long, not just the group's timeout, so a slow agreement is not cut off while it still runs.
  const char *agree = std::getenv("TPU_DIST_AGREE_TIMEOUT_MS");
  long agreeMs = agree && *agree ? std::atol(agree) : 10000;
  work->wait(timeout_ + std::chrono::milliseconds(6 * std::max(agreeMs, 1000L)));
  TORCH_CHECK(*child, "tpu_dist: shrink returned no communicator on rank ", getRank());
  int rank = 0, size = 0;
  tpudistCommUserRank(*child, &rank);
  tpudistCommCount(*child, &size);
  if (members) *members = *old;
  if (!options) options = c10::make_intrusive<Options>(timeout_);
  return c10::make_intrusive<ProcessGroupTpuDist>(*child, rank, size, options);
}

#if TD_TORCH_2_14
// torch's SHRINK_ABORT flag (torch.distributed.SHRINK_ABORT).
constexpr int kTorchShrinkAbort = 0x01;

c10::intrusive_ptr<c10d::Backend> ProcessGroupTpuDist::shrink(
    const std::vector<int64_t> &ranksToExclude, int shrinkFlags,
    const c10::intrusive_ptr<c10d::Backend::Options> &optsOverride) {
  std::vector<int> exclude(ranksToExclude.begin(), ranksToExclude.end());
  c10::intrusive_ptr<Options> opts;
  if (optsOverride) {
    opts = c10::make_intrusive<Options>(optsOverride->timeout);
    if (auto mine = c10::dynamic_intrusive_pointer_cast<Options>(optsOverride)) {
      opts->mode = mine->mode;
    }
  }
  return shrinkExcluding(exclude, (shrinkFlags & kTorchShrinkAbort) != 0, opts, nullptr);
}
#endif

// ---- coalescing ----
#if TD_TORCH_2_0
void ProcessGroupTpuDist::startCoalescing() {
  std::lock_guard<std::mutex> lock(queue_->mu);
  TORCH_CHECK(!coalescing_, "tpu_dist: startCoalescing while already coalescing");
  coalescing_ = true;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpuDist::endCoalescing() {
  std::vector<c10::intrusive_ptr<WorkTpuDist>> ops;
  {
    std::lock_guard<std::mutex> lock(queue_->mu);
    TORCH_CHECK(coalescing_, "tpu_dist: endCoalescing without startCoalescing");
    coalescing_ = false;
    ops.swap(coalesced_);
  }
  return enqueueBatch(c10d::OpType::COALESCED, "coalesced", std::move(ops), c10d::kUnsetTimeout);
}
#endif

}  // namespace tpu_dist
