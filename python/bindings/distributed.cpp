// kiln.distributed: collectives over MPI and data-parallel training (kiln/distributed.h), as the
// submodule _kiln.distributed; built where kiln_distributed is (MPI found).
#include <pybind11/stl.h>

#include <kiln/distributed.h>

#include "bindings.h"

namespace kiln::python {

void bind_distributed(py::module_& m) {
  namespace dist = kiln::distributed;
  py::module_ d = m.def_submodule("distributed", "collectives over MPI, data-parallel training");
  d.def("init", &dist::init);
  d.def("initialized", &dist::initialized);
  d.def("rank", &dist::rank);
  d.def("world_size", &dist::world_size);
  // MPI calls can wait for other processes: let other Python threads run meanwhile.
  auto released = py::call_guard<py::gil_scoped_release>();
  d.def("all_reduce", &dist::all_reduce, py::arg("t"), py::arg("op") = "sum", released);
  d.def("broadcast", &dist::broadcast, py::arg("t"), py::arg("root") = 0, released);
  d.def("all_gather", &dist::all_gather, py::arg("t"), py::arg("axis") = 0, released);
  d.def("barrier", &dist::barrier, released);
  d.def("average_gradients", &dist::average_gradients, py::arg("params"),
        py::arg("bucket_bytes") = dist::kDefaultBucketBytes, released);
  d.def("broadcast_parameters", &dist::broadcast_parameters, py::arg("tensors"), py::arg("root") = 0, released);
  d.def("abort", &dist::abort, py::arg("code") = 1);
  py::class_<dist::DistributedSampler>(d, "DistributedSampler")
      .def(py::init<int64_t, uint64_t, bool, bool>(), py::arg("size"), py::arg("seed") = 0, py::arg("shuffle") = true,
           py::arg("drop_last") = false)
      .def("indices", &dist::DistributedSampler::indices, py::arg("epoch"))
      .def_property_readonly("num_samples", &dist::DistributedSampler::num_samples);
}

}  // namespace kiln::python
