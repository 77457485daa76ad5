// process_group.hpp - the torch.distributed backend "tpu_dist": a thin C++ shim over the C API.
//
// torch 1.13 derives from c10d::ProcessGroup, torch 2.x from c10d::Backend (TORCH_VERSION_MAJOR).
// Every operation is queued to one worker thread per group, which alone calls into the C library
// (one thread per communicator, as the C API requires) and completes the Work and its Future. So
// async_op=True returns at once and the collective runs while the caller computes; wait() is
// bounded by the op's or the group's timeout.
#pragma once

#include <torch/version.h>

#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

#include <ATen/core/ivalue.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tpu_dist.h"

namespace tpu_dist {

#if TORCH_VERSION_MAJOR >= 2
using BaseGroup = c10d::Backend;
#else
using BaseGroup = c10d::ProcessGroup;
#endif

class WorkTpuDist;

// The operations of one group, run in issue order and one at a time: by the group's worker thread,
// or by a thread that waits for the operation at the head of the queue while nothing executes
// (a blocking call then runs on the caller's thread, with no hand-off and no wake-up).
struct WorkQueue {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<c10::intrusive_ptr<WorkTpuDist>> q;
  bool stop = false;
  bool busy = false;  // an operation is executing
  // Executes w here if it is the head of the queue and nothing executes; true if it did.
  bool runIfHead(WorkTpuDist *w);
  // Marks the running operation finished and wakes the worker and waiters.
  void done();
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
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override {
    return future_;
  }

  // Runs on the worker thread: the body, then completion of the Work and its Future.
  void execute();

  std::function<void(WorkTpuDist &)> body;
  std::atomic<int> source_{-1};
  const char *opName;
  uint64_t seq;
  std::shared_ptr<WorkQueue> queue;  // the group's queue (kept alive by every operation)

 private:
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::chrono::milliseconds timeout_;
};

class ProcessGroupTpuDist : public BaseGroup {
 public:
  ProcessGroupTpuDist(const c10::intrusive_ptr<c10d::Store> &store, int rank, int size,
                      std::chrono::milliseconds timeout);
  ~ProcessGroupTpuDist() override;

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

  void setSequenceNumberForGroup() override {}
  uint64_t getSequenceNumberForGroup() override {
    return seq_.load();
  }

 private:
  c10::intrusive_ptr<c10d::Work> enqueue(c10d::OpType type, const char *name,
                                         std::vector<at::Tensor> outputs,
                                         std::chrono::milliseconds timeout,
                                         std::function<void(WorkTpuDist &)> body);
  void workerLoop();
  void check(tpudistResult_t res, const WorkTpuDist &w) const;
  // Runs fn(buf) on a contiguous view of t, copying back when t is not contiguous.
  void reduceOne(at::Tensor &t, const at::Tensor &in, int root, c10d::ReduceOp op, bool all,
                 const WorkTpuDist &w);

  tpudistComm_t comm_ = nullptr;
  std::chrono::milliseconds timeout_;
  std::atomic<uint64_t> seq_{0};
  std::shared_ptr<WorkQueue> queue_ = std::make_shared<WorkQueue>();
  std::thread worker_;
};

}  // namespace tpu_dist
