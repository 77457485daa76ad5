// process_group.cpp - the tpu_dist torch backend: tensors -> C API calls on a worker thread.
#include "process_group.hpp"

#include <c10/util/Exception.h>

#include <cstdlib>
#include <cstring>
#include <sstream>

namespace tpu_dist {

namespace {

// ---- the c10d Store as the C library's external store ----
int storeSet(void *ctx, const char *key, const void *value, size_t len) {
  try {
    auto *store = static_cast<c10d::Store *>(ctx);
    const uint8_t *p = static_cast<const uint8_t *>(value);
    store->set(key, std::vector<uint8_t>(p, p + len));
    return 0;
  } catch (...) {
    return 1;
  }
}

int storeGet(void *ctx, const char *key, void **value, size_t *len, int /*timeoutMs*/) {
  try {
    auto *store = static_cast<c10d::Store *>(ctx);
    std::vector<uint8_t> v = store->get(key);  // blocks until set, bounded by the store's timeout
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

// A reduction's dtype in the C library, or -1. Bool reduces as uint8 with sum->max, prod->min
// (logical or / and), as the NCCL backend does; int16 widens to int32 (see reduceOne).
int reduceDtype(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return tpudistFloat32;
    case at::kDouble:
      return tpudistFloat64;
    case at::kHalf:
      return tpudistFloat16;
    case at::kBFloat16:
      return tpudistBfloat16;
    case at::kChar:
      return tpudistInt8;
    case at::kByte:
      return tpudistUint8;
    case at::kBool:
      return tpudistUint8;
    case at::kInt:
      return tpudistInt32;
    case at::kLong:
      return tpudistInt64;
    default:
      return -1;
  }
}

tpudistRedOp_t reduceOp(const c10d::ReduceOp &op, at::ScalarType t) {
  bool isBool = t == at::kBool;
  switch (op) {
    case c10d::ReduceOp::SUM:
      return isBool ? tpudistMax : tpudistSum;
    case c10d::ReduceOp::PRODUCT:
      return isBool ? tpudistMin : tpudistProd;
    case c10d::ReduceOp::MIN:
      return tpudistMin;
    case c10d::ReduceOp::MAX:
      return tpudistMax;
    case c10d::ReduceOp::AVG:
      TORCH_CHECK(!isBool, "tpu_dist: AVG is not defined for bool tensors");
      return tpudistAvg;
    default:
      TORCH_CHECK(false, "tpu_dist: unsupported reduce op ", (int)op.op_);
  }
  return tpudistSum;
}

std::chrono::milliseconds pick(std::chrono::milliseconds opTimeout,
                               std::chrono::milliseconds groupTimeout) {
  return opTimeout == c10d::kUnsetTimeout ? groupTimeout : opTimeout;
}

// Complex tensors travel as pairs of reals.
at::Tensor asReal(const at::Tensor &t) {
  return t.is_complex() ? at::view_as_real(t) : t;
}

void checkCpu(const at::Tensor &t) {
  TORCH_CHECK(t.device().is_cpu(), "tpu_dist: only CPU tensors are supported, got ", t.device());
}

void checkSingle(const std::vector<at::Tensor> &v) {
  TORCH_CHECK(v.size() == 1, "tpu_dist: expects one tensor per call, got ", v.size());
  checkCpu(v[0]);
}

// A contiguous tensor to write results into, and the copy back when t was not contiguous.
struct OutBuf {
  at::Tensor &t;
  at::Tensor buf;
  explicit OutBuf(at::Tensor &target)
      : t(target), buf(target.is_contiguous() ? target : target.contiguous()) {}
  void finish() {
    if (!t.is_contiguous()) t.copy_(buf);
  }
};

}  // namespace

// ---- Work ----
WorkTpuDist::WorkTpuDist(int rank, c10d::OpType type, const char *name, uint64_t sequence,
                         std::vector<at::Tensor> outputs, std::chrono::milliseconds timeout)
    : c10d::Work(rank, type),
      opName(name),
      seq(sequence),
      outputs_(std::move(outputs)),
      future_(
          c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))),
      timeout_(timeout) {}

bool WorkTpuDist::isCompleted() {
  std::lock_guard<std::mutex> lock(mutex_);
  return completed_;
}

bool WorkTpuDist::isSuccess() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return completed_ && !exception_;
}

bool WorkQueue::runIfHead(WorkTpuDist *w) {
  c10::intrusive_ptr<WorkTpuDist> head;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (busy || q.empty() || q.front().get() != w) return false;
    head = q.front();
    q.pop_front();
    busy = true;
  }
  head->execute();
  done();
  return true;
}

void WorkQueue::done() {
  {
    std::lock_guard<std::mutex> lock(mu);
    busy = false;
  }
  cv.notify_all();
}

bool WorkTpuDist::wait(std::chrono::milliseconds timeout) {
  auto limit = timeout == kNoTimeout ? timeout_ : timeout;
  if (queue) queue->runIfHead(this);
  std::unique_lock<std::mutex> lock(mutex_);
  if (!cv_.wait_for(lock, limit, [&] { return completed_; })) {
    std::ostringstream os;
    os << "tpu_dist: " << opName << " (sequence " << seq << ") on rank " << rank_
       << " timed out after " << limit.count() << " ms";
    TORCH_CHECK(false, os.str());
  }
  if (exception_) std::rethrow_exception(exception_);
  return true;
}

void WorkTpuDist::execute() {
  std::exception_ptr err;
  try {
    body(*this);
  } catch (...) {
    err = std::current_exception();
  }
  if (err)
    future_->setError(err);
  else
    future_->markCompleted(c10::IValue(outputs_));
  finish(err);
}

// ---- ProcessGroup ----
ProcessGroupTpuDist::ProcessGroupTpuDist(const c10::intrusive_ptr<c10d::Store> &store, int rank,
                                         int size, std::chrono::milliseconds timeout)
    : BaseGroup(rank, size), timeout_(timeout) {
  tpudistStore_t st;
  st.ctx = store.get();
  st.set = storeSet;
  st.get = storeGet;
  tpudistConfig_t cfg = TPUDIST_CONFIG_INITIALIZER;
  cfg.timeoutMs = (int)std::min<int64_t>(timeout.count(), INT32_MAX);
  tpudistResult_t res = tpudistCommInitStore(&comm_, size, rank, &st, "tpu_dist", &cfg);
  TORCH_CHECK(res == tpudistSuccess, "tpu_dist: communicator init failed on rank ", rank, ": ",
              tpudistGetErrorString(res), ": ", tpudistGetLastError(nullptr));
  worker_ = std::thread(&ProcessGroupTpuDist::workerLoop, this);
}

ProcessGroupTpuDist::~ProcessGroupTpuDist() {
  {
    std::lock_guard<std::mutex> lock(queue_->mu);
    queue_->stop = true;
  }
  queue_->cv.notify_all();
  if (worker_.joinable()) worker_.join();
  if (comm_) tpudistCommDestroy(comm_);
}

void ProcessGroupTpuDist::workerLoop() {
  WorkQueue &wq = *queue_;
  for (;;) {
    c10::intrusive_ptr<WorkTpuDist> w;
    {
      std::unique_lock<std::mutex> lock(wq.mu);
      wq.cv.wait(lock, [&] { return (wq.stop && wq.q.empty()) || (!wq.q.empty() && !wq.busy); });
      if (wq.q.empty()) return;  // stopped and drained
      w = wq.q.front();
      wq.q.pop_front();
      wq.busy = true;
    }
    w->execute();
    wq.done();
  }
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpuDist::enqueue(
    c10d::OpType type, const char *name, std::vector<at::Tensor> outputs,
    std::chrono::milliseconds timeout, std::function<void(WorkTpuDist &)> body) {
  auto w = c10::make_intrusive<WorkTpuDist>(getRank(), type, name, ++seq_, std::move(outputs),
                                            pick(timeout, timeout_));
  w->body = std::move(body);
  w->queue = queue_;
  {
    std::lock_guard<std::mutex> lock(queue_->mu);
    queue_->q.push_back(w);
  }
  queue_->cv.notify_one();
  return w;
}

void ProcessGroupTpuDist::check(tpudistResult_t res, const WorkTpuDist &w) const {
  if (res == tpudistSuccess) return;
  std::ostringstream os;
  os << "tpu_dist: " << w.opName << " (sequence " << w.seq << ") failed on rank " << getRank()
     << ": " << tpudistGetErrorString(res) << ": " << tpudistGetLastError(comm_);
  TORCH_CHECK(false, os.str());
}

void ProcessGroupTpuDist::reduceOne(at::Tensor &t, const at::Tensor &in, int root,
                                    c10d::ReduceOp op, bool all, const WorkTpuDist &w) {
  // int16 reduces exactly through int32 (sum/prod wrap mod 2^16 either way; avg truncates the
  // true mean).
  bool widen = t.scalar_type() == at::kShort;
  at::Tensor src = asReal(in.contiguous());
  at::Tensor dstT = t;
  OutBuf out(dstT);
  at::Tensor dst = asReal(out.buf);
  if (widen) {
    src = src.to(at::kInt);
    dst = at::empty_like(src);
  }
  int dtype = reduceDtype(src.scalar_type());
  TORCH_CHECK(dtype >= 0, "tpu_dist: unsupported dtype ", t.scalar_type(), " for ", w.opName);
  tpudistRedOp_t rop = reduceOp(op, t.scalar_type());
  size_t n = (size_t)src.numel();
  tpudistResult_t res = all ? tpudistAllReduce(src.data_ptr(), dst.data_ptr(), n,
                                               (tpudistDataType_t)dtype, rop, comm_, nullptr)
                            : tpudistReduce(src.data_ptr(), dst.data_ptr(), n,
                                            (tpudistDataType_t)dtype, rop, root, comm_, nullptr);
  check(res, w);
  if (all || getRank() == root) {
    if (widen) asReal(out.buf).copy_(dst);
    out.finish();
  }
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpuDist::allreduce(std::vector<at::Tensor> &tensors,
                                                              const c10d::AllreduceOptions &opts) {
  checkSingle(tensors);
  at::Tensor t = tensors[0];
  c10d::ReduceOp op = opts.reduceOp;
  return enqueue(c10d::OpType::ALLREDUCE, "allreduce", {t}, opts.timeout,
                 [this, t, op](WorkTpuDist &w) mutable { reduceOne(t, t, 0, op, true, w); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpuDist::allreduce_coalesced(
    std::vector<at::Tensor> &tensors, const c10d::AllreduceCoalescedOptions &opts) {
  for (auto &t : tensors) checkCpu(t);
  std::vector<at::Tensor> ts = tensors;
  c10d::ReduceOp op = opts.reduceOp;
  return enqueue(c10d::OpType::ALLREDUCE_COALESCED, "allreduce_coalesced", ts, opts.timeout,
                 [this, ts, op](WorkTpuDist &w) mutable {
                   if (ts.empty()) return;
                   std::vector<at::Tensor> flat;
                   for (auto &t : ts) flat.push_back(t.reshape({-1}));
                   at::Tensor buf = at::cat(flat);
                   reduceOne(buf, buf, 0, op, true, w);
                   int64_t off = 0;
                   for (auto &t : ts) {
                     t.copy_(buf.narrow(0, off, t.numel()).view(t.sizes()));
                     off += t.numel();
                   }
                 });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpuDist::reduce(std::vector<at::Tensor> &tensors,
                                                           const c10d::ReduceOptions &opts) {
  checkSingle(tensors);
  at::Tensor t = tensors[0];
  c10d::ReduceOp op = opts.reduceOp;
  int root = (int)opts.rootRank;
  return enqueue(
      c10d::OpType::REDUCE, "reduce", {t}, opts.timeout,
      [this, t, op, root](WorkTpuDist &w) mutable { reduceOne(t, t, root, op, false, w); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpuDist::broadcast(std::vector<at::Tensor> &tensors,
                                                              const c10d::BroadcastOptions &opts) {
  checkSingle(tensors);
  at::Tensor t = tensors[0];
  int root = (int)opts.rootRank;
  return enqueue(c10d::OpType::BROADCAST, "broadcast", {t}, opts.timeout,
                 [this, t, root](WorkTpuDist &w) mutable {
                   OutBuf out(t);
                   if (getRank() == root && !t.is_contiguous()) out.buf.copy_(t);
                   check(tpudistBroadcast(out.buf.data_ptr(), out.buf.data_ptr(), out.buf.nbytes(),
                                          tpudistUint8, root, comm_, nullptr),
                         w);
                   out.finish();
                 });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpuDist::_allgather_base(
    at::Tensor &output, at::Tensor &input, const c10d::AllgatherOptions &opts) {
  checkCpu(output);
  checkCpu(input);
  TORCH_CHECK(output.numel() == input.numel() * getSize(),
              "tpu_dist: all_gather_into_tensor output must hold world_size x input elements");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "tpu_dist: dtype mismatch");
  at::Tensor o = output, i = input;
  return enqueue(c10d::OpType::_ALLGATHER_BASE, "allgather", {o}, opts.timeout,
                 [this, o, i](WorkTpuDist &w) mutable {
                   OutBuf out(o);
                   at::Tensor in = i.contiguous();
                   check(tpudistAllGather(in.data_ptr(), out.buf.data_ptr(), in.nbytes(),
                                          tpudistUint8, comm_, nullptr),
                         w);
                   out.finish();
                 });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpuDist::allgather(
    std::vector<std::vector<at::Tensor>> &outputs, std::vector<at::Tensor> &inputs,
    const c10d::AllgatherOptions &opts) {
  checkSingle(inputs);
  TORCH_CHECK(outputs.size() == 1 && (int)outputs[0].size() == getSize(),
              "tpu_dist: all_gather needs world_size output tensors");
  for (auto &t : outputs[0])
    TORCH_CHECK(t.numel() == inputs[0].numel() && t.scalar_type() == inputs[0].scalar_type(),
                "tpu_dist: all_gather output tensors must match the input's size and dtype");
  std::vector<at::Tensor> outs = outputs[0];
  at::Tensor in = inputs[0];
  return enqueue(
      c10d::OpType::ALLGATHER, "allgather", outs, opts.timeout,
      [this, outs, in](WorkTpuDist &w) mutable {
        at::Tensor src = in.contiguous();
        at::Tensor flat = at::empty({(int64_t)outs.size() * src.numel()}, src.options());
        check(tpudistAllGather(src.data_ptr(), flat.data_ptr(), src.nbytes(), tpudistUint8, comm_,
                               nullptr),
              w);
        for (size_t r = 0; r < outs.size(); r++)
          outs[r].copy_(flat.narrow(0, r * src.numel(), src.numel()).view(outs[r].sizes()));
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpuDist::allgather_coalesced(
    std::vector<std::vector<at::Tensor>> &outputs, std::vector<at::Tensor> &inputs,
    const c10d::AllgatherOptions &opts) {
  TORCH_CHECK(outputs.size() == (size_t)getSize(),
              "tpu_dist: allgather_coalesced needs one output list per rank");
  std::vector<std::vector<at::Tensor>> outs = outputs;
  std::vector<at::Tensor> ins = inputs;
  std::vector<at::Tensor> all;
  for (auto &l : outs) all.insert(all.end(), l.begin(), l.end());
  return enqueue(c10d::OpType::ALLGATHER_COALESCED, "allgather_coalesced", all, opts.timeout,
                 [this, outs, ins](WorkTpuDist &w) mutable {
                   // Pack every input as bytes, gather once, unpack per rank.
                   std::vector<at::Tensor> flat;
                   for (auto &t : ins) flat.push_back(t.contiguous().view({-1}).view(at::kByte));
                   at::Tensor send = flat.empty() ? at::empty({0}, at::kByte) : at::cat(flat);
                   at::Tensor recv = at::empty({send.numel() * getSize()}, at::kByte);
                   check(tpudistAllGather(send.data_ptr(), recv.data_ptr(), send.numel(),
                                          tpudistUint8, comm_, nullptr),
                         w);
                   for (int r = 0; r < getSize(); r++) {
                     int64_t off = r * send.numel();
                     for (size_t j = 0; j < outs[r].size(); j++) {
                       int64_t nb = (int64_t)outs[r][j].nbytes();
                       at::Tensor src = recv.narrow(0, off, nb);
                       outs[r][j].view({-1}).view(at::kByte).copy_(src);
                       off += nb;
                     }
                   }
                 });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpuDist::gather(
    std::vector<std::vector<at::Tensor>> &outputs, std::vector<at::Tensor> &inputs,
    const c10d::GatherOptions &opts) {
  checkSingle(inputs);
  int root = (int)opts.rootRank;
  std::vector<at::Tensor> outs;
  if (getRank() == root) {
    TORCH_CHECK(outputs.size() == 1 && (int)outputs[0].size() == getSize(),
                "tpu_dist: gather needs world_size output tensors on the root");
    outs = outputs[0];
  }
  at::Tensor in = inputs[0];
  return enqueue(
      c10d::OpType::GATHER, "gather", outs, opts.timeout,
      [this, outs, in, root](WorkTpuDist &w) mutable {
        at::Tensor src = in.contiguous();
        if (getRank() != root) {
          check(tpudistSend(src.data_ptr(), src.nbytes(), tpudistUint8, root, comm_, nullptr), w);
          return;
        }
        std::vector<at::Tensor> bufs;
        check(tpudistGroupStart(), w);
        for (int r = 0; r < getSize(); r++) {
          bufs.push_back(outs[r].is_contiguous() ? outs[r] : at::empty_like(src));
          if (r == root) continue;
          check(tpudistRecv(bufs[r].data_ptr(), bufs[r].nbytes(), tpudistUint8, r, comm_, nullptr),
                w);
        }
        check(tpudistGroupEnd(), w);
        bufs[root].copy_(src.view(bufs[root].sizes()));
        for (int r = 0; r < getSize(); r++)
          if (!outs[r].is_contiguous()) outs[r].copy_(bufs[r]);
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpuDist::scatter(
    std::vector<at::Tensor> &outputs, std::vector<std::vector<at::Tensor>> &inputs,
    const c10d::ScatterOptions &opts) {
  checkSingle(outputs);
  int root = (int)opts.rootRank;
  std::vector<at::Tensor> ins;
  if (getRank() == root) {
    TORCH_CHECK(inputs.size() == 1 && (int)inputs[0].size() == getSize(),
                "tpu_dist: scatter needs world_size input tensors on the root");
    ins = inputs[0];
  }
  at::Tensor o = outputs[0];
  return enqueue(c10d::OpType::SCATTER, "scatter", {o}, opts.timeout,
                 [this, o, ins, root](WorkTpuDist &w) mutable {
                   OutBuf out(o);
                   if (getRank() != root) {
                     check(tpudistRecv(out.buf.data_ptr(), out.buf.nbytes(), tpudistUint8, root,
                                       comm_, nullptr),
                           w);
                     out.finish();
                     return;
                   }
                   std::vector<at::Tensor> srcs;
                   for (auto &t : ins) srcs.push_back(t.contiguous());
                   check(tpudistGroupStart(), w);
                   for (int r = 0; r < getSize(); r++)
                     if (r != root)
                       check(tpudistSend(srcs[r].data_ptr(), srcs[r].nbytes(), tpudistUint8, r,
                                         comm_, nullptr),
                             w);
                   check(tpudistGroupEnd(), w);
                   out.buf.copy_(srcs[root].view(out.buf.sizes()));
                   out.finish();
                 });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpuDist::_reduce_scatter_base(
    at::Tensor &output, at::Tensor &input, const c10d::ReduceScatterOptions &opts) {
  checkCpu(output);
  checkCpu(input);
  TORCH_CHECK(input.numel() == output.numel() * getSize(),
              "tpu_dist: reduce_scatter_tensor input must hold world_size x output elements");
  at::Tensor o = output, i = input;
  c10d::ReduceOp op = opts.reduceOp;
  return enqueue(c10d::OpType::_REDUCE_SCATTER_BASE, "reducescatter", {o}, opts.timeout,
                 [this, o, i, op](WorkTpuDist &w) mutable {
                   bool widen = o.scalar_type() == at::kShort;
                   at::Tensor src = asReal(i.contiguous());
                   OutBuf out(o);
                   at::Tensor dst = asReal(out.buf);
                   if (widen) {
                     src = src.to(at::kInt);
                     dst = at::empty({dst.numel()}, at::kInt);
                   }
                   int dtype = reduceDtype(src.scalar_type());
                   TORCH_CHECK(dtype >= 0, "tpu_dist: unsupported dtype ", o.scalar_type());
                   check(tpudistReduceScatter(src.data_ptr(), dst.data_ptr(), (size_t)dst.numel(),
                                              (tpudistDataType_t)dtype,
                                              reduceOp(op, o.scalar_type()), comm_, nullptr),
                         w);
                   if (widen) asReal(out.buf).view({-1}).copy_(dst);
                   out.finish();
                 });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpuDist::reduce_scatter(
    std::vector<at::Tensor> &outputs, std::vector<std::vector<at::Tensor>> &inputs,
    const c10d::ReduceScatterOptions &opts) {
  checkSingle(outputs);
  TORCH_CHECK(inputs.size() == 1 && (int)inputs[0].size() == getSize(),
              "tpu_dist: reduce_scatter needs world_size input tensors");
  std::vector<at::Tensor> flat;
  for (auto &t : inputs[0]) flat.push_back(t.reshape({-1}));
  at::Tensor in = at::cat(flat);
  return _reduce_scatter_base(outputs[0], in, opts);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpuDist::alltoall_base(
    at::Tensor &output, at::Tensor &input, std::vector<int64_t> &outputSplits,
    std::vector<int64_t> &inputSplits, const c10d::AllToAllOptions &opts) {
  checkCpu(output);
  checkCpu(input);
  int n = getSize();
  bool even = outputSplits.empty() && inputSplits.empty();
  auto rowBytes = [](const at::Tensor &t) -> size_t {
    return t.dim() == 0 || t.size(0) == 0 ? 0 : t.nbytes() / (size_t)t.size(0);
  };
  std::vector<size_t> sc(n), sd(n), rc(n), rd(n);
  if (!even) {
    TORCH_CHECK((int)outputSplits.size() == n && (int)inputSplits.size() == n,
                "tpu_dist: all_to_all_single split lists must have world_size entries");
    size_t so = 0, ro = 0;
    for (int p = 0; p < n; p++) {
      sc[p] = (size_t)inputSplits[p] * rowBytes(input);
      sd[p] = so;
      so += sc[p];
      rc[p] = (size_t)outputSplits[p] * rowBytes(output);
      rd[p] = ro;
      ro += rc[p];
    }
    TORCH_CHECK(so == input.nbytes() && ro == output.nbytes(),
                "tpu_dist: all_to_all_single splits do not add up to the tensor sizes");
  } else {
    TORCH_CHECK(
        input.numel() % n == 0 && output.nbytes() == input.nbytes(),
        "tpu_dist: all_to_all_single with even splits needs equal sizes divisible by world_size");
  }
  at::Tensor o = output, i = input;
  return enqueue(c10d::OpType::ALLTOALL_BASE, even ? "alltoall" : "alltoallv", {o}, opts.timeout,
                 [this, o, i, even, sc, sd, rc, rd, n](WorkTpuDist &w) mutable {
                   OutBuf out(o);
                   at::Tensor in = i.contiguous();
                   tpudistResult_t res =
                       even ? tpudistAllToAll(in.data_ptr(), out.buf.data_ptr(), in.nbytes() / n,
                                              tpudistUint8, comm_, nullptr)
                            : tpudistAllToAllv(in.data_ptr(), sc.data(), sd.data(),
                                               out.buf.data_ptr(), rc.data(), rd.data(),
                                               tpudistUint8, comm_, nullptr);
                   check(res, w);
                   out.finish();
                 });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpuDist::alltoall(std::vector<at::Tensor> &outputs,
                                                             std::vector<at::Tensor> &inputs,
                                                             const c10d::AllToAllOptions &opts) {
  int n = getSize();
  TORCH_CHECK((int)outputs.size() == n && (int)inputs.size() == n,
              "tpu_dist: all_to_all needs world_size input and output tensors");
  std::vector<at::Tensor> outs = outputs, ins = inputs;
  return enqueue(c10d::OpType::ALLTOALL, "alltoallv", outs, opts.timeout,
                 [this, outs, ins, n](WorkTpuDist &w) mutable {
                   // Pack into one send and one receive buffer (bytes) and run all-to-all-v.
                   std::vector<size_t> sc(n), sd(n), rc(n), rd(n);
                   std::vector<at::Tensor> flat;
                   size_t so = 0, ro = 0;
                   for (int p = 0; p < n; p++) {
                     flat.push_back(ins[p].contiguous().view({-1}).view(at::kByte));
                     sc[p] = ins[p].nbytes();
                     sd[p] = so;
                     so += sc[p];
                     rc[p] = outs[p].nbytes();
                     rd[p] = ro;
                     ro += rc[p];
                   }
                   at::Tensor send = at::cat(flat);
                   at::Tensor recv = at::empty({(int64_t)ro}, at::kByte);
                   check(tpudistAllToAllv(send.data_ptr(), sc.data(), sd.data(), recv.data_ptr(),
                                          rc.data(), rd.data(), tpudistUint8, comm_, nullptr),
                         w);
                   for (int p = 0; p < n; p++)
                     outs[p].view({-1}).view(at::kByte).copy_(recv.narrow(0, rd[p], rc[p]));
                 });
}

// Tags are not carried (as in the NCCL backend): messages between two ranks match in order.
c10::intrusive_ptr<c10d::Work> ProcessGroupTpuDist::send(std::vector<at::Tensor> &tensors,
                                                         int dstRank, int /*tag*/) {
  checkSingle(tensors);
  at::Tensor t = tensors[0];
  return enqueue(
      c10d::OpType::SEND, "send", {}, c10d::kUnsetTimeout,
      [this, t, dstRank](WorkTpuDist &w) mutable {
        at::Tensor src = t.contiguous();
        check(tpudistSend(src.data_ptr(), src.nbytes(), tpudistUint8, dstRank, comm_, nullptr), w);
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpuDist::recv(std::vector<at::Tensor> &tensors,
                                                         int srcRank, int /*tag*/) {
  checkSingle(tensors);
  at::Tensor t = tensors[0];
  return enqueue(
      c10d::OpType::RECV, "recv", {t}, c10d::kUnsetTimeout,
      [this, t, srcRank](WorkTpuDist &w) mutable {
        OutBuf out(t);
        tpudistRequest_t req = nullptr;
        check(tpudistRecv(out.buf.data_ptr(), out.buf.nbytes(), tpudistUint8, srcRank, comm_, &req),
              w);
        int src = srcRank;
        if (srcRank == tpudistAnySource) check(tpudistRequestSource(req, &src), w);
        check(tpudistWait(req), w);
        w.source_ = src;
        out.finish();
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpuDist::recvAnysource(std::vector<at::Tensor> &tensors,
                                                                  int tag) {
  return recv(tensors, tpudistAnySource, tag);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpuDist::barrier(const c10d::BarrierOptions &opts) {
  return enqueue(c10d::OpType::BARRIER, "barrier", {}, opts.timeout, [this](WorkTpuDist &w) {
    uint8_t one = 1, out = 0;
    check(tpudistAllReduce(&one, &out, 1, tpudistUint8, tpudistMax, comm_, nullptr), w);
  });
}

}  // namespace tpu_dist
