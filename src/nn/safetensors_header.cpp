#include "nn/safetensors_header.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <unordered_set>
#include <vector>

#include "kiln/error.h"

namespace kiln::nn::state {
namespace {

using nlohmann::json;

constexpr const char* kMetadataKey = "__metadata__";
// A valid header nests three deep (header → entry → shape); the limit stops hostile nesting early.
constexpr int kMaxNesting = 8;

struct DTypeName {
  DType dtype;
  const char* name;
};
constexpr DTypeName kDTypeNames[] = {
    {dtypes::float64, "F64"}, {dtypes::float32, "F32"}, {dtypes::float16, "F16"},
    {dtypes::bfloat16, "BF16"}, {dtypes::int64, "I64"}, {dtypes::int32, "I32"},
    {dtypes::int16, "I16"}, {dtypes::int8, "I8"}, {dtypes::uint64, "U64"},
    {dtypes::uint32, "U32"}, {dtypes::uint16, "U16"}, {dtypes::uint8, "U8"},
    {dtypes::bool_, "BOOL"}, {dtypes::fp8e4m3, "F8_E4M3"}, {dtypes::fp8e5m2, "F8_E5M2"},
};

std::string name_of(DType dtype) {
  for (const DTypeName& d : kDTypeNames)
    if (d.dtype == dtype) return d.name;
  throw_error("safetensors has no dtype for ", dtype.name());
}

DType dtype_named(const std::string& name) {
  std::string known;
  for (const DTypeName& d : kDTypeNames) {
    if (name == d.name) return d.dtype;
    known += known.empty() ? d.name : std::string(", ") + d.name;
  }
  throw_error("unknown dtype \"", name, "\" (expected one of ", known, ")");
}

// JSON text for a message, shortened (hostile values can be huge).
std::string text_of(const json& value) {
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  return text.size() > 60 ? text.substr(0, 57) + "..." : text;
}

std::string describe(const json& value) { return std::string(value.type_name()) + " " + text_of(value); }

// A tensor name for a message: quoted, escaped and shortened.
std::string quoted(const std::string& name) { return text_of(json(name)); }

uint64_t non_negative_integer(const json& value, const std::string& what) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer() && value.get<int64_t>() == 0) return 0;  // "-0"
  throw_error(what, " must be a non-negative integer, got ", describe(value));
}

const json& field(const json& entry, const char* key, const std::string& tensor) {
  auto it = entry.find(key);
  if (it == entry.end()) throw_error("tensor ", tensor, " has no \"", key, "\" field");
  return *it;
}

// A shape of at most kMaxNumel elements.
Shape parse_shape(const json& value, const std::string& tensor) {
  if (!value.is_array()) throw_error("tensor ", tensor, ": \"shape\" must be an array, got ", describe(value));
  Shape shape;
  // The running product is capped just above the limit: with every dimension below 2^31 it then
  // stays below 2^62 and cannot overflow, however many dimensions follow (a later 0 still empties it).
  uint64_t product = 1;
  const auto limit = static_cast<uint64_t>(kMaxNumel);
  for (const json& dim : value) {
    uint64_t d = non_negative_integer(dim, "tensor " + tensor + ": each dimension of \"shape\"");
    if (d > limit)
      throw_error("tensor ", tensor, ": shape ", text_of(value), " has a dimension of ", d,
                  "; kiln holds at most ", kMaxNumel, " elements");
    shape.push_back(static_cast<int64_t>(d));
    product = std::min(product * d, limit + 1);
  }
  if (product > limit)
    throw_error("tensor ", tensor, ": shape ", text_of(value), " has more than ", kMaxNumel,
                " elements, the most kiln holds (kernels index with int32)");
  return shape;
}

TensorEntry parse_entry(const std::string& name, const json& entry, uint64_t data_size) {
  std::string tensor = quoted(name);
  if (!entry.is_object())
    throw_error("tensor ", tensor, ": expected an object with dtype, shape and data_offsets, got ",
                describe(entry));
  TensorEntry e;
  e.name = name;
  const json& dtype = field(entry, "dtype", tensor);
  if (!dtype.is_string()) throw_error("tensor ", tensor, ": \"dtype\" must be a string, got ", describe(dtype));
  e.dtype = dtype_named(dtype.get<std::string>());
  const json& shape = field(entry, "shape", tensor);
  e.shape = parse_shape(shape, tensor);

  const json& offsets = field(entry, "data_offsets", tensor);
  if (!offsets.is_array() || offsets.size() != 2)
    throw_error("tensor ", tensor, ": \"data_offsets\" must be [begin, end], got ", describe(offsets));
  e.begin = non_negative_integer(offsets[0], "tensor " + tensor + ": the begin of \"data_offsets\"");
  e.end = non_negative_integer(offsets[1], "tensor " + tensor + ": the end of \"data_offsets\"");
  if (e.end < e.begin)
    throw_error("tensor ", tensor, ": data_offsets ", offsets.dump(), " end before they begin");
  if (e.end > data_size)
    throw_error("tensor ", tensor, ": data_offsets ", offsets.dump(), " run past the data region, which has ",
                data_size, " bytes");
  uint64_t nbytes = static_cast<uint64_t>(prod(e.shape)) * static_cast<uint64_t>(e.dtype.itemsize());
  if (e.end - e.begin != nbytes)
    throw_error("tensor ", tensor, ": ", dtype.get<std::string>(), " shape ", text_of(shape), " needs ",
                nbytes, " bytes, but data_offsets ", offsets.dump(), " span ", e.end - e.begin);
  return e;
}

std::map<std::string, std::string> parse_metadata(const json& value) {
  if (!value.is_object())
    throw_error("\"", kMetadataKey, "\" must be an object of strings, got ", describe(value));
  std::map<std::string, std::string> metadata;
  for (const auto& [key, item] : value.items()) {
    if (!item.is_string())
      throw_error("\"", kMetadataKey, "\" value for ", quoted(key), " must be a string, got ", describe(item));
    metadata.emplace(key, item.get<std::string>());
  }
  return metadata;
}

// Sorts `tensors` into data order and checks that their ranges follow each other without gaps or
// overlaps and fill the data region exactly (what the reference implementation requires).
void check_tiling(std::vector<TensorEntry>& tensors, uint64_t data_size) {
  std::sort(tensors.begin(), tensors.end(), [](const TensorEntry& a, const TensorEntry& b) {
    return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
  });
  uint64_t covered = 0;
  const TensorEntry* previous = nullptr;
  for (const TensorEntry& e : tensors) {
    if (e.begin < covered)
      throw_error("tensor ", quoted(e.name), ": data_offsets [", e.begin, ", ", e.end, "] overlap tensor ",
                  quoted(previous->name), " at [", previous->begin, ", ", previous->end, "]");
    if (e.begin > covered)
      throw_error("bytes [", covered, ", ", e.begin, ") of the data region belong to no tensor (a gap before tensor ",
                  quoted(e.name), ")");
    covered = e.end;
    previous = &e;
  }
  if (covered != data_size)
    throw_error("the data region has ", data_size, " bytes but the tensors cover only the first ", covered);
}

// Checks JSON text in one SAX pass before it is parsed: the JSON library would silently merge
// duplicate keys, and nesting no header needs could exhaust the stack. (The library's callback
// parser can check the same, but it rescans the enclosing object after every value it closes,
// which is quadratic in the number of tensors.)
class HeaderChecker : public nlohmann::json_sax<json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    open();
    open_objects_.emplace_back();
    return true;
  }
  bool key(string_t& key) override {
    if (!open_objects_.back().insert(key).second)
      throw_error("the header has the key ", quoted(key), " twice in one object");
    return true;
  }
  bool end_object() override {
    open_objects_.pop_back();
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    open();
    return true;
  }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    throw_error("the header is not valid JSON: ", e.what());
  }

 private:
  void open() {
    if (++depth_ > kMaxNesting) throw_error("the header nests deeper than ", kMaxNesting, " levels");
  }
  int depth_ = 0;
  std::vector<std::unordered_set<std::string>> open_objects_;  // keys seen so far, per enclosing object
};

// Parses JSON text, rejecting duplicate keys and nesting no header needs; linear in its length.
json parse_json(std::string_view text) {
  HeaderChecker checker;
  json::sax_parse(text, &checker);  // throws kiln::Error for anything json::parse would reject
  return json::parse(text);
}

}  // namespace

std::string format_header(const SafetensorsHeader& header) {
  nlohmann::ordered_json root = nlohmann::ordered_json::object();
  if (!header.metadata.empty()) root[kMetadataKey] = header.metadata;
  for (const TensorEntry& e : header.tensors) {
    if (e.name == kMetadataKey) throw_error("a tensor cannot be named \"", kMetadataKey, "\"");
    nlohmann::ordered_json& entry = root[e.name];
    entry["dtype"] = name_of(e.dtype);
    entry["shape"] = e.shape;
    entry["data_offsets"] = {e.begin, e.end};
  }
  std::string text;
  try {
    text = root.dump();
  } catch (const nlohmann::ordered_json::exception& e) {
    throw_error("tensor names and metadata must be valid UTF-8: ", e.what());
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

SafetensorsHeader parse_header(std::string_view text, uint64_t data_size) {
  json root = parse_json(text);
  if (!root.is_object()) throw_error("the header must be a JSON object, got ", describe(root));
  SafetensorsHeader header;
  for (const auto& [key, value] : root.items()) {
    if (key == kMetadataKey) header.metadata = parse_metadata(value);
    else header.tensors.push_back(parse_entry(key, value, data_size));
  }
  check_tiling(header.tensors, data_size);
  return header;
}

}  // namespace kiln::nn::state
