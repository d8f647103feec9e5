#pragma once
// DType: scalar element types, their promotion lattice (NumPy/PyTorch-like, as tinygrad), and the
// vector/pointer forms codegen uses.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kiln {

enum class ScalarType : uint8_t {
  Void, Bool, Int8, Int16, Int32, Int64, UInt8, UInt16, UInt32, UInt64, Float16, BFloat16, Float32, Float64,
  // 8-bit floats, stored as their bit patterns: OCP e4m3 (no inf) and e5m2 (IEEE-like), and the "fnuz"
  // variants (no inf, no -0, NaN is 0x80).
  Fp8E4M3, Fp8E5M2, Fp8E4M3FNUZ, Fp8E5M2FNUZ
};

struct DType {
  ScalarType scalar = ScalarType::Void;
  uint8_t count = 1;   // vector width (codegen only)
  bool ptr = false;    // pointer to `scalar` (codegen only: buffer parameters and INDEX results)

  constexpr DType() = default;
  constexpr DType(ScalarType s, uint8_t c = 1, bool p = false) : scalar(s), count(c), ptr(p) {}

  int itemsize() const;              // bytes of one scalar element
  std::string name() const;          // "float32", "float32x4", "float32*"
  std::string c_name() const;        // C spelling of the scalar: "float", "int", "unsigned char", ...
  bool is_float() const;
  bool is_int() const;               // signed or unsigned integer, not bool
  bool is_unsigned() const;
  bool is_bool() const { return scalar == ScalarType::Bool; }
  bool is_fp8() const { return scalar >= ScalarType::Fp8E4M3; }
  DType base() const { return DType(scalar); }
  DType vec(int n) const { return DType(scalar, static_cast<uint8_t>(n), ptr); }
  DType as_ptr() const { return DType(scalar, count, true); }
  // Smallest and largest values representable (as double; integers above 2^53 lose precision).
  double min_value() const;
  double max_value() const;

  friend constexpr bool operator==(DType a, DType b) {
    return a.scalar == b.scalar && a.count == b.count && a.ptr == b.ptr;
  }
};

namespace dtypes {
inline constexpr DType void_{ScalarType::Void};
inline constexpr DType bool_{ScalarType::Bool};
inline constexpr DType int8{ScalarType::Int8}, int16{ScalarType::Int16}, int32{ScalarType::Int32},
    int64{ScalarType::Int64};
inline constexpr DType uint8{ScalarType::UInt8}, uint16{ScalarType::UInt16}, uint32{ScalarType::UInt32},
    uint64{ScalarType::UInt64};
inline constexpr DType float16{ScalarType::Float16}, bfloat16{ScalarType::BFloat16},
    float32{ScalarType::Float32}, float64{ScalarType::Float64};
inline constexpr DType fp8e4m3{ScalarType::Fp8E4M3}, fp8e5m2{ScalarType::Fp8E5M2},
    fp8e4m3fnuz{ScalarType::Fp8E4M3FNUZ}, fp8e5m2fnuz{ScalarType::Fp8E5M2FNUZ};
// Index arithmetic in generated kernels.
inline constexpr DType index = int32;
inline constexpr DType default_float = float32;
inline constexpr DType default_int = int32;

const std::vector<DType>& all();                      // every scalar dtype, bool first
std::optional<DType> from_name(const std::string&);   // "float32", "int8", "bool", ...
// The smallest dtype both a and b convert to without loss, following tinygrad's lattice
// (bool < int8 < int16 < ...; uint8 < int16; int64/uint64 < fp8s < float16; float16, bfloat16 < float32).
DType least_upper(DType a, DType b);
// Exponent and mantissa bits of a float dtype (tinygrad's finfo): float32 -> (8, 23).
std::pair<int, int> finfo(DType d);
}  // namespace dtypes

// fp8 <-> float32, rounding to nearest even; overflow, infinities and NaN behave as PyTorch's float8 types.
uint8_t float_to_fp8(float x, DType d);
float fp8_to_float(uint8_t bits, DType d);

}  // namespace kiln
