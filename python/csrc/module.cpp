// module.cpp - the Python extension tpu_dist._C: the process group class, its options and its
// creator.
#include <pybind11/chrono.h>
#include <torch/extension.h>

#include "process_group.hpp"
#if TD_TORCH_2_0
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

namespace {

using PG = tpu_dist::ProcessGroupTpuDist;

c10::intrusive_ptr<PG> createProcessGroup(const c10::intrusive_ptr<c10d::Store> &store, int rank,
                                          int size, const c10::intrusive_ptr<PG::Options> &opts) {
  py::gil_scoped_release release;  // rendezvous blocks on the store
  return c10::make_intrusive<PG>(store, rank, size, opts);
}

#if TD_TORCH_2_0
// The process group torch sees for a tpu_dist backend (torch 2.x). torch's own ProcessGroup names
// a plugin backend "custom" (DDP's logging reads that name) and answers sequence numbers only for
// its built-in backends; this one says "tpu_dist" and asks the backend. A creator that returns a
// ProcessGroup is used by torch as the group itself.
class GroupTpuDist : public c10d::ProcessGroup {
 public:
  GroupTpuDist(const c10::intrusive_ptr<c10d::Store> &store, c10::intrusive_ptr<PG> backend)
      : c10d::ProcessGroup(store, backend->getRank(), backend->getSize()),
        backend_(std::move(backend)) {
    setDefaultBackend(BackendType::CUSTOM);
    setBackend(c10::DeviceType::CPU, BackendType::CUSTOM, backend_);
  }
  const std::string getBackendName() const override {
    return "tpu_dist";
  }
#if !TD_TORCH_2_14
  void setSequenceNumberForGroup() override {}
#endif
  uint64_t getSequenceNumberForGroup() override {
    return backend_->getSequenceNumberForGroup();
  }

 private:
  c10::intrusive_ptr<PG> backend_;
};
#endif

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "tpu_dist torch.distributed backend (C++ shim over libtpu_dist)";
  auto options = py::class_<PG::Options, c10::intrusive_ptr<PG::Options>>(m, "Options");
#if TD_TORCH_RECONFIGURE
  // torch's enable_reconfigure: no communicator until reconfigure (group_reconf.cpp).
  options.def_readwrite("enable_reconfigure", &PG::Options::enable_reconfigure);
#endif
  options.def(py::init<std::chrono::milliseconds>(), py::arg("timeout"))
      .def_readwrite("timeout", &PG::Options::timeout)
      .def_readwrite("group_name", &PG::Options::group_name)
      .def_readwrite("global_ranks_in_group", &PG::Options::global_ranks_in_group)
      .def_readwrite("mode", &PG::Options::mode)
      .def_property_readonly("backend", [](const PG::Options &o) { return o.backend; });
  py::class_<PG, tpu_dist::BaseGroup, c10::intrusive_ptr<PG>>(m, "ProcessGroupTpuDist")
      .def_property_readonly("options", &PG::getOptions)
      .def_property_readonly("supports_coalescing", &PG::supportsCoalescing)
      .def("_store_ops", &PG::storeOps, "store operations this group's bootstrap made")
      .def(
          "split",
          [](PG &self, int color, int key, const c10::intrusive_ptr<PG::Options> &opts) {
            py::gil_scoped_release release;
            return self.splitByColor(color, key, opts);
          },
          py::arg("color"), py::arg("key"), py::arg("options") = py::none())
      .def(
          "perform_nocolor_split",
          [](PG &self, const py::object & /*device*/) {
            py::gil_scoped_release release;
            self.splitByColor(TPUDIST_SPLIT_NOCOLOR, 0, c10::intrusive_ptr<PG::Options>());
          },
          py::arg("device") = py::none())
      .def(
          "shrink",
          [](PG &self, const std::vector<int> &exclude, bool abort,
             const c10::intrusive_ptr<PG::Options> &opts) {
            std::vector<int> members;
            c10::intrusive_ptr<PG> pg;
            {
              py::gil_scoped_release release;
              pg = self.shrinkExcluding(exclude, abort, opts, &members);
            }
            return py::make_tuple(pg, members);
          },
          py::arg("exclude_ranks"), py::arg("abort") = true, py::arg("options") = py::none(),
          "tpudistCommShrink: (the survivors' new group, their ranks in this group in new order)")
      .def("_shutdown", &PG::shutdown, py::call_guard<py::gil_scoped_release>())
      .def("shutdown", &PG::shutdown, py::call_guard<py::gil_scoped_release>())
      .def("abort", &PG::abort, py::call_guard<py::gil_scoped_release>());
#if TD_TORCH_2_0
  py::class_<GroupTpuDist, c10d::ProcessGroup, c10::intrusive_ptr<GroupTpuDist>>(m, "GroupTpuDist")
      .def(py::init<const c10::intrusive_ptr<c10d::Store> &, c10::intrusive_ptr<PG>>(),
           py::arg("store"), py::arg("backend"));
#endif
  m.def("create_process_group", &createProcessGroup, py::arg("store"), py::arg("rank"),
        py::arg("size"), py::arg("options"));
  m.def("library_version", []() {
    int v = 0;
    tpudistGetVersion(&v);
    return v;
  });
  m.attr("TORCH_2_0") = bool(TD_TORCH_2_0);
  m.attr("TORCH_2_14") = bool(TD_TORCH_2_14);
  m.attr("TORCH_RECONFIGURE") = bool(TD_TORCH_RECONFIGURE);
  m.attr("SPLIT_NOCOLOR") = TPUDIST_SPLIT_NOCOLOR;
  m.attr("SHRINK_DEFAULT") = TPUDIST_SHRINK_DEFAULT;
  m.attr("SHRINK_ABORT") = TPUDIST_SHRINK_ABORT;
}
