// kiln.llm.Model: the LLaMA-family model, its KV cache and generation (python/kiln/llm.py wraps it).
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <kiln/llm.h>

#include "bindings.h"

namespace kiln::python {

void bind_llm(py::module_& m) {
  using llm::Model;
  py::class_<Model>(m, "LlmModel")
      .def_static("from_safetensors", &Model::from_safetensors, py::arg("folder"))
      .def_static("from_gguf", &Model::from_gguf, py::arg("path"))
      .def("forward", &Model::forward, py::arg("tokens"), py::arg("start_pos"))
      .def(
          "generate",
          [](Model& model, const std::vector<int32_t>& ids, int max_tokens, float temperature, int top_k, float top_p,
             float min_p, float repeat_penalty, uint64_t seed, const std::function<bool(int32_t)>& on_token) {
            return model.generate(ids, max_tokens, {temperature, top_k, top_p, min_p, repeat_penalty, seed}, on_token);
          },
          py::arg("ids"), py::arg("max_tokens"), py::arg("temperature"), py::arg("top_k"), py::arg("top_p"),
          py::arg("min_p"), py::arg("repeat_penalty"), py::arg("seed"), py::arg("on_token") = py::none())
      .def("reset", &Model::reset)
      .def_property_readonly("vocab_size", &Model::vocab_size)
      .def_property_readonly("max_context", &Model::max_context)
      .def_property_readonly("eos_ids", &Model::eos_ids);
}

}  // namespace kiln::python
