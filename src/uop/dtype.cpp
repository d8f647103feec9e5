#include "kiln/dtype.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "kiln/error.h"

namespace kiln {
namespace {

struct ScalarInfo {
  const char* name;
  const char* c_name;
  int itemsize;
};

const ScalarInfo& info(ScalarType s) {
  static const ScalarInfo table[] = {
      {"void", "void", 0},          {"bool", "_Bool", 1},           {"int8", "signed char", 1},
      {"int16", "short", 2},        {"int32", "int", 4},            {"int64", "long long", 8},
      {"uint8", "unsigned char", 1}, {"uint16", "unsigned short", 2}, {"uint32", "unsigned int", 4},
      {"uint64", "unsigned long long", 8}, {"float16", "_Float16", 2}, {"bfloat16", "__bf16", 2},
      {"float32", "float", 4},      {"float64", "double", 8},
      // fp8s are stored as their bit patterns
      {"fp8e4m3", "unsigned char", 1}, {"fp8e5m2", "unsigned char", 1}, {"fp8e4m3fnuz", "unsigned char", 1},
      {"fp8e5m2fnuz", "unsigned char", 1},
  };
  return table[static_cast<int>(s)];
}

}  // namespace

int DType::itemsize() const { return info(scalar).itemsize; }

std::string DType::name() const {
  std::string n = info(scalar).name;
  if (count > 1) n += "x" + std::to_string(count);
  if (ptr) n += "*";
  return n;
}

std::string DType::c_name() const { return info(scalar).c_name; }

bool DType::is_float() const {
  return scalar == ScalarType::Float16 || scalar == ScalarType::BFloat16 || scalar == ScalarType::Float32 ||
         scalar == ScalarType::Float64 || is_fp8();
}

bool DType::is_unsigned() const {
  return scalar == ScalarType::UInt8 || scalar == ScalarType::UInt16 || scalar == ScalarType::UInt32 ||
         scalar == ScalarType::UInt64;
}

bool DType::is_int() const {
  return is_unsigned() || scalar == ScalarType::Int8 || scalar == ScalarType::Int16 ||
         scalar == ScalarType::Int32 || scalar == ScalarType::Int64;
}

double DType::min_value() const {
  switch (scalar) {
    case ScalarType::Bool: return 0;
    case ScalarType::Int8: return -128;
    case ScalarType::Int16: return -32768;
    case ScalarType::Int32: return std::numeric_limits<int32_t>::min();
    case ScalarType::Int64: return static_cast<double>(std::numeric_limits<int64_t>::min());
    case ScalarType::UInt8: case ScalarType::UInt16: case ScalarType::UInt32: case ScalarType::UInt64: return 0;
    default: return -std::numeric_limits<double>::infinity();
  }
}

double DType::max_value() const {
  switch (scalar) {
    case ScalarType::Bool: return 1;
    case ScalarType::Int8: return 127;
    case ScalarType::Int16: return 32767;
    case ScalarType::Int32: return std::numeric_limits<int32_t>::max();
    case ScalarType::Int64: return static_cast<double>(std::numeric_limits<int64_t>::max());
    case ScalarType::UInt8: return 255;
    case ScalarType::UInt16: return 65535;
    case ScalarType::UInt32: return std::numeric_limits<uint32_t>::max();
    case ScalarType::UInt64: return static_cast<double>(std::numeric_limits<uint64_t>::max());
    default: return std::numeric_limits<double>::infinity();
  }
}

namespace dtypes {

const std::vector<DType>& all() {
  static const std::vector<DType> v{bool_,  int8,    int16,    int32,   int64,  uint8,  uint16,
                                    uint32, uint64,  float16,  bfloat16, float32, float64,
                                    fp8e4m3, fp8e5m2, fp8e4m3fnuz, fp8e5m2fnuz};
  return v;
}

std::optional<DType> from_name(const std::string& name) {
  for (DType d : all())
    if (d.name() == name) return d;
  if (name == "float") return float32;
  if (name == "half") return float16;
  if (name == "double") return float64;
  if (name == "int") return int32;
  if (name == "long") return int64;
  return std::nullopt;
}

namespace {

// tinygrad's promotion lattice: each dtype's direct successors.
const std::vector<DType>& parents(DType d) {
  static const std::map<ScalarType, std::vector<DType>> lattice{
      {ScalarType::Bool, {int8, uint8}},        {ScalarType::Int8, {int16}},
      {ScalarType::Int16, {int32}},             {ScalarType::Int32, {int64}},
      {ScalarType::Int64, {fp8e4m3, fp8e5m2, fp8e4m3fnuz, fp8e5m2fnuz}},
      {ScalarType::UInt8, {int16, uint16}},
      {ScalarType::UInt16, {int32, uint32}},    {ScalarType::UInt32, {int64, uint64}},
      {ScalarType::UInt64, {fp8e4m3, fp8e5m2, fp8e4m3fnuz, fp8e5m2fnuz}},
      {ScalarType::Fp8E4M3, {float16, bfloat16}}, {ScalarType::Fp8E5M2, {float16, bfloat16}},
      {ScalarType::Fp8E4M3FNUZ, {float16, bfloat16}}, {ScalarType::Fp8E5M2FNUZ, {float16, bfloat16}},
      {ScalarType::Float16, {float32}},
      {ScalarType::BFloat16, {float32}},        {ScalarType::Float32, {float64}},
      {ScalarType::Float64, {}},
  };
  return lattice.at(d.scalar);
}

std::set<ScalarType> ancestors_and_self(DType d) {
  std::set<ScalarType> out{d.scalar};
  std::vector<DType> work{d};
  while (!work.empty()) {
    DType x = work.back();
    work.pop_back();
    for (DType p : parents(x))
      if (out.insert(p.scalar).second) work.push_back(p);
  }
  return out;
}

// Order used to pick the least of several common ancestors (lower = smaller type).
int priority(ScalarType s) {
  static const std::map<ScalarType, int> p{
      {ScalarType::Bool, 0},    {ScalarType::Int8, 1},    {ScalarType::UInt8, 2},   {ScalarType::Int16, 3},
      {ScalarType::UInt16, 4},  {ScalarType::Int32, 5},   {ScalarType::UInt32, 6},  {ScalarType::Int64, 7},
      {ScalarType::UInt64, 8},  {ScalarType::Fp8E4M3, 9}, {ScalarType::Fp8E4M3FNUZ, 10}, {ScalarType::Fp8E5M2, 11},
      {ScalarType::Fp8E5M2FNUZ, 12}, {ScalarType::Float16, 13}, {ScalarType::BFloat16, 14}, {ScalarType::Float32, 15},
      {ScalarType::Float64, 16}};
  return p.at(s);
}

}  // namespace

DType least_upper(DType a, DType b) {
  if (a == b) return a;
  if (a.count != 1 || b.count != 1 || a.ptr || b.ptr)
    throw_error("dtype promotion: only scalar dtypes promote, got ", a.name(), " and ", b.name());
  auto sa = ancestors_and_self(a), sb = ancestors_and_self(b);
  std::vector<ScalarType> common;
  std::set_intersection(sa.begin(), sa.end(), sb.begin(), sb.end(), std::back_inserter(common));
  // tinygrad puts the fp8s right above int64/uint64 so that int + fp8 stays fp8; kiln keeps two integer types
  // promoting to float16 (as before fp8s existed) rather than into 8 bits of float.
  if (!a.is_fp8() && !b.is_fp8()) std::erase_if(common, [](ScalarType s) { return DType(s).is_fp8(); });
  auto best = std::min_element(common.begin(), common.end(),
                               [](ScalarType x, ScalarType y) { return priority(x) < priority(y); });
  return DType(*best);
}

std::pair<int, int> finfo(DType d) {
  switch (d.scalar) {
    case ScalarType::Float16: return {5, 10};
    case ScalarType::BFloat16: return {8, 7};
    case ScalarType::Float32: return {8, 23};
    case ScalarType::Float64: return {11, 52};
    case ScalarType::Fp8E4M3: case ScalarType::Fp8E4M3FNUZ: return {4, 3};
    case ScalarType::Fp8E5M2: case ScalarType::Fp8E5M2FNUZ: return {5, 2};
    default: throw_error("finfo: expected a float dtype, got ", d.name());
  }
}

}  // namespace dtypes
}  // namespace kiln
