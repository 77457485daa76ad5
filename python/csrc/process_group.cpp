// process_group.cpp - the tpu_dist torch backend: tensors -> C API calls on a worker thread.
#include "process_group.hpp"

#include <c10/util/Exception.h>

#include <sstream>

namespace tpu_dist {

namespace {

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
    case c10d::ReduceOp::PREMUL_SUM:  // the inputs are premultiplied (premultiplied())
      TORCH_CHECK(at::isFloatingType(t) || at::isComplexType(t),
                  "tpu_dist: PREMUL_SUM needs a floating-point tensor, got ", t);
      return tpudistSum;
    default:
      TORCH_CHECK(false, "tpu_dist: unsupported reduce op ", (int)op.op_);
  }
  return tpudistSum;
}

// PREMUL_SUM: this rank's input times the reduction's factor, computed as torch multiplies (in the
// tensor's own dtype); the library then sums. Any other op: the input itself.
at::Tensor premultiplied(const at::Tensor &in, const c10d::ReduceOp &op) {
  if (op.op_ != c10d::ReduceOp::PREMUL_SUM) return in;
  return in.mul(premulFactor(op).to(in.device()));
}

// Complex tensors travel as pairs of reals.
at::Tensor asReal(const at::Tensor &t) {
  return t.is_complex() ? at::view_as_real(t) : t;
}

// Every tensor an operation takes: a dense (strided) CPU tensor. Sparse tensors get a clear error
// (gloo's all_reduce sums sparse COO tensors; tpu_dist moves dense buffers only).
void checkCpuDense(const at::Tensor &t) {
  TORCH_CHECK(t.device().is_cpu(), "tpu_dist: only CPU tensors are supported, got ", t.device());
  TORCH_CHECK(t.layout() == at::kStrided, "tpu_dist: only dense tensors are supported, got a ",
              t.layout(), " tensor (convert with to_dense())");
}

void checkCpuDense(const std::vector<at::Tensor> &v) {
  for (auto &t : v) checkCpuDense(t);
}

void checkSingle(const std::vector<at::Tensor> &v) {
  TORCH_CHECK(v.size() == 1, "tpu_dist: expects one tensor per call, got ", v.size());
  checkCpuDense(v[0]);
}

// A contiguous tensor to write results into, and the copy back when t was not contiguous.
struct OutBuf {
  at::Tensor t;
  at::Tensor buf;
  explicit OutBuf(const at::Tensor &target)
      : t(target), buf(target.is_contiguous() ? target : target.contiguous()) {}
  void finish() {
    if (!t.is_contiguous()) t.copy_(buf);
  }
};

}  // namespace

// ---- operations ----
// Each body issues its C calls and hands what follows them to after() (see the header), capturing
// every buffer the calls use so it outlives a batch's tpudistGroupEnd.
void ProcessGroupTpuDist::check(tpudistResult_t res, const WorkTpuDist &w) const {
  if (res == tpudistSuccess) return;
  noteError(res);
  std::ostringstream os;
  os << "tpu_dist: " << w.opName << " (sequence " << w.seq << ") failed on rank " << getRank()
     << ": " << tpudistGetErrorString(res) << ": "
     << (aborted_ ? "the process group was aborted" : tpudistGetLastError(comm_));
  TORCH_CHECK(false, os.str());
}

void ProcessGroupTpuDist::reduceCall(const at::Tensor &src, const at::Tensor &dst,
                                     at::ScalarType type, int root, const c10d::ReduceOp &op,
                                     bool all, const WorkTpuDist &w) {
  int dtype = reduceDtype(src.scalar_type());
  TORCH_CHECK(dtype >= 0, "tpu_dist: unsupported dtype ", type, " for ", w.opName);
  tpudistRedOp_t rop = reduceOp(op, type);
  size_t n = (size_t)src.numel();
  tpudistRequest_t req = nullptr;  // defer mode: completed at a harvest (group_defer.cpp)
  tpudistResult_t res =
      all ? tpudistAllReduce(src.data_ptr(), dst.data_ptr(), n, (tpudistDataType_t)dtype, rop,
                             comm_, reqs_ ? &req : nullptr)
          : tpudistReduce(src.data_ptr(), dst.data_ptr(), n, (tpudistDataType_t)dtype, rop, root,
                          comm_, nullptr);
  check(res, w);
  if (req) reqs_->push_back(req);
}

void ProcessGroupTpuDist::reduceOne(const at::Tensor &t, int root, const c10d::ReduceOp &op,
                                    bool all, const WorkTpuDist &w) {
  // int16 reduces exactly through int32 (sum/prod wrap mod 2^16 either way; avg truncates the
  // true mean).
  bool widen = t.scalar_type() == at::kShort;
  // A contiguous real tensor is the library's buffer itself: nothing to make, copy or run after
  // (its Work holds it until the call completes, in a batch or a deferral too).
  if (!widen && !t.is_complex() && op.op_ != c10d::ReduceOp::PREMUL_SUM && t.is_contiguous())
    return reduceCall(t, t, t.scalar_type(), root, op, all, w);
  at::Tensor src = asReal(premultiplied(t, op).contiguous());
  OutBuf out(t);
  at::Tensor dst = asReal(out.buf);
  if (widen) {
    src = src.to(at::kInt);
    dst = at::empty_like(src);
  }
  reduceCall(src, dst, t.scalar_type(), root, op, all, w);
  bool mine = all || getRank() == root;
  after([out = std::move(out), src = std::move(src), dst = std::move(dst), widen, mine]() mutable {
    if (!mine) return;
    if (widen) asReal(out.buf).copy_(dst);
    out.finish();
  });
}

// The body reads its tensor from the Work, and takes the op as its kind alone unless it carries a
// factor (PREMUL_SUM): so it fits std::function's own storage and a call allocates no body.
std::function<void(WorkTpuDist &)> ProcessGroupTpuDist::reduceBody(const c10d::ReduceOp &op,
                                                                   int root, bool all) {
  if (op.op_ == c10d::ReduceOp::PREMUL_SUM)
    return [this, op, root, all](WorkTpuDist &w) { reduceOne(w.output(), root, op, all, w); };
  struct Plain {
    ProcessGroupTpuDist *pg;
    c10d::ReduceOp::RedOpType kind;
    int root;
    bool all;
    void operator()(WorkTpuDist &w) const {
      pg->reduceOne(w.output(), root, c10d::ReduceOp(kind), all, w);
    }
  };
  return Plain{this, op.op_, root, all};
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpuDist::allreduce(std::vector<at::Tensor> &tensors,
                                                              const c10d::AllreduceOptions &opts) {
  checkSingle(tensors);
  return enqueue(c10d::OpType::ALLREDUCE, "allreduce", {tensors[0]}, opts.timeout,
                 reduceBody(opts.reduceOp, 0, true));
}

// One all-reduce per tensor, all in one batch (tensors may differ in dtype and shape).
c10::intrusive_ptr<c10d::Work> ProcessGroupTpuDist::allreduce_coalesced(
    std::vector<at::Tensor> &tensors, const c10d::AllreduceCoalescedOptions &opts) {
  checkCpuDense(tensors);
  std::vector<c10::intrusive_ptr<WorkTpuDist>> ops;
  for (auto &t : tensors)
    ops.push_back(makeWork(c10d::OpType::ALLREDUCE, "allreduce_coalesced", {t}, opts.timeout,
                           reduceBody(opts.reduceOp, 0, true)));
  return enqueueBatch(c10d::OpType::ALLREDUCE_COALESCED, "allreduce_coalesced", std::move(ops),
                      opts.timeout);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpuDist::reduce(std::vector<at::Tensor> &tensors,
                                                           const c10d::ReduceOptions &opts) {
  checkSingle(tensors);
  return enqueue(c10d::OpType::REDUCE, "reduce", {tensors[0]}, opts.timeout,
                 reduceBody(opts.reduceOp, (int)opts.rootRank, false));
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
                   after([out]() mutable { out.finish(); });
                 });
}

void ProcessGroupTpuDist::allgatherOne(at::Tensor &o, const at::Tensor &i, const WorkTpuDist &w) {
  OutBuf out(o);
  at::Tensor in = i.contiguous();
  check(tpudistAllGather(in.data_ptr(), out.buf.data_ptr(), in.nbytes(), tpudistUint8, comm_,
                         nullptr),
        w);
  after([out, in]() mutable { out.finish(); });
}

void ProcessGroupTpuDist::checkGatherSizes(const at::Tensor &output, const at::Tensor &input) {
  checkCpuDense(output);
  checkCpuDense(input);
  TORCH_CHECK(output.numel() == input.numel() * getSize(),
              "tpu_dist: all_gather_into_tensor output must hold world_size x input elements");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "tpu_dist: dtype mismatch");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpuDist::_allgather_base(
    at::Tensor &output, at::Tensor &input, const c10d::AllgatherOptions &opts) {
  checkGatherSizes(output, input);
  at::Tensor o = output, i = input;
  return enqueue(c10d::OpType::_ALLGATHER_BASE, "allgather", {o}, opts.timeout,
                 [this, o, i](WorkTpuDist &w) mutable { allgatherOne(o, i, w); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpuDist::allgather(
    std::vector<std::vector<at::Tensor>> &outputs, std::vector<at::Tensor> &inputs,
    const c10d::AllgatherOptions &opts) {
  checkSingle(inputs);
  TORCH_CHECK(outputs.size() == 1 && (int)outputs[0].size() == getSize(),
              "tpu_dist: all_gather needs world_size output tensors");
  checkCpuDense(outputs[0]);
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
        after([outs, src, flat]() mutable {
          for (size_t r = 0; r < outs.size(); r++)
            outs[r].copy_(flat.narrow(0, r * src.numel(), src.numel()).view(outs[r].sizes()));
        });
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpuDist::allgather_coalesced(
    std::vector<std::vector<at::Tensor>> &outputs, std::vector<at::Tensor> &inputs,
    const c10d::AllgatherOptions &opts) {
  TORCH_CHECK(outputs.size() == (size_t)getSize(),
              "tpu_dist: allgather_coalesced needs one output list per rank");
  checkCpuDense(inputs);
  for (auto &l : outputs) checkCpuDense(l);
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
                   int n = getSize();
                   after([outs, send, recv, n]() mutable {
                     for (int r = 0; r < n; r++) {
                       int64_t off = r * send.numel();
                       for (size_t j = 0; j < outs[r].size(); j++) {
                         int64_t nb = (int64_t)outs[r][j].nbytes();
                         outs[r][j].view({-1}).view(at::kByte).copy_(recv.narrow(0, off, nb));
                         off += nb;
                       }
                     }
                   });
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
    checkCpuDense(outputs[0]);
    outs = outputs[0];
  }
  at::Tensor in = inputs[0];
  return enqueue(
      c10d::OpType::GATHER, "gather", outs, opts.timeout,
      [this, outs, in, root](WorkTpuDist &w) mutable {
        at::Tensor src = in.contiguous();
        if (getRank() != root) {
          check(tpudistSend(src.data_ptr(), src.nbytes(), tpudistUint8, root, comm_, nullptr), w);
          after([src]() {});
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
        after([outs, bufs, src, root]() mutable {
          bufs[root].copy_(src.view(bufs[root].sizes()));
          for (size_t r = 0; r < outs.size(); r++)
            if (!outs[r].is_contiguous()) outs[r].copy_(bufs[r]);
        });
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
    checkCpuDense(inputs[0]);
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
                     after([out]() mutable { out.finish(); });
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
                   after([out, srcs, root]() mutable {
                     out.buf.copy_(srcs[root].view(out.buf.sizes()));
                     out.finish();
                   });
                 });
}

void ProcessGroupTpuDist::reduceScatterOne(at::Tensor &o, const at::Tensor &i, c10d::ReduceOp op,
                                           const WorkTpuDist &w) {
  bool widen = o.scalar_type() == at::kShort;
  at::Tensor src = asReal(premultiplied(i, op).contiguous());
  OutBuf out(o);
  at::Tensor dst = asReal(out.buf);
  if (widen) {
    src = src.to(at::kInt);
    dst = at::empty({dst.numel()}, at::kInt);
  }
  int dtype = reduceDtype(src.scalar_type());
  TORCH_CHECK(dtype >= 0, "tpu_dist: unsupported dtype ", o.scalar_type());
  check(
      tpudistReduceScatter(src.data_ptr(), dst.data_ptr(), (size_t)dst.numel(),
                           (tpudistDataType_t)dtype, reduceOp(op, o.scalar_type()), comm_, nullptr),
      w);
  after([out, src, dst, widen]() mutable {
    if (widen) asReal(out.buf).view({-1}).copy_(dst);
    out.finish();
  });
}

void ProcessGroupTpuDist::checkScatterSizes(const at::Tensor &output, const at::Tensor &input) {
  checkCpuDense(output);
  checkCpuDense(input);
  TORCH_CHECK(input.numel() == output.numel() * getSize(),
              "tpu_dist: reduce_scatter_tensor input must hold world_size x output elements");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpuDist::_reduce_scatter_base(
    at::Tensor &output, at::Tensor &input, const c10d::ReduceScatterOptions &opts) {
  checkScatterSizes(output, input);
  at::Tensor o = output, i = input;
  c10d::ReduceOp op = opts.reduceOp;
  return enqueue(c10d::OpType::_REDUCE_SCATTER_BASE, "reducescatter", {o}, opts.timeout,
                 [this, o, i, op](WorkTpuDist &w) mutable { reduceScatterOne(o, i, op, w); });
}

#if TD_TORCH_2_0
// all_gather_into_tensor / reduce_scatter_tensor under _coalescing_manager (FSDP): one call per
// pair, all in one batch.
c10::intrusive_ptr<c10d::Work> ProcessGroupTpuDist::allgather_into_tensor_coalesced(
    std::vector<at::Tensor> &outputs, std::vector<at::Tensor> &inputs,
    const c10d::AllgatherOptions &opts) {
  TORCH_CHECK(outputs.size() == inputs.size(),
              "tpu_dist: allgather_into_tensor_coalesced needs one output per input");
  std::vector<c10::intrusive_ptr<WorkTpuDist>> ops;
  for (size_t k = 0; k < inputs.size(); k++) {
    checkGatherSizes(outputs[k], inputs[k]);
    at::Tensor o = outputs[k], i = inputs[k];
    ops.push_back(makeWork(c10d::OpType::_ALLGATHER_BASE, "allgather_into_tensor_coalesced", {o},
                           opts.timeout,
                           [this, o, i](WorkTpuDist &w) mutable { allgatherOne(o, i, w); }));
  }
  return enqueueBatch(c10d::OpType::COALESCED, "allgather_into_tensor_coalesced", std::move(ops),
                      opts.timeout);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpuDist::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor> &outputs, std::vector<at::Tensor> &inputs,
    const c10d::ReduceScatterOptions &opts) {
  TORCH_CHECK(outputs.size() == inputs.size(),
              "tpu_dist: reduce_scatter_tensor_coalesced needs one output per input");
  std::vector<c10::intrusive_ptr<WorkTpuDist>> ops;
  c10d::ReduceOp op = opts.reduceOp;
  for (size_t k = 0; k < inputs.size(); k++) {
    checkScatterSizes(outputs[k], inputs[k]);
    at::Tensor o = outputs[k], i = inputs[k];
    ops.push_back(makeWork(
        c10d::OpType::_REDUCE_SCATTER_BASE, "reduce_scatter_tensor_coalesced", {o}, opts.timeout,
        [this, o, i, op](WorkTpuDist &w) mutable { reduceScatterOne(o, i, op, w); }));
  }
  return enqueueBatch(c10d::OpType::COALESCED, "reduce_scatter_tensor_coalesced", std::move(ops),
                      opts.timeout);
}
#endif

c10::intrusive_ptr<c10d::Work> ProcessGroupTpuDist::reduce_scatter(
    std::vector<at::Tensor> &outputs, std::vector<std::vector<at::Tensor>> &inputs,
    const c10d::ReduceScatterOptions &opts) {
  checkSingle(outputs);
  TORCH_CHECK(inputs.size() == 1 && (int)inputs[0].size() == getSize(),
              "tpu_dist: reduce_scatter needs world_size input tensors");
  checkCpuDense(inputs[0]);
  std::vector<at::Tensor> flat;
  for (auto &t : inputs[0]) flat.push_back(t.reshape({-1}));
  at::Tensor in = at::cat(flat);
  return _reduce_scatter_base(outputs[0], in, opts);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpuDist::alltoall_base(
    at::Tensor &output, at::Tensor &input, std::vector<int64_t> &outputSplits,
    std::vector<int64_t> &inputSplits, const c10d::AllToAllOptions &opts) {
  checkCpuDense(output);
  checkCpuDense(input);
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
                   after([out, in]() mutable { out.finish(); });
                 });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpuDist::alltoall(std::vector<at::Tensor> &outputs,
                                                             std::vector<at::Tensor> &inputs,
                                                             const c10d::AllToAllOptions &opts) {
  int n = getSize();
  TORCH_CHECK((int)outputs.size() == n && (int)inputs.size() == n,
              "tpu_dist: all_to_all needs world_size input and output tensors");
  checkCpuDense(outputs);
  checkCpuDense(inputs);
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
                   after([outs, send, recv, rc, rd, n]() mutable {
                     for (int p = 0; p < n; p++)
                       outs[p].view({-1}).view(at::kByte).copy_(recv.narrow(0, rd[p], rc[p]));
                   });
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
        after([src]() {});
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
        if (deferred_) {  // in a batch: complete at its GroupEnd
          TORCH_CHECK(srcRank != tpudistAnySource,
                      "tpu_dist: a receive from any source cannot be coalesced");
          check(tpudistRecv(out.buf.data_ptr(), out.buf.nbytes(), tpudistUint8, srcRank, comm_,
                            nullptr),
                w);
          w.source_ = srcRank;
          after([out]() mutable { out.finish(); });
          return;
        }
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
    // device_ids (which devices NCCL would use) mean nothing on CPU: the same barrier either way.
    auto flag = at::ones({1}, at::kByte);
    check(tpudistAllReduce(flag.data_ptr(), flag.data_ptr(), 1, tpudistUint8, tpudistMax, comm_,
                           nullptr),
          w);
    after([flag]() {});
  });
}

}  // namespace tpu_dist
