// torch_compat.hpp - the one place that reads torch's version. Every difference between the torch
// releases the plugin supports (1.13, 2.x up to 2.14) is a feature macro here, named after the
// torch version known to have added the feature (or torch's own C10D_BACKEND_HAS_* macro where
// torch defines one); the other files test only these macros.
//
// A method overridden with `override` fails to compile where the base class lacks it, while one
// with the same signature and no `override` still overrides where the base has it. So each
// feature names a version where it is known to exist (checked against that release's headers);
// a release in between that already has it gets the override without the keyword.
#pragma once

#include <torch/version.h>

#define TD_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||     \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

// 2.0: backends derive from c10d::Backend, which a c10d::ProcessGroup holds per device; coalescing
// returns a Work (startCoalescing/endCoalescing), the *_tensor_coalesced ops, Work sequence
// numbers, supportsSplitting.
#define TD_TORCH_2_0 TD_TORCH_AT_LEAST(2, 0)

// 2.6: a PREMUL_SUM reduction carries one factor (PreMulSumSupplement::tensor_factor; 1.13 keeps
// a vector of them, one per input tensor).
#define TD_TORCH_2_6 TD_TORCH_AT_LEAST(2, 6)

// 2.14: c10d::ProcessGroup no longer has setSequenceNumberForGroup (sequence numbers start at 0
// everywhere); Backend::shrink(ranks_to_exclude, flags, options), supportsShrinking,
// Backend::split(store, ranks, options), Backend::merge, getError (ErrorType), setTimeout,
// shutdown and abort are virtual on Backend (torch calls shutdown from destroy_process_group).
#define TD_TORCH_2_14 TD_TORCH_AT_LEAST(2, 14)

#if TD_TORCH_2_0
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

// torch's fault-tolerance contract (2.13+): supportsReconfigure, get_reconfigure_handle,
// reconfigure(ReconfigureOptions); abort hooks (registerAbortHook / unregisterAbortHook).
#ifdef C10D_BACKEND_HAS_RECONFIGURE
#define TD_TORCH_RECONFIGURE 1
#else
#define TD_TORCH_RECONFIGURE 0
#endif
#ifdef C10D_BACKEND_HAS_HOOKS
#define TD_TORCH_ABORT_HOOKS 1
#else
#define TD_TORCH_ABORT_HOOKS 0
#endif

#if TD_TORCH_2_0
#define TD_OVERRIDE_2_0 override
#else
#define TD_OVERRIDE_2_0
#endif
#if TD_TORCH_2_14
#define TD_OVERRIDE_2_14 override
#else
#define TD_OVERRIDE_2_14
#endif

#include <ATen/ATen.h>

#include <torch/csrc/distributed/c10d/Types.hpp>

namespace tpu_dist {

// The factor of a PREMUL_SUM reduction (a double or a one-element tensor) as a 0-dim tensor.
inline at::Tensor premulFactor(const c10d::ReduceOp &op) {
  auto *sup = dynamic_cast<c10d::NCCLPreMulSumSupplement *>(op.supplement_.get());
  TORCH_CHECK(sup, "tpu_dist: PREMUL_SUM without its factor");
#if TD_TORCH_2_6
  if (sup->tensor_factor.defined()) return sup->tensor_factor.reshape({});
#else
  if (!sup->tensor_factors.empty()) return sup->tensor_factors[0].reshape({});
#endif
  return at::scalar_tensor(sup->double_factor, at::kDouble);
}

#if TD_TORCH_2_0
using BaseGroup = c10d::Backend;
#else
using BaseGroup = c10d::ProcessGroup;
#endif
}  // namespace tpu_dist
