// Creation: constants are lazy (a CONST broadcast to the shape); ranges and random numbers are
// generated on the host straight into a device buffer.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "kiln/error.h"
#include "tensor/tensor_impl.h"

namespace kiln {
namespace {

template <class T>
Tensor converted(const std::vector<double>& values, Shape shape) {
  return Tensor::from_vector(std::vector<T>(values.begin(), values.end()), std::move(shape));
}

// Host values into a tensor of `dtype`: the common dtypes are converted on the host (the data lands
// in a buffer directly); the rest are cast on the device.
Tensor from_doubles(const std::vector<double>& values, Shape shape, DType dtype) {
  switch (dtype.scalar) {
    case ScalarType::Float32: return converted<float>(values, std::move(shape));
    case ScalarType::Float64: return converted<double>(values, std::move(shape));
    case ScalarType::Int32: return converted<int32_t>(values, std::move(shape));
    case ScalarType::Int64: return converted<int64_t>(values, std::move(shape));
    default: return converted<double>(values, std::move(shape)).cast(dtype);
  }
}

// The largest double below 1 that stays below 1 when rounded to `dtype`.
double below_one(DType dtype) {
  switch (dtype.scalar) {
    case ScalarType::Float16: return 1.0 - 0x1.0p-11;
    case ScalarType::BFloat16: return 1.0 - 0x1.0p-8;
    case ScalarType::Float32: return 1.0 - 0x1.0p-24;
    default: return 1.0 - 0x1.0p-53;
  }
}

// Counter-based generator: value i of seed s is a pure function of (s, i), so manual_seed makes
// every later draw reproducible.
struct Rng {
  uint64_t seed = 0x853c49e6748fea9bULL;
  uint64_t counter = 0;
  static uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  }
  double uniform() { return static_cast<double>(splitmix64(seed ^ splitmix64(counter++)) >> 11) * 0x1.0p-53; }
};
Rng& rng() {
  static Rng r;
  return r;
}

}  // namespace

Tensor Tensor::full(Shape shape, double value, DType dtype) {
  check_shape(shape, "full");
  UOpRef c = UOp::const_(dtype, value);
  if (shape.empty()) return Tensor(c);
  UOpRef ones = UOp::make(Ops::RESHAPE, dtype, {c}, Shape(shape.size(), 1));
  return Tensor(UOp::make(Ops::EXPAND, dtype, {ones}, shape));
}

Tensor Tensor::zeros(Shape shape, DType dtype) { return full(std::move(shape), 0, dtype); }
Tensor Tensor::ones(Shape shape, DType dtype) { return full(std::move(shape), 1, dtype); }
Tensor Tensor::zeros_like() const { return zeros(shape(), dtype()); }
Tensor Tensor::ones_like() const { return ones(shape(), dtype()); }
Tensor Tensor::full_like(double value) const { return full(shape(), value, dtype()); }

Tensor Tensor::empty(Shape shape, DType dtype) {
  check_shape(shape, "empty");
  std::vector<char> zeros(static_cast<size_t>(kiln::prod(shape)) * dtype.itemsize());
  return tensor_from_bytes(zeros.data(), zeros.size(), dtype, std::move(shape));
}

Tensor Tensor::arange(double start, double stop, double step, DType dtype) {
  if (step == 0) throw_error("arange: step must not be 0");
  double count = std::ceil((stop - start) / step);
  if (!(count <= static_cast<double>(kMaxNumel))) throw_error("arange: ", count, " elements are too many (at most ", kMaxNumel, ")");
  int64_t n = std::max<int64_t>(0, static_cast<int64_t>(count));
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; i++) v[i] = start + static_cast<double>(i) * step;
  return from_doubles(v, {n}, dtype);
}

Tensor Tensor::eye(int64_t n, DType dtype) {
  check_shape({n, n}, "eye");
  std::vector<double> v(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; i++) v[i * n + i] = 1;
  return from_doubles(v, {n, n}, dtype);
}

void Tensor::manual_seed(uint64_t seed) { rng() = Rng{seed, 0}; }

Tensor Tensor::rand(Shape shape, DType dtype) {
  check_shape(shape, "rand");
  if (!dtype.is_float()) throw_error("rand: expected a float dtype, got ", dtype.name());
  std::vector<double> v(static_cast<size_t>(kiln::prod(shape)));
  for (double& x : v) x = std::min(rng().uniform(), below_one(dtype));  // rounding must not reach 1
  return from_doubles(v, std::move(shape), dtype);
}

Tensor Tensor::randn(Shape shape, DType dtype) {
  check_shape(shape, "randn");
  if (!dtype.is_float()) throw_error("randn: expected a float dtype, got ", dtype.name());
  std::vector<double> v(static_cast<size_t>(kiln::prod(shape)));
  for (double& x : v) {  // Box-Muller
    double u1 = 1.0 - rng().uniform(), u2 = rng().uniform();
    x = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }
  return from_doubles(v, std::move(shape), dtype);
}

}  // namespace kiln
