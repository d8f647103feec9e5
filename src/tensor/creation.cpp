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

// A scalar CONST broadcast to `shape` (a view: nothing is stored).
Tensor broadcast_const(Shape shape, UOpRef c) {
  DType dtype = c->dtype;
  if (shape.empty()) return Tensor(c);
  UOpRef ones = UOp::make(Ops::RESHAPE, dtype, {c}, Shape(shape.size(), 1));
  return Tensor(UOp::make(Ops::EXPAND, dtype, {ones}, shape));
}

}  // namespace

Tensor Tensor::full(Shape shape, double value, DType dtype) {
  check_shape(shape, "full");
  return broadcast_const(std::move(shape), UOp::const_(dtype, value));
}
Tensor Tensor::full(Shape shape, int64_t value, DType dtype) {
  check_shape(shape, "full");
  return broadcast_const(std::move(shape), UOp::const_int(dtype, value));
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

Tensor Tensor::arange(double stop) { return arange(0, stop); }

Tensor Tensor::arange(double start, double stop, double step, std::optional<DType> dtype) {
  if (!std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step))
    throw_error("arange: expected finite start, stop and step, got ", start, ", ", stop, ", ", step);
  if (step == 0) throw_error("arange: step must not be 0");
  if (!dtype) {
    bool whole = std::trunc(start) == start && std::trunc(stop) == stop && std::trunc(step) == step;
    dtype = whole ? dtypes::default_int : dtypes::default_float;
  }
  double count = std::ceil((stop - start) / step);
  if (!(count <= static_cast<double>(kMaxNumel))) throw_error("arange: ", count, " elements are too many (at most ", kMaxNumel, ")");
  int64_t n = std::max<int64_t>(0, static_cast<int64_t>(count));
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; i++) v[i] = start + static_cast<double>(i) * step;
  return from_doubles(v, {n}, *dtype);
}

Tensor Tensor::eye(int64_t n, DType dtype) {
  check_shape({n, n}, "eye");
  std::vector<double> v(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; i++) v[i * n + i] = 1;
  return from_doubles(v, {n, n}, dtype);
}

void Tensor::manual_seed(uint64_t seed) { rng() = Rng{seed, 0}; }

namespace {

// Host draws of `shape`'s element count, converted into a new buffer.
template <class Draw>
Tensor host_random(Shape shape, DType dtype, const char* what, Draw draw) {
  check_shape(shape, what);
  if (!dtype.is_float()) throw_error(what, ": expected a float dtype, got ", dtype.name());
  std::vector<double> v(static_cast<size_t>(kiln::prod(shape)));
  for (double& x : v) x = draw();
  return from_doubles(v, std::move(shape), dtype);
}

double standard_normal() {  // Box-Muller
  double u1 = 1.0 - rng().uniform(), u2 = rng().uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

double fan_in(const Shape& s) {
  double n = 1;
  for (size_t i = 1; i < s.size(); i++) n *= static_cast<double>(s[i]);
  return n;
}

}  // namespace

Tensor Tensor::rand(Shape shape, DType dtype) {
  const double top = below_one(dtype);  // rounding must not reach 1
  return host_random(std::move(shape), dtype, "rand", [&] { return std::min(rng().uniform(), top); });
}

Tensor Tensor::randn(Shape shape, DType dtype) { return host_random(std::move(shape), dtype, "randn", standard_normal); }

Tensor Tensor::uniform(Shape shape, double low, double high, DType dtype) {
  return host_random(std::move(shape), dtype, "uniform", [&] { return low + (high - low) * rng().uniform(); });
}

Tensor Tensor::normal(Shape shape, double mean, double std, DType dtype) {
  return host_random(std::move(shape), dtype, "normal", [&] { return mean + std * standard_normal(); });
}

Tensor Tensor::kaiming_uniform(Shape shape, double a, DType dtype) {
  double bound = std::sqrt(3.0) * std::sqrt(2.0 / (1 + a * a)) / std::sqrt(fan_in(shape));
  return uniform(std::move(shape), -bound, bound, dtype);
}

Tensor Tensor::kaiming_normal(Shape shape, double a, DType dtype) {
  double std = std::sqrt(2.0 / (1 + a * a)) / std::sqrt(fan_in(shape));
  return normal(std::move(shape), 0, std, dtype);
}

Tensor Tensor::glorot_uniform(Shape shape, DType dtype) {
  double bound = shape.empty() ? 1 : std::sqrt(6.0 / (static_cast<double>(shape[0]) + fan_in(shape)));
  return uniform(std::move(shape), -bound, bound, dtype);
}

Tensor Tensor::scaled_uniform(Shape shape, DType dtype) {
  double bound = 1 / std::sqrt(static_cast<double>(std::max<int64_t>(1, kiln::prod(shape))));
  return uniform(std::move(shape), -bound, bound, dtype);
}

}  // namespace kiln
