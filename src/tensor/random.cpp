// Random numbers, generated on the device: value i of a draw is splitmix64(seed ^ splitmix64(c + i))
// for the generator's counter c, a pure function of (seed, counter), so manual_seed makes every
// later draw reproducible. The seed and counter live in a small device tensor that each draw
// advances with assign(): a TinyJit replay of a function that draws advances it too, so the replay
// draws new numbers, as calling the function would.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "kiln/error.h"
#include "tensor/tensor_impl.h"

namespace kiln {
namespace {

// (seed, counter) as a realized uint64 tensor; never destroyed (tensors may be drawn during
// static teardown).
Tensor& rng_state() {
  static Tensor* state = new Tensor(Tensor::from_vector<uint64_t>({0x853c49e6748fea9bULL, 0}, {2}));
  return *state;
}

Tensor splitmix64(Tensor x) {
  x = x + uint64_t{0x9e3779b97f4a7c15ULL};
  x = x.bitwise_xor(x.rshift(30)) * uint64_t{0xbf58476d1ce4e5b9ULL};
  x = x.bitwise_xor(x.rshift(27)) * uint64_t{0x94d049bb133111ebULL};
  return x.bitwise_xor(x.rshift(31));
}

// 0, 1, ..., n-1 as uint64, lazily: a column of block starts plus a row of offsets, broadcast and
// flattened (index math in the kernel), so a draw of millions copies no index data to the device.
Tensor iota(int64_t n) {
  constexpr int64_t kBlock = 1024;
  if (n <= kBlock) return Tensor::arange(0, static_cast<double>(n), 1, dtypes::uint64);
  int64_t blocks = (n + kBlock - 1) / kBlock;
  Tensor starts = Tensor::arange(0, static_cast<double>(blocks * kBlock), kBlock, dtypes::uint64).reshape({blocks, 1});
  Tensor offsets = Tensor::arange(0, kBlock, 1, dtypes::uint64).reshape({1, kBlock});
  return (starts + offsets).reshape({blocks * kBlock}).shrink({{0, n}});
}

// `n` uniformly random uint64s (lazy), and the counter moved past them.
Tensor random_bits(int64_t n) {
  std::lock_guard lock(realize_mutex());  // one draw at a time: each reads the counter the last one left
  Tensor& state = rng_state();
  Tensor seed = state.shrink({{0, 1}}), counter = state.shrink({{1, 2}});
  Tensor index = iota(n) + counter;
  Tensor bits = splitmix64(seed.bitwise_xor(splitmix64(index)));
  state.assign(Tensor::cat({seed, counter + static_cast<uint64_t>(n)})).realize();
  return bits;
}

// `n` uniform doubles in [0, 1) with 53 random bits each (lazy).
Tensor uniform_doubles(int64_t n) { return random_bits(n).rshift(11).cast(dtypes::float64) * 0x1.0p-53; }

// Box-Muller over pairs of uniforms: element i uses draws 2i and 2i+1.
Tensor standard_normal_doubles(int64_t n) {
  Tensor u = uniform_doubles(2 * n).reshape({n, 2});
  Tensor u1 = 1.0 - u.shrink({{0, n}, {0, 1}}).reshape({n}), u2 = u.shrink({{0, n}, {1, 2}}).reshape({n});
  return (u1.log() * -2.0).sqrt() * (u2 * (2 * std::numbers::pi)).cos();
}

// The largest double below 1 that stays below 1 when rounded to `dtype`.
double below_one(DType dtype) {
  return 1.0 - std::ldexp(1.0, -(dtype.is_float() ? dtypes::finfo(dtype).second + 1 : 53));
}

int64_t checked_numel(const Shape& shape, DType dtype, const char* what) {
  check_shape(shape, what);
  if (!dtype.is_float()) throw_error(what, ": expected a float dtype, got ", dtype.name());
  return kiln::prod(shape);
}

double fan_in(const Shape& s) {
  double n = 1;
  for (size_t i = 1; i < s.size(); i++) n *= static_cast<double>(s[i]);
  return n;
}

}  // namespace

void Tensor::manual_seed(uint64_t seed) { rng_state().assign(Tensor::from_vector<uint64_t>({seed, 0}, {2})); }

Tensor Tensor::rand(Shape shape, DType dtype) {
  int64_t n = checked_numel(shape, dtype, "rand");
  return uniform_doubles(n).minimum(below_one(dtype)).cast(dtype).reshape(shape);  // rounding must not reach 1
}

Tensor Tensor::randn(Shape shape, DType dtype) {
  int64_t n = checked_numel(shape, dtype, "randn");
  return standard_normal_doubles(n).cast(dtype).reshape(shape);
}

Tensor Tensor::uniform(Shape shape, double low, double high, DType dtype) {
  int64_t n = checked_numel(shape, dtype, "uniform");
  return (low + (high - low) * uniform_doubles(n)).cast(dtype).reshape(shape);
}

Tensor Tensor::normal(Shape shape, double mean, double std, DType dtype) {
  int64_t n = checked_numel(shape, dtype, "normal");
  return (mean + std * standard_normal_doubles(n)).cast(dtype).reshape(shape);
}

Tensor Tensor::randint(Shape shape, int64_t low, int64_t high, DType dtype) {
  check_shape(shape, "randint");
  if (!dtype.is_int()) throw_error("randint: expected an integer dtype, got ", dtype.name());
  if (low >= high) throw_error("randint: expected low < high, got low ", low, " and high ", high);
  // From the integer bits, any range exactly (a scaled float has too few bits for wide ranges); the
  // remainder favours the lowest 2^64 mod range values, each by range / 2^64 at most. Unsigned
  // arithmetic wraps, so low + offset lands on the right int64 for any low < high.
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  Tensor offset = random_bits(kiln::prod(shape)) % range;
  return (offset + static_cast<uint64_t>(low)).bitcast(dtypes::int64).cast(dtype).reshape(shape);
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
