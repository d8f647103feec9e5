// Creation: constants are lazy (a CONST broadcast to the shape); ranges and identity matrices are
// generated on the host straight into a device buffer. Random numbers: random.cpp.
#include <algorithm>
#include <cmath>

#include "kiln/error.h"
#include "tensor/tensor_impl.h"

namespace kiln {
namespace {

template <class T>
Tensor converted(const std::vector<double>& values, Shape shape) {
  return Tensor::from_vector(std::vector<T>(values.begin(), values.end()), std::move(shape));
}

// Host values into a tensor of `dtype`: converted on the host (the data lands in a buffer of `dtype`
// directly) for every dtype C++ has; the 16- and 8-bit floats are cast on the device.
Tensor from_doubles(const std::vector<double>& values, Shape shape, DType dtype) {
  switch (dtype.scalar) {
    case ScalarType::Bool: return converted<bool>(values, std::move(shape));
    case ScalarType::Int8: return converted<int8_t>(values, std::move(shape));
    case ScalarType::Int16: return converted<int16_t>(values, std::move(shape));
    case ScalarType::Int32: return converted<int32_t>(values, std::move(shape));
    case ScalarType::Int64: return converted<int64_t>(values, std::move(shape));
    case ScalarType::UInt8: return converted<uint8_t>(values, std::move(shape));
    case ScalarType::UInt16: return converted<uint16_t>(values, std::move(shape));
    case ScalarType::UInt32: return converted<uint32_t>(values, std::move(shape));
    case ScalarType::UInt64: return converted<uint64_t>(values, std::move(shape));
    case ScalarType::Float32: return converted<float>(values, std::move(shape));
    case ScalarType::Float64: return converted<double>(values, std::move(shape));
    default: return converted<double>(values, std::move(shape)).cast(dtype);
  }
}

// Ranges of at most this many whole numbers are index math in the kernels that read them rather than a
// buffer they load: a table of shifts or offsets folds to constants where a kernel unrolls its loop.
constexpr int64_t kMaxIndexMathRange = 64;

// 0, step, ..., (n-1) * step as int32 index math over constants: the sum over the bits b of i of
// 2^b * step, each term a view of one constant (2^b zeros then 2^b copies, repeated), so no kernel
// reads a buffer for it; a range of two is one such view.
Tensor index_math_range(int64_t n, int64_t step) {
  std::optional<Tensor> sum;
  for (int64_t bit = 1; bit < n; bit *= 2) {
    const int64_t period = 2 * bit, periods = (n + period - 1) / period;
    const Tensor upper_half = Tensor::full({1, bit}, bit * step, dtypes::int32).pad({{0, 0}, {bit, 0}});
    const Tensor term = upper_half.expand({periods, period}).reshape({periods * period}).shrink({{0, n}});
    sum = sum ? *sum + term : term;
  }
  return sum ? *sum : Tensor::zeros({n}, dtypes::int32);
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
  // the range's first and last values
  const double lo = step > 0 ? start : stop - step, hi = step > 0 ? stop - step : start;
  if (!dtype) {
    bool whole = std::trunc(start) == start && std::trunc(stop) == stop && std::trunc(step) == step;
    dtype = whole ? dtypes::default_int : dtypes::default_float;
    if (whole && (lo < dtype->min_value() || hi > dtype->max_value())) dtype = dtypes::int64;  // tinygrad's rule
  }
  if (dtype->is_int() && (lo < dtype->min_value() || hi > dtype->max_value()))
    throw_error("arange: [", start, ", ", stop, ") is not representable in ", dtype->name());
  double count = std::ceil((stop - start) / step);
  if (!(count <= static_cast<double>(kMaxNumel))) throw_error("arange: ", count, " elements are too many (at most ", kMaxNumel, ")");
  int64_t n = std::max<int64_t>(0, static_cast<int64_t>(count));
  // whole numbers whose int32 arithmetic cannot overflow: exact in every dtype that holds them
  const bool integral = std::trunc(start) == start && std::trunc(step) == step;
  if (n > 0 && n <= kMaxIndexMathRange && integral && std::abs(start) + std::abs(step) * static_cast<double>(n) < 0x1p31) {
    Tensor i = index_math_range(n, static_cast<int64_t>(step));
    if (start != 0) i = i + Tensor::full({}, static_cast<int64_t>(start), dtypes::int32);
    return *dtype == dtypes::int32 ? i : i.cast(*dtype);
  }
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

}  // namespace kiln
