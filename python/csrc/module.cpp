// module.cpp - the Python extension tpu_dist._C: the process group class and its creator.
#include <pybind11/chrono.h>
#include <torch/extension.h>

#include "process_group.hpp"

namespace {

c10::intrusive_ptr<tpu_dist::BaseGroup> createProcessGroup(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
    const std::chrono::duration<float>& timeout) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
  py::gil_scoped_release release;  // rendezvous blocks on the store
  return c10::make_intrusive<tpu_dist::ProcessGroupTpuDist>(store, rank, size, ms);
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "tpu_dist torch.distributed backend (C++ shim over libtpu_dist)";
  py::class_<tpu_dist::ProcessGroupTpuDist, tpu_dist::BaseGroup,
             c10::intrusive_ptr<tpu_dist::ProcessGroupTpuDist>>(m, "ProcessGroupTpuDist");
  m.def("create_process_group", &createProcessGroup, py::arg("store"), py::arg("rank"),
        py::arg("size"), py::arg("timeout"));
  m.def("library_version", []() {
    int v = 0;
    tpudistGetVersion(&v);
    return v;
  });
  m.attr("TORCH_VERSION_MAJOR") = TORCH_VERSION_MAJOR;
}
