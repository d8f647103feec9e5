// Counters, devices and settings: GlobalCounters, Device.DEFAULT and Context(DEBUG=2, ...).
#include <pybind11/stl.h>

#include <kiln/context.h>
#include <kiln/counters.h>
#include <optional>

#include "bindings.h"
#include "engine/buffers.h"
#include "runtime/device.h"
#include "support/env.h"

namespace kiln::python {
namespace {

// An environment setting overridden until restore() (Context holds one per keyword).
class EnvOverride {
 public:
  EnvOverride(const std::string& name, const std::string& value) { scope_.emplace(name, value); }
  void restore() { scope_.reset(); }

 private:
  std::optional<env::ScopedEnv> scope_;
};

// A kiln::Context from Python's keywords, active until restore() (kiln.Context's with-block).
class ContextScope {
 public:
  explicit ContextScope(const std::vector<std::pair<std::string, std::string>>& settings) {
    std::vector<Context::Setting> list;
    for (const auto& [name, value] : settings) list.emplace_back(name, value);
    scope_.emplace(list);
  }
  void restore() { scope_.reset(); }

 private:
  std::optional<Context> scope_;
};

}  // namespace

void bind_runtime(py::module_& m) {
  // Class attributes, as tinygrad's: GlobalCounters.kernel_count, GlobalCounters.reset().
  py::class_<GlobalCounters>(m, "GlobalCounters")
      .def_readwrite_static("kernel_count", &GlobalCounters::kernel_count)
      .def_readwrite_static("global_ops", &GlobalCounters::global_ops)
      .def_readwrite_static("global_mem", &GlobalCounters::global_mem)
      .def_readonly_static("mem_used", &GlobalCounters::mem_used)
      .def_readonly_static("mem_peak", &GlobalCounters::mem_peak)
      .def_readwrite_static("time_sum_s", &GlobalCounters::time_sum_s)
      .def_static("reset", &GlobalCounters::reset);

  m.def("default_device", &engine::default_device);
  m.def("device_names", &runtime::device_names);
  // A registered device (Device["CPU"]): created on first use and alive for the whole process, so
  // Python holds plain references.
  py::class_<runtime::Device>(m, "CompiledDevice")
      .def_property_readonly("device", &runtime::Device::name)
      .def_property_readonly("max_threads", &runtime::Device::max_threads)
      .def_property_readonly("vector_bytes", &runtime::Device::vector_bytes)
      .def_property_readonly("vector_registers", &runtime::Device::vector_registers)
      .def_property_readonly("language", &runtime::Device::language)
      .def("synchronize", &runtime::Device::synchronize)
      .def("__repr__", [](const runtime::Device& d) { return "<Device " + d.name() + ">"; });
  m.def("get_device", &runtime::get_device, py::return_value_policy::reference,
        "the device called `name` (case-insensitive, \":N\" ignored); unknown names are an error");
  m.def("canonical_device", [](const std::string& name) { return runtime::get_device(name).name(); },
        "the registered device's canonical name (\"cpu:0\" -> \"CPU\"); unknown names are an error");

  py::class_<ContextScope>(m, "ContextScope")
      .def(py::init<std::vector<std::pair<std::string, std::string>>>())
      .def("restore", &ContextScope::restore);
  m.def("check_setting", &Context::check_setting);
  py::class_<EnvOverride>(m, "EnvOverride").def(py::init<std::string, std::string>()).def("restore", &EnvOverride::restore);
  m.def("getenv_int", &env::get_int, "an integer setting as kiln reads it (overrides included)");
}

}  // namespace kiln::python
