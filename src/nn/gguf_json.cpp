// The contract's GGUF: a file's metadata as json and its tensors as kiln Tensors (quantized ones lazy),
// and gguf_save's json metadata turned into GGUF's typed values.
#include <limits>

#include "kiln/error.h"
#include "kiln/nn/gguf_json.h"

namespace kiln::nn::state {
namespace {

using json = nlohmann::json;

// The GGUF value of a json scalar or array; `key` names it in errors.
GGUFValue value_from_json(const json& v, const std::string& key) {
  switch (v.type()) {
    case json::value_t::boolean: return v.get<bool>();
    case json::value_t::string: return v.get<std::string>();
    case json::value_t::number_float: return v.get<float>();
    case json::value_t::number_integer:
      if (v.get<int64_t>() < 0) {
        const auto i = v.get<int64_t>();
        if (i >= std::numeric_limits<int32_t>::min()) return static_cast<int32_t>(i);
        return i;
      }
      [[fallthrough]];  // GGUF keeps counts and ids unsigned
    case json::value_t::number_unsigned: {
      const auto u = v.get<uint64_t>();
      if (u <= std::numeric_limits<uint32_t>::max()) return static_cast<uint32_t>(u);
      return u;
    }
    case json::value_t::array: {
      std::vector<GGUFValue> values;
      for (const json& e : v) values.push_back(value_from_json(e, key));
      const GGUFValueType type = values.empty() ? GGUFValueType::UINT8 : values.front().type();
      for (const GGUFValue& e : values)
        if (e.type() != type)
          throw_error("gguf_save: metadata \"", key, "\" mixes ", gguf_type_name(type), " and ", gguf_type_name(e.type()),
                      " elements; a GGUF array holds one kind");
      return GGUFValue::array(type, std::move(values));
    }
    default:
      throw_error("gguf_save: metadata \"", key, "\" is a json ", v.type_name(),
                  "; expected a number, bool, string or array");
  }
}

}  // namespace

json gguf_value_to_json(const GGUFValue& value) {
  return std::visit(
      [](const auto& v) -> json {
        if constexpr (std::is_same_v<std::decay_t<decltype(v)>, GGUFArray>) {
          json array = json::array();
          for (const GGUFValue& e : v.values) array.push_back(gguf_value_to_json(e));
          return array;
        } else {
          return v;
        }
      },
      value.variant());
}

GGUFMetadata gguf_metadata_from_json(const json& metadata) {
  if (metadata.is_null()) return {};
  if (!metadata.is_object()) throw_error("gguf_save: metadata must be a json object, got a json ", metadata.type_name());
  GGUFMetadata out;
  for (const auto& [key, v] : metadata.items()) out.emplace_back(key, value_from_json(v, key));
  return out;
}

GGUF gguf_load(const std::string& path) {
  const GGUFFile file = gguf_open(path);
  GGUF out;
  out.metadata = json::object();
  for (const auto& [key, v] : file.metadata()) out.metadata[key] = gguf_value_to_json(v);
  for (const GGUFTensorInfo& t : file.tensor_infos()) out.tensors.emplace(t.name, file.lazy(t.name));
  return out;
}

}  // namespace kiln::nn::state
