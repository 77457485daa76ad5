// group_reconf.cpp - torch's fault-tolerance contract (torch 2.13+): a group made with
// enable_reconfigure=True has a reconfiguration endpoint (tpudistReconfCreate) and no communicator
// until reconfigure(), which makes one over the processes whose handles it is given
// (tpudistCommReconfigure: subset, superset, late joiners, merge of disjoint groups, recovery
// after abort) and swaps it in; getError, setTimeout, abort hooks, split and merge (torch 2.14).
#include <c10/util/Exception.h>

#include <algorithm>
#include <sstream>

#include "process_group.hpp"

namespace tpu_dist {

namespace {
#if TD_TORCH_2_14
c10d::ErrorType errorTypeOf(tpudistResult_t res) {
  switch (res) {
    case tpudistSuccess:
      return c10d::ErrorType::SUCCESS;
    case tpudistTimeout:
      return c10d::ErrorType::TIMEOUT;
    case tpudistRemoteError:
      return c10d::ErrorType::REMOTE_ERROR;
    default:
      return c10d::ErrorType::COMM_ERROR;
  }
}
#endif
}  // namespace

void ProcessGroupTpuDist::noteError(tpudistResult_t res) const {
#if TD_TORCH_2_14
  if (res != tpudistSuccess && res != tpudistAborted) queue_->lastError = (int)errorTypeOf(res);
#else
  (void)res;
#endif
}

bool ProcessGroupTpuDist::openEndpoint() {
#if TD_TORCH_RECONFIGURE
  if (!options_->enable_reconfigure) return false;
  char handle[TPUDIST_RECONF_HANDLE_BYTES];
  tpudistResult_t res = tpudistReconfCreate(&endpoint_, handle, sizeof(handle));
  TORCH_CHECK(res == tpudistSuccess, "tpu_dist: reconfiguration endpoint failed on rank ",
              getRank(), ": ", tpudistGetErrorString(res), ": ", tpudistGetLastError(nullptr));
  handle_ = handle;
  reconfigurable_ = true;
  return true;
#else
  return false;
#endif
}

void ProcessGroupTpuDist::stopWorkerLocked(const std::string &why) {
  std::vector<c10::intrusive_ptr<WorkTpuDist>> pending;
  {
    std::lock_guard<std::mutex> lock(queue_->mu);
    pending = takeQueuedLocked();
    queue_->stop = true;
  }
  queue_->cv.notify_all();
  failAll(pending, why);
  if (worker_.joinable()) worker_.join();  // the running operation ends, bounded by its timeout
}

void ProcessGroupTpuDist::startWorkerLocked() {
  {
    std::lock_guard<std::mutex> lock(queue_->mu);
    queue_->stop = false;
  }
  worker_ = std::thread(&ProcessGroupTpuDist::workerLoop, this);
}

#if TD_TORCH_RECONFIGURE
c10d::ReconfigureHandle ProcessGroupTpuDist::get_reconfigure_handle() const {
  TORCH_CHECK(endpoint_,
              "tpu_dist: get_reconfigure_handle on a group made without "
              "enable_reconfigure=True (init_process_group(..., "
              "enable_reconfigure=True))");
  return handle_;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpuDist::reconfigure(
    const c10d::ReconfigureOptions &opts) {
  TORCH_CHECK(endpoint_, "tpu_dist: reconfigure of a group made without enable_reconfigure=True");
  // A list gives the ranks; a set is ordered by handle, so every member derives the same order.
  std::vector<std::string> hs;
  if (auto *v = std::get_if<std::vector<c10d::ReconfigureHandle>>(&opts.handles)) {
    hs = *v;
  } else {
    const auto &s = std::get<std::unordered_set<c10d::ReconfigureHandle>>(opts.handles);
    hs.assign(s.begin(), s.end());
    std::sort(hs.begin(), hs.end());
  }
  TORCH_CHECK(!hs.empty(), "tpu_dist: reconfigure (uuid ", opts.uuid, ") with no handles");
  std::vector<const char *> ptrs;
  for (auto &h : hs) ptrs.push_back(h.c_str());
  auto timeout = opts.timeout.value_or(timeout_);
  NoGil nogil;  // the rendezvous waits for the other members
  std::lock_guard<std::mutex> admin(adminMu_);
  TORCH_CHECK(!closed_ || aborted_, "tpu_dist: reconfigure of a process group that was shut down");
  // The new communicator is made beside the current one, which stays as it is if that fails.
  tpudistConfig_t cfg = configFor(timeout);
  modeOf(options_->mode, &cfg);
  tpudistComm_t next = nullptr;
  tpudistResult_t res = tpudistCommReconfigure(endpoint_, opts.uuid, ptrs.data(), (int)ptrs.size(),
                                               cfg.timeoutMs, &cfg, &next);
  if (res != tpudistSuccess) {
    noteError(res);
    TORCH_CHECK(false, "tpu_dist: reconfigure (uuid ", opts.uuid, ") failed on rank ", getRank(),
                ": ", tpudistGetErrorString(res), ": ", tpudistGetLastError(nullptr));
  }
  // The current communicator is revoked (an operation still running on it, e.g. one a peer never
  // joined, fails at once instead of holding the worker until its timeout), its queued operations
  // fail, and it is released without a collective destroy (its members that are not in the new
  // one take no part).
  if (comm_ && !aborted_) tpudistCommRevoke(comm_);
  std::ostringstream why;
  why << "tpu_dist: the process group on rank " << getRank()
      << " was reconfigured before this operation ran";
  if (!closed_) stopWorkerLocked(why.str());
  if (comm_ && !aborted_) tpudistCommAbort(comm_);
  int rank = 0, size = 0;
  tpudistCommUserRank(next, &rank);
  tpudistCommCount(next, &size);
  {
    std::lock_guard<std::mutex> lock(queue_->mu);
    comm_ = next;
    rank_ = rank;
    size_ = size;
  }
  aborted_ = false;
  closed_ = false;
  queue_->lastError = 0;
  startWorkerLocked();
  auto w = makeWork(c10d::OpType::UNKNOWN, "reconfigure", {}, c10d::kUnsetTimeout, {});
  w->complete(nullptr);
  return w;
}
#endif

#if TD_TORCH_ABORT_HOOKS
void ProcessGroupTpuDist::registerAbortHook(int64_t id, c10d::AbortHook hook) {
  std::lock_guard<std::mutex> lock(hooksMu_);
  abortHooks_[id] = std::move(hook);
}

void ProcessGroupTpuDist::unregisterAbortHook(int64_t id) {
  std::lock_guard<std::mutex> lock(hooksMu_);
  abortHooks_.erase(id);
}
#endif

void ProcessGroupTpuDist::runAbortHooks() {
  std::map<int64_t, std::function<void()>> hooks;
  {
    std::lock_guard<std::mutex> lock(hooksMu_);
    hooks = abortHooks_;
  }
  for (auto &h : hooks) {
    try {
      h.second();
    } catch (const std::exception &e) {
      TORCH_WARN("tpu_dist: abort hook ", h.first, " raised: ", e.what());
    }
  }
}

#if TD_TORCH_2_14
c10d::ErrorType ProcessGroupTpuDist::getError() {
  return (c10d::ErrorType)queue_->lastError.load();
}

void ProcessGroupTpuDist::setTimeout(std::chrono::milliseconds timeout) {
  TORCH_CHECK(timeout.count() > 0, "tpu_dist: set_timeout needs a positive timeout");
  timeout_ = timeout;
  options_->timeout = timeout;
  if (comm_) tpudistCommSetTimeout(comm_, (int)std::min<int64_t>(timeout.count(), INT32_MAX));
}

c10::intrusive_ptr<c10d::Backend> ProcessGroupTpuDist::split(
    const c10::intrusive_ptr<c10d::Store> &store, const std::vector<int> &ranks,
    const c10::intrusive_ptr<c10d::Backend::Options> &opts) {
  auto it = std::find(ranks.begin(), ranks.end(), getRank());
  if (it == ranks.end()) return {};  // not a member
  auto o = c10::make_intrusive<Options>(opts ? opts->timeout : timeout_);
  o->mode = options_->mode;
  if (opts) o->group_name = opts->group_name;
  for (int r : ranks) o->global_ranks_in_group.push_back((uint64_t)r);
  NoGil nogil;
  return c10::make_intrusive<ProcessGroupTpuDist>(store, (int)(it - ranks.begin()),
                                                  (int)ranks.size(), o);
}

c10::intrusive_ptr<c10d::Backend> ProcessGroupTpuDist::merge(
    const c10::intrusive_ptr<c10d::Store> &store,
    const c10::intrusive_ptr<c10d::Backend::Options> &opts, const int &rank, const int &size) {
  auto o = c10::make_intrusive<Options>(opts ? opts->timeout : timeout_);
  o->mode = options_->mode;
  if (opts) o->group_name = opts->group_name;
  NoGil nogil;
  return c10::make_intrusive<ProcessGroupTpuDist>(store, rank, size, o);
}
#endif

}  // namespace tpu_dist
