// module.cpp - the Python extension tpu_dist._C: the process group class, its options and its
// creator.
#include <pybind11/chrono.h>
#include <torch/extension.h>

#include "process_group.hpp"

namespace {

using PG = tpu_dist::ProcessGroupTpuDist;

c10::intrusive_ptr<PG> createProcessGroup(const c10::intrusive_ptr<c10d::Store> &store, int rank,
                                          int size, const c10::intrusive_ptr<PG::Options> &opts) {
  py::gil_scoped_release release;  // rendezvous blocks on the store
  return c10::make_intrusive<PG>(store, rank, size, opts);
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "tpu_dist torch.distributed backend (C++ shim over libtpu_dist)";
  py::class_<PG::Options, c10::intrusive_ptr<PG::Options>>(m, "Options")
      .def(py::init<std::chrono::milliseconds>(), py::arg("timeout"))
      .def_readwrite("timeout", &PG::Options::timeout)
      .def_readwrite("group_name", &PG::Options::group_name)
      .def_readwrite("global_ranks_in_group", &PG::Options::global_ranks_in_group)
      .def_property_readonly("backend", [](const PG::Options &o) { return o.backend; });
  py::class_<PG, tpu_dist::BaseGroup, c10::intrusive_ptr<PG>>(m, "ProcessGroupTpuDist")
      .def_property_readonly("options", &PG::getOptions)
      .def_property_readonly("supports_coalescing", &PG::supportsCoalescing)
      .def("_store_ops", &PG::storeOps, "store operations this group's bootstrap made")
      .def(
          "split",
          [](PG &self, int color, int key, const c10::intrusive_ptr<PG::Options> &opts) {
            py::gil_scoped_release release;
            return self.split(color, key, opts);
          },
          py::arg("color"), py::arg("key"), py::arg("options") = py::none())
      .def(
          "perform_nocolor_split",
          [](PG &self, const py::object & /*device*/) {
            py::gil_scoped_release release;
            self.split(TPUDIST_SPLIT_NOCOLOR, 0, c10::intrusive_ptr<PG::Options>());
          },
          py::arg("device") = py::none())
      .def("_shutdown", &PG::shutdown, py::call_guard<py::gil_scoped_release>())
      .def("shutdown", &PG::shutdown, py::call_guard<py::gil_scoped_release>())
      .def("abort", &PG::abort, py::call_guard<py::gil_scoped_release>());
  m.def("create_process_group", &createProcessGroup, py::arg("store"), py::arg("rank"),
        py::arg("size"), py::arg("options"));
  m.def("library_version", []() {
    int v = 0;
    tpudistGetVersion(&v);
    return v;
  });
  m.attr("TORCH_VERSION_MAJOR") = TORCH_VERSION_MAJOR;
  m.attr("SPLIT_NOCOLOR") = TPUDIST_SPLIT_NOCOLOR;
}
