// kiln.llm.Tokenizer: the language models' tokenizers, made from the fields GGUF stores under tokenizer.ggml.*.
#include <pybind11/stl.h>

#include <kiln/llm_tokenizer.h>

#include "bindings.h"

namespace kiln::python {

void bind_llm_tokenizer(py::module_& m) {
  using llm::Tokenizer;
  py::class_<Tokenizer>(m, "Tokenizer")
      .def_static(
          "from_vocab",
          [](std::string model, std::vector<std::string> tokens, std::vector<float> scores,
             std::vector<int32_t> token_types, std::vector<std::string> merges, int32_t bos_id, int32_t eos_id,
             int32_t unknown_id, std::optional<bool> add_bos, std::optional<bool> add_space_prefix, std::string pre) {
            return Tokenizer::from_vocab({std::move(model), std::move(pre), std::move(tokens), std::move(scores),
                                          std::move(token_types), std::move(merges), bos_id, eos_id, unknown_id,
                                          add_bos, add_space_prefix});
          },
          py::arg("model"), py::arg("tokens"), py::arg("scores") = std::vector<float>{},
          py::arg("token_types") = std::vector<int32_t>{}, py::arg("merges") = std::vector<std::string>{},
          py::arg("bos_id") = -1, py::arg("eos_id") = -1, py::arg("unknown_id") = -1, py::arg("add_bos") = py::none(),
          py::arg("add_space_prefix") = py::none(), py::arg("pre") = "")
      .def_static("from_gguf", &Tokenizer::from_gguf, py::arg("path"))
      .def_static("from_hf", &Tokenizer::from_hf, py::arg("path"))
      // str or bytes in (bytes need not be UTF-8); str out, with U+FFFD for bytes that are not UTF-8.
      .def("encode", &Tokenizer::encode, py::arg("text"), py::arg("add_bos") = true)
      .def(
          "decode",
          [](const Tokenizer& t, const std::vector<int32_t>& ids) {
            const std::string s = t.decode(ids);
            return py::reinterpret_steal<py::str>(
                PyUnicode_DecodeUTF8(s.data(), static_cast<py::ssize_t>(s.size()), "replace"));
          },
          py::arg("ids"))
      .def_property_readonly("bos", &Tokenizer::bos)
      .def_property_readonly("eos", &Tokenizer::eos)
      .def_property_readonly("vocab_size", &Tokenizer::vocab_size);
}

}  // namespace kiln::python
