// process_group.hpp - the torch.distributed backend "tpu_dist": a thin C++ shim over the C API.
//
// torch 1.13 derives from c10d::ProcessGroup, torch 2.x from c10d::Backend; what differs between
// torch releases is a feature macro of torch_compat.hpp. Every operation is queued to one worker
// thread per group, which calls into the C library and completes the Work and its Future; a caller
// that finds the group idle may do it on its own thread instead (WorkQueue), and one thread at a
// time calls into the library (as the C API requires). So async_op=True returns at once and the
// collective runs while the caller computes; wait() is bounded by the op's or the group's timeout.
//
// Coalescing (startCoalescing/endCoalescing and the *_coalesced ops) runs several operations as
// one tpudistGroupStart/End batch: each operation's body issues its C calls and hands what must
// follow them (copies back, unpacking) to after(), which runs at once outside a batch and after
// tpudistGroupEnd inside one.
#pragma once

#include <ATen/core/ivalue.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <vector>

#include "torch_compat.hpp"
#include "tpu_dist.h"

namespace tpu_dist {

class WorkTpuDist;

// Shared by the group's files (group.cpp). A library config whose timeout bounds every wait.
tpudistConfig_t configFor(std::chrono::milliseconds timeout);
// The group's execution mode: the option, else TPU_DIST_MODE; sets cfg->mode when the option
// names one (cfg may be NULL); true for defer.
int modeOf(const std::string &opt, tpudistConfig_t *cfg);
// Fails each Work with msg (outside the queue's lock: a Future's callbacks may issue operations).
void failAll(const std::vector<c10::intrusive_ptr<WorkTpuDist>> &works, const std::string &msg);
// Lets go of the GIL for its lifetime if this thread holds it: Python dropping a group's last
// reference runs its destructor (shutdown) under the GIL, and the worker being joined may need
// the GIL to free a tensor that owns its Python object; it would wait for it forever.
struct NoGil {
  NoGil();
  ~NoGil();
  NoGil(const NoGil &) = delete;
  NoGil &operator=(const NoGil &) = delete;

 private:
  void *st_ = nullptr;  // the saved PyThreadState
};

// The operations of one group, run in issue order and one at a time: by the group's worker thread,
// or by a thread that waits for the operation at the head of the queue while nothing executes
// (a blocking call then runs on the caller's thread, with no hand-off and no wake-up).
// Strict and debug mode: while operations flow the worker is "hot": it sleeps with a period
// (200 us) and an issue does not wake it, so a blocking call costs no thread switch at all; it runs
// the head at once when an operation is queued behind it, when a thread waits for one it cannot
// run itself, when a Work's result is asked for (is_completed, get_future: kick), and otherwise
// once the head went unclaimed for a whole period. While every issued operation is claimed by its
// caller the period doubles, up to 1.6 ms; an operation seen waiting brings it back to 200 us.
// After 10 ms with no issue it is "cold" again: it sleeps without a timer and the next issue
// wakes it.
// Defer mode (group_defer.cpp): an all-reduce issued while nothing executes goes to the library on
// the caller's thread (non-blocking: the library defers it), and a wait while nothing executes
// runs the queue and completes every issued Work on the waiting thread; otherwise the worker does.
struct WorkQueue {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<c10::intrusive_ptr<WorkTpuDist>> q;
  bool stop = false;
  bool busy = false;  // an operation is executing (or, in defer mode, being issued or harvested)
  // a wait may run the head operation on the waiting thread (strict and debug mode)
  bool runInline = true;
  int waiters = 0;        // threads in Work::wait (the worker runs or harvests when there are any)
  bool hot = false;       // strict and debug mode: the worker polls; an issue need not wake it
  bool kicked = false;    // a Work's result was asked for: the worker runs the head at once
  uint64_t enqueued = 0;  // issues so far (a hot worker goes cold after periods without any)
  // defer mode: Works issued to the library and not completed yet, issues so far (the worker's
  // timer harvests only once the issues stop), and the group's round: issue what is queued, then
  // complete every issued Work if asked (run by whoever set busy)
  // c10d::ErrorType of the group's last failure (getError): a failed operation or reconfigure,
  // a wait that timed out
  std::atomic<int> lastError{0};
  size_t pending = 0;
  uint64_t issued = 0;
  std::function<void(bool harvest)> round;
  // Executes w here if it is the head of the queue and nothing executes; true if it did.
  bool runIfHead(WorkTpuDist *w);
  // Defer mode: runs a harvesting round here if something is issued or queued and nothing
  // executes; true if it did.
  bool harvestHere();
  // Marks the running operation finished, whoever ran it (a caller or the worker): clears busy and
  // wakes the worker if it has work (in defer mode, every thread that watches busy).
  void done();
  // A Work's result is asked for: a hot worker runs what is queued now (strict and debug mode).
  void kick();
};

class WorkTpuDist : public c10d::Work {
 public:
  WorkTpuDist(int rank, c10d::OpType type, const char *opName, uint64_t seq,
              std::vector<at::Tensor> outputs, std::chrono::milliseconds timeout);
  bool isCompleted() override;
  bool isSuccess() const override;
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  int sourceRank() const override {
    return source_.load();
  }
  std::vector<at::Tensor> result() override {
    return outputs_;
  }
  // The first output tensor (what a body that works in place reads, rather than keep a copy).
  const at::Tensor &output() const {
    return outputs_.front();
  }
  // Made on the first call (most Works never have one): completed at once if the Work is.
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
#if TD_TORCH_2_0
  uint64_t getSequencenumber() const override {
    return seq;
  }
#endif

  // Runs on the worker thread: the body, then completion of the Work and its Future.
  void execute();
  // Completes the Work and its Future (with err, or with the outputs).
  void complete(std::exception_ptr err);

  std::function<void(WorkTpuDist &)> body;
  std::atomic<int> source_{-1};
  const char *opName;
  uint64_t seq;
  std::shared_ptr<WorkQueue> queue;  // the group's queue (kept alive by every operation)

 private:
  // Completes fut with err, or with the outputs.
  void settle(c10::ivalue::Future &fut, const std::exception_ptr &err);

  std::vector<at::Tensor> outputs_;
  // The result, set once before the Work's own completion (err_ and future_ under mutex_).
  std::atomic<bool> done_{false};
  std::exception_ptr err_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::atomic<bool> completing_{false};
  std::chrono::milliseconds timeout_;
};

class ProcessGroupTpuDist : public BaseGroup {
 public:
  // The group's options: its timeout (also the C library's bound on every wait), its name and
  // its members' global ranks (as torch's own backends carry them).
  struct Options : BaseGroup::Options {
    explicit Options(std::chrono::milliseconds timeout = std::chrono::milliseconds(1800000))
        : BaseGroup::Options("tpu_dist", timeout) {}
    std::string group_name;
    std::vector<uint64_t> global_ranks_in_group;
    // Execution mode of the group's communicator: "strict", "debug" or "defer"; empty:
    // TPU_DIST_MODE (docs/runtime.md, docs/torch.md).
    std::string mode;
  };

  // A new communicator, bootstrapped through the store (rank 0 sets one key, the others get it).
  ProcessGroupTpuDist(const c10::intrusive_ptr<c10d::Store> &store, int rank, int size,
                      c10::intrusive_ptr<Options> options);
  // Adopts comm (from tpudistCommSplit).
  ProcessGroupTpuDist(tpudistComm_t comm, int rank, int size, c10::intrusive_ptr<Options> options);
  ~ProcessGroupTpuDist() override;

  c10::intrusive_ptr<Options> getOptions() const {
    return options_;
  }
  // Store operations this group's bootstrap made (0 for a group split from a parent).
  int storeOps() const {
    return storeOps_.load();
  }

  // tpudistCommSplit of this group, run in order with its operations: every rank of this group
  // calls it, with the same color for the members of one new group (ordered by key) and
  // TPUDIST_SPLIT_NOCOLOR elsewhere (null result). No store traffic, no new rendezvous.
  c10::intrusive_ptr<ProcessGroupTpuDist> splitByColor(int color, int key,
                                                       c10::intrusive_ptr<Options> options);
  // tpudistCommShrink of this group: the members not in exclude (ranks of this group; empty: the
  // failed set the survivors agree on) form the new group, renumbered in this group's order, with
  // no store traffic and no rendezvous. abort (TPUDIST_SHRINK_ABORT) first revokes the running
  // operation and fails the queued ones; else they complete first. Every survivor calls it.
  // *members (if given): the new group's members as ranks of this group, in new-rank order.
  // This group stays usable only to be destroyed (after abort every operation fails).
  c10::intrusive_ptr<ProcessGroupTpuDist> shrinkExcluding(const std::vector<int> &exclude,
                                                          bool abort,
                                                          c10::intrusive_ptr<Options> options,
                                                          std::vector<int> *members);
#if TD_TORCH_2_14
  // torch's shrink_group: shrinkExcluding with torch's flags (SHRINK_ABORT aborts first).
  bool supportsShrinking() const override {
    return true;
  }
  c10::intrusive_ptr<c10d::Backend> shrink(
      const std::vector<int64_t> &ranksToExclude, int shrinkFlags,
      const c10::intrusive_ptr<c10d::Backend::Options> &optsOverride) override;
#endif
#if TD_TORCH_RECONFIGURE
  // torch's fault-tolerance contract (group_reconf.cpp). A group made with
  // enable_reconfigure=True has a reconfiguration endpoint whose handle get_reconfigure_handle
  // returns, and no communicator until reconfigure, which makes one over the processes of the
  // handles (tpudistCommReconfigure; rank = position, a set is ordered by handle) and replaces
  // the current one: operations queued then fail, the old communicator is released (also after
  // abort, which it recovers from). Synchronous: the Work it returns is complete.
  bool supportsReconfigure() const override {
    return reconfigurable_;
  }
  c10d::ReconfigureHandle get_reconfigure_handle() const override;
  c10::intrusive_ptr<c10d::Work> reconfigure(const c10d::ReconfigureOptions &opts) override;
#endif
#if TD_TORCH_ABORT_HOOKS
  // Hooks abort() runs (once, after failing every operation), on the aborting thread.
  void registerAbortHook(int64_t hookId, c10d::AbortHook hook) override;
  void unregisterAbortHook(int64_t hookId) override;
#endif
#if TD_TORCH_2_14
  // What went wrong last: TIMEOUT, COMM_ERROR or REMOTE_ERROR from the library's result of the
  // last failed operation or reconfigure (an abort by the user is no error); SUCCESS again after
  // a reconfigure.
  c10d::ErrorType getError() override;
  // The timeout of the operations issued from now on (the Work's wait and the library's bound on
  // the communicator's waits, tpudistCommSetTimeout) and of later communicators.
  void setTimeout(std::chrono::milliseconds timeout) override;
  // torch's split (ranks: this group's ranks of the new group) and merge: a new group through
  // the store among its members only.
  c10::intrusive_ptr<c10d::Backend> split(
      const c10::intrusive_ptr<c10d::Store> &store, const std::vector<int> &ranks,
      const c10::intrusive_ptr<c10d::Backend::Options> &opts) override;
  c10::intrusive_ptr<c10d::Backend> merge(const c10::intrusive_ptr<c10d::Store> &store,
                                          const c10::intrusive_ptr<c10d::Backend::Options> &opts,
                                          const int &rank, const int &size) override;
#endif
  bool supportsSplitting() const TD_OVERRIDE_2_0 {
    return true;
  }
  bool supportsCoalescing() const {
    return true;
  }

  // Stops the group: operations not started fail with an error, the running one finishes
  // (bounded by its timeout), then the communicator is destroyed. Idempotent.
  void shutdown() TD_OVERRIDE_2_14;
  // Fails the running operation and every pending one with an error at once (tpudistCommAbort,
  // any thread); later operations fail at once. Never waits for a peer. Idempotent.
  void abort() TD_OVERRIDE_2_14;

  const std::string getBackendName() const override {
    return "tpu_dist";
  }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor> &tensors,
                                           const c10d::BroadcastOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor> &tensors,
                                           const c10d::AllreduceOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor> &tensors, const c10d::AllreduceCoalescedOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor> &tensors,
                                        const c10d::ReduceOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>> &outputs,
                                           std::vector<at::Tensor> &inputs,
                                           const c10d::AllgatherOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor &output, at::Tensor &input,
                                                 const c10d::AllgatherOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>> &outputs,
                                                     std::vector<at::Tensor> &inputs,
                                                     const c10d::AllgatherOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>> &outputs,
                                        std::vector<at::Tensor> &inputs,
                                        const c10d::GatherOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor> &outputs,
                                         std::vector<std::vector<at::Tensor>> &inputs,
                                         const c10d::ScatterOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor> &outputs,
                                                std::vector<std::vector<at::Tensor>> &inputs,
                                                const c10d::ReduceScatterOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor &output, at::Tensor &input, const c10d::ReduceScatterOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor &output, at::Tensor &input,
                                               std::vector<int64_t> &outputSplits,
                                               std::vector<int64_t> &inputSplits,
                                               const c10d::AllToAllOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor> &outputs,
                                          std::vector<at::Tensor> &inputs,
                                          const c10d::AllToAllOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor> &tensors, int dstRank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor> &tensors, int srcRank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor> &tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions &opts) override;
#if TD_TORCH_2_0
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor> &outputs, std::vector<at::Tensor> &inputs,
      const c10d::AllgatherOptions &opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor> &outputs, std::vector<at::Tensor> &inputs,
      const c10d::ReduceScatterOptions &opts) override;
#endif

  void setSequenceNumberForGroup() override {}
  uint64_t getSequenceNumberForGroup() override {
    return seq_.load();
  }

 private:
  c10::intrusive_ptr<WorkTpuDist> makeWork(c10d::OpType type, const char *name,
                                           std::vector<at::Tensor> outputs,
                                           std::chrono::milliseconds timeout,
                                           std::function<void(WorkTpuDist &)> body);
  // Queues the operation, or adds it to the open coalescing batch.
  c10::intrusive_ptr<c10d::Work> enqueue(c10d::OpType type, const char *name,
                                         std::vector<at::Tensor> outputs,
                                         std::chrono::milliseconds timeout,
                                         std::function<void(WorkTpuDist &)> body);
  // Queues one Work that runs every operation of ops in one tpudistGroupStart/End batch and
  // completes them all.
  c10::intrusive_ptr<c10d::Work> enqueueBatch(c10d::OpType type, const char *name,
                                              std::vector<c10::intrusive_ptr<WorkTpuDist>> ops,
                                              std::chrono::milliseconds timeout);
  // Runs fn now, or after the batch's tpudistGroupEnd when a batch is executing (kept as a
  // std::function only then).
  template <class F>
  void after(F &&fn) {
    if (deferred_)
      deferred_->emplace_back(std::forward<F>(fn));
    else
      fn();
  }
  void start();
  // The worker's thread: stops it (failing what is queued with why, the running operation ends)
  // and starts it again (adminMu_ held).
  void stopWorkerLocked(const std::string &why);
  void startWorkerLocked();
  // enable_reconfigure: opens the reconfiguration endpoint (true); else false.
  bool openEndpoint();
  // Records a failed result for getError.
  void noteError(tpudistResult_t res) const;
  void runAbortHooks();
  // Removes every queued and coalesced operation (the queue's lock held by the caller).
  std::vector<c10::intrusive_ptr<WorkTpuDist>> takeQueuedLocked();
  void workerLoop();
  // Defer mode (group_defer.cpp): the Works issued to the library and not yet completed, each
  // with its span of requests and of steps to run after them (owned by whoever holds busy).
  struct DeferSpan {
    c10::intrusive_ptr<WorkTpuDist> w;
    size_t req0, req1, step0, step1;
    std::exception_ptr err;
  };
  struct DeferBatch {
    std::vector<DeferSpan> out;
    std::vector<tpudistRequest_t> reqs;
    std::vector<std::function<void()>> steps;
  };
  void deferLoop();
  // Issues w on the caller's thread (busy set by the caller), then lets busy go.
  void deferIssueHere(const c10::intrusive_ptr<WorkTpuDist> &w);
  // Issues w (an all-reduce non-blocking, so the library defers it; anything else runs as alone).
  void deferIssue(const c10::intrusive_ptr<WorkTpuDist> &w);
  // Issues every queued operation, then, if harvest, completes every issued Work (busy held).
  void deferRound(bool harvest);
  // Waits for every issued request in order and completes each Work with its own result.
  void deferHarvest();
  void check(tpudistResult_t res, const WorkTpuDist &w) const;
  // Reduces t in place (all ranks, or into root's); t may be non-contiguous (a copy is written
  // back), complex, int16 (through int32) or premultiplied (PREMUL_SUM).
  void reduceOne(const at::Tensor &t, int root, const c10d::ReduceOp &op, bool all,
                 const WorkTpuDist &w);
  // The library's all-reduce (all) or reduce of src into dst; type: the torch tensor's dtype.
  void reduceCall(const at::Tensor &src, const at::Tensor &dst, at::ScalarType type, int root,
                  const c10d::ReduceOp &op, bool all, const WorkTpuDist &w);
  // The body of a reduction of the Work's output tensor (reduceOne).
  std::function<void(WorkTpuDist &)> reduceBody(const c10d::ReduceOp &op, int root, bool all);
  void allgatherOne(at::Tensor &o, const at::Tensor &i, const WorkTpuDist &w);
  void reduceScatterOne(at::Tensor &o, const at::Tensor &i, c10d::ReduceOp op,
                        const WorkTpuDist &w);
  void checkGatherSizes(const at::Tensor &output, const at::Tensor &input);
  void checkScatterSizes(const at::Tensor &output, const at::Tensor &input);

  tpudistComm_t comm_ = nullptr;
  c10::intrusive_ptr<Options> options_;
  std::chrono::milliseconds timeout_;
  std::atomic<uint64_t> seq_{0};
  std::atomic<int> storeOps_{0};
  std::atomic<bool> aborted_{false};
  std::mutex adminMu_;  // shutdown / abort
  bool closed_ = false;
  // The open coalescing batch (caller's side) and the running batch's deferred steps (worker).
  bool coalescing_ = false;
  std::vector<c10::intrusive_ptr<WorkTpuDist>> coalesced_;
  std::vector<std::function<void()>> *deferred_ = nullptr;
  // Defer mode: the worker runs deferLoop; reqs_ collects the requests issued into dbatch_.
  bool defer_ = false;
  DeferBatch dbatch_;
  std::vector<tpudistRequest_t> *reqs_ = nullptr;
  // Reconfiguration (group_reconf.cpp): the endpoint (until shutdown) and its handle, the abort
  // hooks.
  bool reconfigurable_ = false;
  tpudistReconf_t endpoint_ = nullptr;
  std::string handle_;
  std::mutex hooksMu_;
  std::map<int64_t, std::function<void()>> abortHooks_;
  std::shared_ptr<WorkQueue> queue_ = std::make_shared<WorkQueue>();
  std::thread worker_;
};

}  // namespace tpu_dist
