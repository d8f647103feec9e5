// Host fp8 conversions: the codec kernels use, compiled here.
#include <cstring>

#include "kiln/dtype.h"
#include "kiln/error.h"
#include "uop/fp8_codec.h"

namespace kiln {
namespace {
KILN_FP8_CODEC
}  // namespace

const Fp8Format& fp8_format(DType d) {
  static const Fp8Format e4m3{3, 7, 0, "fp8e4m3"}, e5m2{2, 15, 1, "fp8e5m2"}, e4m3fnuz{3, 8, 2, "fp8e4m3fnuz"},
      e5m2fnuz{2, 16, 2, "fp8e5m2fnuz"};
  switch (d.scalar) {
    case ScalarType::Fp8E4M3: return e4m3;
    case ScalarType::Fp8E5M2: return e5m2;
    case ScalarType::Fp8E4M3FNUZ: return e4m3fnuz;
    case ScalarType::Fp8E5M2FNUZ: return e5m2fnuz;
    default: throw_error("fp8: expected an fp8 dtype, got ", d.name());
  }
}

uint8_t float_to_fp8(float x, DType d) {
  const Fp8Format& f = fp8_format(d);
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return kiln_fp8_from_f32_bits(bits, f.man, f.bias, f.kind);
}

float fp8_to_float(uint8_t b, DType d) {
  const Fp8Format& f = fp8_format(d);
  uint32_t bits = kiln_fp8_to_f32_bits(b, f.man, f.bias, f.kind);
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

}  // namespace kiln
