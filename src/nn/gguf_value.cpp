// GGUFValue: one GGUF metadata value of any kind, with accessors that say what went wrong.
#include <limits>

#include "kiln/error.h"
#include "kiln/nn/gguf.h"

namespace kiln::nn::state {

const char* gguf_type_name(GGUFValueType type) {
  static constexpr const char* kNames[] = {"uint8", "int8",  "uint16", "int16",  "uint32", "int32", "float32",
                                           "bool",  "string", "array", "uint64", "int64",  "float64"};
  const auto i = static_cast<uint32_t>(type);
  return i < std::size(kNames) ? kNames[i] : "unknown";
}

GGUFValue GGUFValue::array(GGUFValueType type, std::vector<GGUFValue> values) {
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].type() != type)
      throw_error("GGUF array of ", gguf_type_name(type), ": element ", i, " is a ", gguf_type_name(values[i].type()));
  return GGUFValue(GGUFArray{type, std::move(values)});
}

int64_t GGUFValue::as_int() const {
  return std::visit(
      [this](const auto& v) -> int64_t {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          if constexpr (std::is_same_v<T, uint64_t>)
            if (v > uint64_t(std::numeric_limits<int64_t>::max()))
              throw_error("GGUF value: the uint64 ", v, " does not fit an int64");
          return static_cast<int64_t>(v);
        } else {
          throw_error("GGUF value: expected an integer, got a ", gguf_type_name(type()));
        }
      },
      value_);
}

double GGUFValue::as_float() const {
  if (const float* f = std::get_if<float>(&value_)) return *f;
  if (const double* d = std::get_if<double>(&value_)) return *d;
  throw_error("GGUF value: expected float32 or float64, got a ", gguf_type_name(type()));
}

void GGUFValue::wrong_kind(GGUFValueType wanted) const {
  throw_error("GGUF value: expected a ", gguf_type_name(wanted), ", got a ", gguf_type_name(type()));
}

}  // namespace kiln::nn::state
