#pragma once
// Tensor: a lazy handle over a UOp graph. Operations build graph nodes; nothing runs until
// realize() or a readback. Copying a Tensor shares it (reference semantics, like torch::Tensor).
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/ir/uop.h"
#include "kiln/schedule_item.h"

namespace kiln {

struct TensorImpl;

template <class T>
concept Scalar = std::is_arithmetic_v<T>;

// One axis given as a plain integer (bool is excluded: x.sum(true) is a mistake, not axis 1).
template <class T>
concept Axis = std::integral<T> && !std::same_as<T, bool>;

// The dtype a C++ element type maps to (float → float32, int → int32, bool → bool, ...).
template <class T>
DType dtype_of();

// How a loss combines its per-element values: kept as they are, averaged, or summed.
enum class Reduction { none, mean, sum };

// Tensor::pad's fill: a constant, the edge mirrored without repeating it (reflect), the edge
// element repeated (replicate), or the other end wrapped around (circular).
enum class PadMode { constant, reflect, replicate, circular };

class Tensor {
 public:
  // ---- creation
  Tensor(std::vector<float> values);  // 1-D float32, already in a device buffer
  explicit Tensor(UOpRef uop);         // wrap a tensor-graph node
  template <class T>
  static Tensor from_vector(std::vector<T> values, Shape shape);
  static Tensor zeros(Shape shape, DType dtype = dtypes::float32);
  static Tensor ones(Shape shape, DType dtype = dtypes::float32);
  static Tensor full(Shape shape, double value, DType dtype = dtypes::float32);
  // Integer values stay exact (no trip through double, which rounds above 2^53).
  static Tensor full(Shape shape, int64_t value, DType dtype = dtypes::float32);
  template <std::integral I>
  static Tensor full(Shape shape, I value, DType dtype = dtypes::float32);
  static Tensor empty(Shape shape, DType dtype = dtypes::float32);
  // A tensor over `shape`'s elements of `dtype` at host address `ptr`, as tinygrad's from_blob: it
  // reads the memory in place (never writes it, never frees it), so the memory must outlive every
  // use. Where the default device does not compute on host memory, or ptr is misaligned for dtype,
  // the bytes are copied in at once instead.
  static Tensor from_blob(const void* ptr, Shape shape, DType dtype = dtypes::float32);
  // [start, stop) in steps; without a dtype: int32 when start, stop and step are whole numbers,
  // else float32 (tinygrad's rule, by value since C++ passes them all as doubles).
  static Tensor arange(double start, double stop, double step = 1, std::optional<DType> dtype = {});
  static Tensor arange(double stop);  // [0, stop)
  static Tensor eye(int64_t n, DType dtype = dtypes::float32);
  static Tensor rand(Shape shape, DType dtype = dtypes::float32);   // U[0,1)
  static Tensor randn(Shape shape, DType dtype = dtypes::float32);  // N(0,1)
  static Tensor randint(Shape shape, int64_t low = 0, int64_t high = 10, DType dtype = dtypes::int32);  // [low, high)
  static void manual_seed(uint64_t seed);
  static Tensor uniform(Shape shape, double low = 0, double high = 1, DType dtype = dtypes::float32);
  static Tensor normal(Shape shape, double mean = 0, double std = 1, DType dtype = dtypes::float32);
  // initializers, as tinygrad's (fan-in is the product of all but the first dimension)
  static Tensor kaiming_uniform(Shape shape, double a = 0.01, DType dtype = dtypes::float32);
  static Tensor kaiming_normal(Shape shape, double a = 0.01, DType dtype = dtypes::float32);
  static Tensor glorot_uniform(Shape shape, DType dtype = dtypes::float32);
  static Tensor scaled_uniform(Shape shape, DType dtype = dtypes::float32);
  // realizes several tensors in one schedule (kernels they share run once)
  static void realize(const std::vector<Tensor>& tensors);
  Tensor zeros_like() const;
  Tensor ones_like() const;
  Tensor full_like(double value) const;

  // ---- properties
  const Shape& shape() const;
  DType dtype() const;
  std::string device() const;
  int64_t numel() const;
  int64_t ndim() const;
  const Shape& size() const { return shape(); }  // tinygrad's size(): the shape, or one axis's length
  int64_t size(int dim) const;
  int64_t element_size() const { return dtype().itemsize(); }
  int64_t nbytes() const { return numel() * element_size(); }

  // ---- execution and readback (readback realizes first)
  Tensor& realize();
  template <class T>
  std::vector<T> to_vector() const;
  template <class T>
  T item() const;
  Tensor contiguous() const;  // materialize into its own buffer when realized

  // ---- elementwise (broadcasting like NumPy; dtypes promote like tinygrad)
  Tensor add(const Tensor& o) const;
  Tensor sub(const Tensor& o) const;
  Tensor mul(const Tensor& o) const;
  Tensor div(const Tensor& o) const;  // true division: integer inputs give a float result
  // rounding_mode "trunc" (toward zero) or "floor" (as idiv); integer inputs keep their dtype
  Tensor div(const Tensor& o, std::string_view rounding_mode) const;
  // Floor division and its remainder, as Python's // and % (PyTorch's div(rounding_mode="floor")
  // and remainder): the remainder takes the divisor's sign. Floats: floor(a / b) and
  // a - floor(a / b) * b. Integers divided by 0 give 0 for both (NumPy's value; PyTorch raises,
  // which a lazy graph cannot).
  Tensor idiv(const Tensor& o) const;
  Tensor mod(const Tensor& o) const;
  Tensor fmod(const Tensor& o) const;  // C's fmod: the remainder takes the dividend's sign
  Tensor neg() const;
  // Accuracy in float32, in ULPs from the exact result rounded to float32, for every input
  // (tests/test_transcendentals.cpp measures it): exp, exp2 (inline arithmetic on the CPU, in
  // vector registers too), log, log2 and rsqrt within 1; sin and cos (any |x|: exact argument
  // reduction) within 2 (with clang, loops of them call glibc's vector versions, libmvec; with gcc
  // they are libm's, within 1); sqrt and reciprocal correctly rounded;
  // tanh within 2; tan and sigmoid within 3; pow within 1 (computed in float64), exact for integer exponents whenever the
  // result is a float (3^10 = 59049). tanh(±large) is exactly ±1; pow gives NaN for a negative base
  // (-inf too) with a non-integer exponent, and x^0 = 1 for every x. float64 uses libm's double
  // functions (tanh has its own polynomial); 16-bit floats compute in float32 and round once.
  Tensor relu() const, exp() const, exp2() const, log() const, log2() const, sqrt() const, rsqrt() const,
      sin() const, cos() const, tan() const, tanh() const, sigmoid() const, abs() const, reciprocal() const,
      square() const, sign() const, trunc() const, floor() const, ceil() const, round() const;
  Tensor pow(const Tensor& exponent) const;
  Tensor pow(double exponent) const;
  // Composites (tinygrad's functions; tests/test_math_ops.cpp bounds their error against libm)
  Tensor log10() const, sinh() const, cosh() const, asinh() const, acosh() const, atanh() const, asin() const,
      acos() const, atan() const;
  Tensor copysign(const Tensor& o) const;   // |this| with o's sign (-0.0 counts as negative)
  Tensor logaddexp(const Tensor& o) const;  // log(e^this + e^o) without overflow
  Tensor lerp(const Tensor& end, const Tensor& weight) const;  // this + (end - this) * weight
  Tensor lerp(const Tensor& end, double weight) const;
  // bool: |this - o| <= atol + rtol |o| where both are finite, equal infinities, and NaNs when equal_nan
  Tensor isclose(const Tensor& o, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false) const;
  Tensor allclose(const Tensor& o, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false) const;  // 0-d
  Tensor maximum(const Tensor& o) const;
  Tensor minimum(const Tensor& o) const;
  Tensor clip(double lo, double hi) const;
  Tensor lt(const Tensor& o) const, gt(const Tensor& o) const, le(const Tensor& o) const,
      ge(const Tensor& o) const, eq(const Tensor& o) const, ne(const Tensor& o) const;
  Tensor logical_not() const;
  Tensor isnan() const, isinf(bool positive = true, bool negative = true) const, isfinite() const;
  // Bitwise ops on integers and bools (tinygrad's names).
  Tensor bitwise_and(const Tensor& o) const, bitwise_or(const Tensor& o) const, bitwise_xor(const Tensor& o) const;
  Tensor bitwise_not() const;
  Tensor lshift(int bits) const, rshift(int bits) const;  // integers: x << bits, x >> bits (logical for unsigned)
  Tensor lshift(const Tensor& bits) const, rshift(const Tensor& bits) const;  // a shift per element
  Tensor where(const Tensor& if_true, const Tensor& if_false) const;  // this is the condition
  // The same with C++ scalars (converted as the arithmetic operators do).
  template <Scalar S> Tensor lt(S v) const;
  template <Scalar S> Tensor gt(S v) const;
  template <Scalar S> Tensor le(S v) const;
  template <Scalar S> Tensor ge(S v) const;
  template <Scalar S> Tensor eq(S v) const;
  template <Scalar S> Tensor ne(S v) const;
  template <Scalar S> Tensor maximum(S v) const;
  template <Scalar S> Tensor minimum(S v) const;
  template <Scalar S> Tensor idiv(S v) const;
  template <Scalar S> Tensor mod(S v) const;
  template <Scalar S> Tensor fmod(S v) const;
  template <Scalar S> Tensor copysign(S v) const;
  template <Scalar S> Tensor logaddexp(S v) const;
  template <Scalar S> Tensor where(const Tensor& if_true, S if_false) const;
  template <Scalar S> Tensor where(S if_true, const Tensor& if_false) const;
  template <Scalar A, Scalar B> Tensor where(A if_true, B if_false) const;
  Tensor cast(DType dtype) const;
  Tensor bitcast(DType dtype) const;  // reinterpret the bits; another itemsize rescales the last axis

  // ---- reductions (axes may be negative; empty = all axes)
  Tensor sum(std::vector<int> axes = {}, bool keepdim = false) const;
  Tensor max(std::vector<int> axes = {}, bool keepdim = false) const;
  Tensor min(std::vector<int> axes = {}, bool keepdim = false) const;
  Tensor mean(std::vector<int> axes = {}, bool keepdim = false) const;
  Tensor prod(std::vector<int> axes = {}, bool keepdim = false) const;
  Tensor any(std::vector<int> axes = {}, bool keepdim = false) const;  // bool: some element is nonzero
  Tensor all(std::vector<int> axes = {}, bool keepdim = false) const;  // bool: every element is nonzero
  // One axis: x.sum(1), x.max(-1, true). Templates, so that x.sum({}) still means all axes.
  template <Axis I> Tensor sum(I axis, bool keepdim = false) const { return sum(one_axis(axis), keepdim); }
  template <Axis I> Tensor max(I axis, bool keepdim = false) const { return max(one_axis(axis), keepdim); }
  template <Axis I> Tensor min(I axis, bool keepdim = false) const { return min(one_axis(axis), keepdim); }
  template <Axis I> Tensor mean(I axis, bool keepdim = false) const { return mean(one_axis(axis), keepdim); }
  template <Axis I> Tensor prod(I axis, bool keepdim = false) const { return prod(one_axis(axis), keepdim); }
  Tensor argmax(int axis, bool keepdim = false) const;
  Tensor argmin(int axis, bool keepdim = false) const;
  Tensor softmax(int axis = -1) const;
  Tensor log_softmax(int axis = -1) const;
  Tensor logsumexp(int axis, bool keepdim = false) const;
  Tensor softmin(int axis = -1) const;  // softmax of -this

  // ---- movement: free views, no copy until a kernel needs one
  Tensor reshape(Shape shape) const;  // one dimension may be -1
  Tensor permute(std::vector<int> order) const;
  Tensor expand(Shape shape) const;   // -1 keeps a dimension
  Tensor pad(std::vector<std::pair<int64_t, int64_t>> padding) const;  // (before, after) per axis, zeros
  // tinygrad's pad(mode=, value=): negative amounts crop (circular: not supported)
  Tensor pad(const Pairs& padding, PadMode mode, double value = 0) const;
  Tensor shrink(std::vector<std::pair<int64_t, int64_t>> bounds) const; // [begin, end) per axis
  // tinygrad's shrink_to / pad_to: each axis cut (or padded with `value`) at its end to the given
  // size; nullopt keeps an axis. A size past the axis (shrink_to) or short of it (pad_to) is an error.
  Tensor shrink_to(const std::vector<std::optional<int64_t>>& shape) const;
  Tensor pad_to(const std::vector<std::optional<int64_t>>& shape, double value = 0) const;
  Tensor flip(std::vector<int> axes) const;
  Tensor transpose(int a = 0, int b = 1) const;
  Tensor flatten(int start_dim = 0, int end_dim = -1) const;
  Tensor squeeze(int axis) const;
  Tensor unsqueeze(int axis) const;

  // ---- matrix ops
  Tensor matmul(const Tensor& o) const;
  Tensor dot(const Tensor& o) const { return matmul(o); }

  Tensor linear(const Tensor& weight, std::optional<Tensor> bias = {}) const;  // x @ weight.T + bias
  // Einstein summation as NumPy's: "ij,jk->ik", implicit outputs, "..." for broadcast dims.
  static Tensor einsum(const std::string& formula, const std::vector<Tensor>& operands);

  // ---- combining and splitting
  static Tensor cat(const std::vector<Tensor>& tensors, int axis = 0);
  static Tensor stack(const std::vector<Tensor>& tensors, int axis = 0);
  Tensor repeat(std::vector<int64_t> repeats) const;
  std::vector<Tensor> split(std::vector<int64_t> sizes, int axis = 0) const;
  std::vector<Tensor> split(int64_t size, int axis = 0) const;  // pieces of `size` (the last may be shorter)
  std::vector<Tensor> chunk(int64_t chunks, int axis = 0) const;

  // ---- indexing
  Tensor gather(int axis, const Tensor& index) const;  // out[..i..] = this[..index[..i..]..] along axis
  Tensor scatter(int axis, const Tensor& index, const Tensor& src) const;  // copy of this with src placed at index
  Tensor masked_fill(const Tensor& mask, double value) const;
  Tensor masked_fill(const Tensor& mask, const Tensor& value) const;  // value broadcasts against this
  Tensor one_hot(int64_t num_classes) const;  // integer tensor -> int32 with a new last axis
  // Cumulative scans along one axis (tinygrad's), any length; a 0-d tensor is its own scan.
  Tensor cumsum(int axis = 0) const;
  Tensor cumprod(int axis) const;
  // (running max/min, int32 index of the element it came from: the last one among equals, as PyTorch)
  std::pair<Tensor, Tensor> cummax(int axis = 0) const;
  std::pair<Tensor, Tensor> cummin(int axis = 0) const;
  Tensor logcumsumexp(int axis = 0) const;
  Tensor tril(int64_t diagonal = 0) const;
  Tensor triu(int64_t diagonal = 0) const;
  Tensor index_select(int axis, const Tensor& index) const;  // this[index] along axis (integer tensor)

  // ---- sorting: a bitonic network of movement and where ops (lazy, any length), tinygrad's names
  // The sorted values and their int32 indices along dim. Stable: equal elements keep their order.
  // NaN sorts above +inf (last ascending, first descending), as PyTorch's sort(stable=True).
  std::pair<Tensor, Tensor> sort(int dim = -1, bool descending = false) const;
  Tensor argsort(int dim = -1, bool descending = false) const;
  std::pair<Tensor, Tensor> topk(int64_t k, int dim = -1, bool largest = true, bool sorted = true) const;
  static Tensor randperm(int64_t n, DType dtype = dtypes::int32);
  // int32 indices drawn with weights this (1-D or 2-D: one row per draw set), as tinygrad's.
  Tensor multinomial(int64_t num_samples = 1, bool replacement = false) const;

  // ---- rearranging: views built from movement ops, tinygrad's names and semantics
  Tensor roll(std::vector<int64_t> shifts, std::vector<int> dims = {}) const;  // no dims: over the flattened tensor
  Tensor repeat_interleave(int64_t repeats, std::optional<int> dim = {}) const;  // no dim: flattened first
  Tensor diag() const;  // 1-D -> the square matrix with it on the diagonal
  Tensor diagonal(int64_t offset = 0, int dim1 = 0, int dim2 = 1) const;
  static std::vector<Tensor> meshgrid(const std::vector<Tensor>& tensors, const std::string& indexing = "ij");
  Tensor unfold(int dim, int64_t size, int64_t step) const;  // dim -> (windows, size) with the windows last
  // einops-style: "b (h w) c -> b c h w" with sizes {{"h", 4}} where a split needs them.
  Tensor rearrange(const std::string& formula, const std::vector<std::pair<std::string, int64_t>>& sizes = {}) const;
  // tinygrad's scatter(reduce=): "add" or "multiply" combine src with the values already at index
  Tensor scatter(int axis, const Tensor& index, const Tensor& src, std::string_view reduce) const;
  // src combined into the positions index names along axis by `reduce` ("sum", "prod", "mean",
  // "amax", "amin"); without include_self, a position some src lands on leaves this's value out.
  Tensor scatter_reduce(int axis, const Tensor& index, const Tensor& src, std::string_view reduce,
                        bool include_self = true) const;
  // The elements where mask (bool, broadcast to this shape) is true, in order, as one axis. Without
  // a size the mask is realized and read to count them; with one the result stays lazy: the first
  // `size` of them, padded with fill_value (tinygrad's form, for JIT-captured code).
  Tensor masked_select(const Tensor& mask, std::optional<int64_t> size = {}, double fill_value = 0) const;
  // (n, ndim) int32 coordinates of the nonzero elements, in order; size and fill_value as masked_select's
  Tensor nonzero(std::optional<int64_t> size = {}, int64_t fill_value = 0) const;

  // ---- neural-network ops (all built from primitives, all differentiable)
  Tensor conv2d(const Tensor& weight, std::optional<Tensor> bias = {}, int stride = 1, int padding = 0,
                int dilation = 1, int groups = 1) const;  // NCHW/OIHW; also 1-D and 3-D (any spatial rank)
  Tensor conv_transpose2d(const Tensor& weight, std::optional<Tensor> bias = {}, int stride = 1, int padding = 0,
                          int dilation = 1, int groups = 1, int output_padding = 0) const;
  Tensor max_pool2d(int kernel = 2, std::optional<int> stride = {}, int padding = 0, int dilation = 1,
                    bool ceil_mode = false) const;
  Tensor avg_pool2d(int kernel = 2, std::optional<int> stride = {}, int padding = 0, int dilation = 1,
                    bool ceil_mode = false, bool count_include_pad = true) const;
  // Per spatial axis: one stride / dilation / kernel size per axis, (before, after) padding per axis
  // (negative crops). Empty stride, padding, dilation or output_padding mean 1, 0, 1, 0 everywhere,
  // a pool's empty stride its kernel. The pools take any number of spatial axes (kernel.size()).
  Tensor conv2d(const Tensor& weight, std::optional<Tensor> bias, const Shape& stride, const Pairs& padding = {},
                const Shape& dilation = {}, int groups = 1) const;
  Tensor conv_transpose2d(const Tensor& weight, std::optional<Tensor> bias, const Shape& stride,
                          const Pairs& padding = {}, const Shape& dilation = {}, int groups = 1,
                          const Shape& output_padding = {}) const;
  Tensor max_pool2d(const Shape& kernel, const Shape& stride = {}, const Pairs& padding = {}, const Shape& dilation = {},
                    bool ceil_mode = false) const;
  Tensor avg_pool2d(const Shape& kernel, const Shape& stride = {}, const Pairs& padding = {}, const Shape& dilation = {},
                    bool ceil_mode = false, bool count_include_pad = true) const;
  // max_pool2d and, per output, where its maximum is: an int32 index into the flattened spatial
  // axes of this (unpadded) tensor, the first among equal maxima, a NaN's if any (PyTorch's and
  // tinygrad's return_indices=True).
  std::pair<Tensor, Tensor> max_pool2d_with_indices(const Shape& kernel, const Shape& stride = {},
                                                    const Pairs& padding = {}, const Shape& dilation = {},
                                                    bool ceil_mode = false) const;
  // Inverse of max_pool2d_with_indices on (N, C, spatial...): each value placed at its index into
  // zeros of output_size's last spatial axes (default: the size such a pool came from).
  Tensor max_unpool2d(const Tensor& indices, const Shape& kernel, const Shape& stride = {}, const Pairs& padding = {},
                      const Shape& dilation = {}, const Shape& output_size = {}) const;
  // Resizes the last size.size() axes, as tinygrad's (PyTorch's index rules): "linear" (bi-, trilinear
  // over several axes), "nearest" or "nearest-exact"; align_corners only with "linear".
  Tensor interpolate(const Shape& size, std::string_view mode = "linear", bool align_corners = false) const;
  // Sliding windows over the last k.size() axes: (..., out...) + k (tinygrad's _pool)
  Tensor pool(const Shape& kernel, const Shape& stride, const Shape& dilation) const;
  Tensor batchnorm(const std::optional<Tensor>& weight, const std::optional<Tensor>& bias, const Tensor& mean,
                   const Tensor& invstd, std::vector<int> axes = {1}) const;  // axes: where the statistics live
  Tensor layernorm(std::vector<int> axes = {-1}, double eps = 1e-5) const;
  Tensor var(std::vector<int> axes = {}, bool keepdim = false, double correction = 1) const;
  Tensor std(std::vector<int> axes = {}, bool keepdim = false, double correction = 1) const;
  template <Axis I> Tensor var(I axis, bool keepdim = false, double correction = 1) const {
    return var(one_axis(axis), keepdim, correction);
  }
  template <Axis I> Tensor std(I axis, bool keepdim = false, double correction = 1) const {
    return std(one_axis(axis), keepdim, correction);
  }
  // (var, mean) and (std, mean), as torch.var_mean and torch.std_mean
  std::pair<Tensor, Tensor> var_mean(std::vector<int> axes = {}, bool keepdim = false, double correction = 1) const;
  std::pair<Tensor, Tensor> std_mean(std::vector<int> axes = {}, bool keepdim = false, double correction = 1) const;
  Tensor normalize(double p = 2, int dim = 1, double eps = 1e-12) const;  // this / max(p-norm along dim, eps)
  // `steps` iterations of G <- sum_i params[i] (G G^T)^i G on the last two axes, from this scaled to
  // Frobenius norm 1 (Muon's orthogonalization); a tall matrix goes through its transpose.
  Tensor newton_schulz(int steps, const std::vector<double>& params, double eps = 1e-7) const;
  Tensor dropout(double p = 0.5) const;  // only while Tensor::training
  Tensor gelu(std::string_view approximate = "tanh") const;  // "tanh" (tinygrad's default) or "none" (exact, erf)
  Tensor quick_gelu() const, silu() const, swish() const, relu6() const, hardswish() const,
      mish() const, erf() const, softplus(double beta = 1) const, elu(double alpha = 1) const,
      leaky_relu(double neg_slope = 0.01) const, hardtanh(double lo = -1, double hi = 1) const;
  Tensor hardsigmoid(double alpha = 1.0 / 6, double beta = 0.5) const, softsign() const, celu(double alpha = 1) const,
      selu(double alpha = 1.67326, double gamma = 1.0507) const, logsigmoid() const;
  Tensor scaled_dot_product_attention(const Tensor& key, const Tensor& value,
                                      std::optional<Tensor> attn_mask = {}, bool is_causal = false) const;

  // ---- losses (this: logits or probabilities), tinygrad's semantics; `reduction` as PyTorch's
  // (mean over the items that count: ignored labels are left out, weights divide)
  Tensor sparse_categorical_crossentropy(const Tensor& labels, int64_t ignore_index = -1, double label_smoothing = 0,
                                         Reduction reduction = Reduction::mean) const;
  Tensor cross_entropy(const Tensor& target, double label_smoothing = 0,
                       Reduction reduction = Reduction::mean) const;  // target: class indices or probabilities
  // this: log-probabilities; weight: one per class
  Tensor nll_loss(const Tensor& target, int64_t ignore_index = -100, Reduction reduction = Reduction::mean,
                  std::optional<Tensor> weight = {}) const;
  Tensor binary_crossentropy(const Tensor& target, Reduction reduction = Reduction::mean) const;  // this: probabilities
  Tensor binary_crossentropy_logits(const Tensor& target, Reduction reduction = Reduction::mean,
                                    std::optional<Tensor> pos_weight = {}) const;

  // ---- autograd
  static bool training;  // dropout and batch statistics on
  static bool no_grad;   // tensors made while set do not require gradients
  Tensor& requires_grad_(bool on = true);
  bool requires_grad() const;
  std::optional<Tensor> grad() const;  // accumulated by backward()
  Tensor& set_grad(std::optional<Tensor> grad);
  // d this / d every tensor in its graph that requires a gradient, added to their grad();
  // this must have one element unless `gradient` (d root / d this) is given.
  Tensor& backward(std::optional<Tensor> gradient = {});
  // d this / d each target, without touching grad(); this must have one element.
  std::vector<Tensor> gradient(const std::vector<Tensor>& targets) const;
  Tensor detach() const;  // the same values, no gradient flows back through it
  Tensor& assign(const Tensor& value);  // in-place update: same shape, dtype and device
  // A copy on `device` ("CPU", "CL", ...), made lazily (a copy step in schedule()); gradients flow
  // back to this tensor's device. Ops take inputs on one device: copy between them with to().
  Tensor to(const std::string& device) const;
  Tensor& to_(const std::string& device);  // in-place to(): this handle (and its grad) now live on `device`

  // ---- introspection: the kernels (and copies) realize() would run now, in order; the graph behind this tensor
  std::vector<ScheduleItem> schedule() const;
  UOpRef uop() const;

  // ---- internals used by composites (public for the Python bindings and nn)
  Tensor broadcast_to(const Shape& shape) const;
  std::pair<Tensor, Tensor> broadcast_with(const Tensor& o) const;  // same shape and dtype, promoted
  Tensor const_like(double value) const;  // scalar of this dtype broadcast to this shape
  Tensor reduce(Ops op, std::vector<int> axes, bool keepdim) const;
  // Negative axes count from the end; a bad axis throws an error that starts with `op`.
  int normalize_axis(int axis, std::string_view op) const;

 private:
  template <Axis I> static std::vector<int> one_axis(I axis) { return {static_cast<int>(axis)}; }
  Tensor alu(Ops op, std::initializer_list<Tensor> srcs = {}) const;  // elementwise primitive, same shapes
  Tensor bitwise(Ops op, const Tensor& o, const char* name) const;
  std::pair<Tensor, Tensor> floor_divmod(const Tensor& o, std::string_view op) const;  // (idiv, mod)
  void set_uop(UOpRef uop) const;
  friend class TensorRegistry;
  std::shared_ptr<TensorImpl> impl_;
};

// ---- arithmetic operators, with tensors or C++ scalars on either side
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator%(const Tensor& a, const Tensor& b);  // mod: the remainder takes the divisor's sign
Tensor operator-(const Tensor& a);
// Comparisons give bool tensors, as tinygrad's Python operators (a Tensor is not a bool: `if (a == b)` does not compile)
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);

// A C++ scalar becomes a constant of the tensor's dtype unless it is a floating scalar on an
// integer/bool tensor, which gives float32 (tinygrad's rule): `i * 3` stays int32, `i * 0.5` is float.
template <std::integral I>
Tensor Tensor::full(Shape shape, I value, DType dtype) {
  // a uint64 above 2^63 keeps its bits for integer dtypes and its value for floats
  if (std::is_unsigned_v<I> && dtype.is_float()) return full(std::move(shape), static_cast<double>(value), dtype);
  return full(std::move(shape), static_cast<int64_t>(value), dtype);
}

template <Scalar S>
Tensor scalar_like(const Tensor& t, S value) {
  DType dt = t.dtype();
  if (std::is_floating_point_v<S> && !dt.is_float()) dt = dtypes::default_float;
  return Tensor::full(t.shape(), value, dt);
}
template <Scalar S> Tensor Tensor::lt(S v) const { return lt(scalar_like(*this, v)); }
template <Scalar S> Tensor Tensor::gt(S v) const { return gt(scalar_like(*this, v)); }
template <Scalar S> Tensor Tensor::le(S v) const { return le(scalar_like(*this, v)); }
template <Scalar S> Tensor Tensor::ge(S v) const { return ge(scalar_like(*this, v)); }
template <Scalar S> Tensor Tensor::eq(S v) const { return eq(scalar_like(*this, v)); }
template <Scalar S> Tensor Tensor::ne(S v) const { return ne(scalar_like(*this, v)); }
template <Scalar S> Tensor Tensor::maximum(S v) const { return maximum(scalar_like(*this, v)); }
template <Scalar S> Tensor Tensor::minimum(S v) const { return minimum(scalar_like(*this, v)); }
template <Scalar S> Tensor Tensor::idiv(S v) const { return idiv(scalar_like(*this, v)); }
template <Scalar S> Tensor Tensor::mod(S v) const { return mod(scalar_like(*this, v)); }
template <Scalar S> Tensor Tensor::fmod(S v) const { return fmod(scalar_like(*this, v)); }
template <Scalar S> Tensor Tensor::copysign(S v) const { return copysign(scalar_like(*this, v)); }
template <Scalar S> Tensor Tensor::logaddexp(S v) const { return logaddexp(scalar_like(*this, v)); }
template <Scalar S> Tensor Tensor::where(const Tensor& t, S f) const { return where(t, scalar_like(t, f)); }
template <Scalar S> Tensor Tensor::where(S t, const Tensor& f) const { return where(scalar_like(f, t), f); }
template <Scalar A, Scalar B> Tensor Tensor::where(A t, B f) const {
  using C = std::common_type_t<A, B>;
  DType dt = std::is_floating_point_v<C> ? dtypes::default_float : std::is_same_v<C, bool> ? dtypes::bool_ : dtypes::default_int;
  return where(Tensor::full(shape(), t, dt), Tensor::full(shape(), f, dt));
}

template <Scalar S> Tensor operator+(const Tensor& a, S b) { return a + scalar_like(a, b); }
template <Scalar S> Tensor operator+(S a, const Tensor& b) { return scalar_like(b, a) + b; }
template <Scalar S> Tensor operator-(const Tensor& a, S b) { return a - scalar_like(a, b); }
template <Scalar S> Tensor operator-(S a, const Tensor& b) { return scalar_like(b, a) - b; }
template <Scalar S> Tensor operator*(const Tensor& a, S b) { return a * scalar_like(a, b); }
template <Scalar S> Tensor operator*(S a, const Tensor& b) { return scalar_like(b, a) * b; }
template <Scalar S> Tensor operator/(const Tensor& a, S b) { return a / scalar_like(a, b); }
template <Scalar S> Tensor operator/(S a, const Tensor& b) { return scalar_like(b, a) / b; }
template <Scalar S> Tensor operator%(const Tensor& a, S b) { return a % scalar_like(a, b); }
template <Scalar S> Tensor operator%(S a, const Tensor& b) { return scalar_like(b, a) % b; }
template <Scalar S> Tensor operator==(const Tensor& a, S b) { return a.eq(b); }
template <Scalar S> Tensor operator==(S a, const Tensor& b) { return b.eq(a); }
template <Scalar S> Tensor operator!=(const Tensor& a, S b) { return a.ne(b); }
template <Scalar S> Tensor operator!=(S a, const Tensor& b) { return b.ne(a); }
template <Scalar S> Tensor operator<(const Tensor& a, S b) { return a.lt(b); }
template <Scalar S> Tensor operator<(S a, const Tensor& b) { return b.gt(a); }
template <Scalar S> Tensor operator<=(const Tensor& a, S b) { return a.le(b); }
template <Scalar S> Tensor operator<=(S a, const Tensor& b) { return b.ge(a); }
template <Scalar S> Tensor operator>(const Tensor& a, S b) { return a.gt(b); }
template <Scalar S> Tensor operator>(S a, const Tensor& b) { return b.lt(a); }
template <Scalar S> Tensor operator>=(const Tensor& a, S b) { return a.ge(b); }
template <Scalar S> Tensor operator>=(S a, const Tensor& b) { return b.le(a); }

}  // namespace kiln
