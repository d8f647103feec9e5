// Cumulative scans along one axis: cumsum, cumprod, cummax, cummin, logcumsumexp. As tinygrad's
// _split_cumalu: an axis up to two blocks long is scanned by reducing, for each position, a window
// over everything before it (n^2 work); a longer one is cut into blocks of 256 scanned that way, the
// running totals of the blocks are scanned in turn (the same way, so any length works) and added
// back. Built from pad, pool and reductions, so every scan is differentiable.
#include <cmath>

#include "kiln/error.h"
#include "tensor/tensor_impl.h"

namespace kiln {
namespace {

enum class Scan { add, mul, max, logaddexp };

constexpr int64_t kBlock = 256;

// The value that leaves a scan unchanged: what the windows and blocks are padded with.
double identity(Scan op, DType dtype) {
  switch (op) {
    case Scan::add: return 0;
    case Scan::mul: return 1;
    case Scan::max: return dtype.is_float() ? -INFINITY : dtype.min_value();
    case Scan::logaddexp: return -INFINITY;
  }
  return 0;
}

// `x` padded by (before, after) along its last axis with the scan's identity.
Tensor pad_last(const Tensor& x, int64_t before, int64_t after, Scan op) {
  Pairs pads(static_cast<size_t>(x.ndim()), {0, 0});
  pads.back() = {before, after};
  return x.pad(pads, PadMode::constant, identity(op, x.dtype()));
}

// The scan of the last axis, each output reduced from a window of the n elements ending at it.
Tensor window_scan(const Tensor& x, Scan op) {
  const int64_t n = x.shape().back();
  Tensor windows = pad_last(x, n - 1, 0, op).pool({n}, {1}, {1});
  switch (op) {
    case Scan::add: return windows.sum({-1});
    case Scan::mul: return windows.prod({-1});
    case Scan::max: return windows.max({-1});
    case Scan::logaddexp: return windows.logsumexp(-1);
  }
  return windows;
}

// a op b, elementwise. log(e^a + e^b) is shifted by the larger (not by an infinite one: -inf - -inf
// is NaN where the answer is -inf).
Tensor combine(const Tensor& a, const Tensor& b, Scan op) {
  switch (op) {
    case Scan::add: return a + b;
    case Scan::mul: return a * b;
    case Scan::max: return a.maximum(b);
    case Scan::logaddexp: {
      Tensor m = a.maximum(b).detach();
      m = m.isinf().where(0.0, m);
      return ((a - m).exp() + (b - m).exp()).log() + m;
    }
  }
  return a;
}

// The inclusive scan of the last axis.
Tensor scan_last(const Tensor& x, Scan op) {
  const int64_t s = x.shape().back();
  if (s <= 2 * kBlock) return window_scan(x, op);
  const int64_t blocks = (s + kBlock - 1) / kBlock;
  Shape split = x.shape();
  split.back() = blocks;
  split.push_back(kBlock);
  // front padding, so the first block starts with identities and every block ends on data
  Tensor within = window_scan(pad_last(x, blocks * kBlock - s, 0, op).reshape(split), op);  // (..., blocks, 256)
  Pairs last(static_cast<size_t>(within.ndim()), {0, 0});
  for (size_t i = 0; i < last.size(); i++) last[i] = {0, within.shape()[i]};
  last.back() = {kBlock - 1, kBlock};
  // what the blocks before each one come to: the scan of the block totals, one block later
  Tensor totals = scan_last(within.shrink(last).squeeze(-1), op);  // (..., blocks)
  Tensor before = pad_last(totals, 1, -1, op).unsqueeze(-1).expand(within.shape());
  Shape flat = x.shape();
  flat.back() = blocks * kBlock;
  return pad_last(combine(within, before, op).reshape(flat), s - blocks * kBlock, 0, op);
}

// The scan of `t` along `axis`; `name` is the public op, for errors.
Tensor scan(const Tensor& t, int axis, Scan op, std::string_view name) {
  // A 0-d tensor is its own scan along its one implicit axis, 0 or -1 (PyTorch, tinygrad).
  if (implicit_axis(t, axis)) return t;
  const int a = t.normalize_axis(axis, name);
  if (t.shape()[a] == 0) return t;
  return scan_last(t.transpose(a, -1), op).transpose(a, -1);
}

// (running max of `x` along `axis`, the int32 index it came from: the last one among equals).
std::pair<Tensor, Tensor> running_max(const Tensor& x, int axis, std::string_view name) {
  Tensor values = scan(x, axis, Scan::max, name);
  if (x.ndim() == 0) return {values, Tensor::zeros({}, dtypes::int32)};
  const int a = x.normalize_axis(axis, name);
  // where x holds its running max a new max (or a tie) starts; the latest such position so far
  Shape along(static_cast<size_t>(x.ndim()), 1);
  along[static_cast<size_t>(a)] = x.shape()[a];
  Tensor position = Tensor::arange(0, static_cast<double>(x.shape()[a]), 1, dtypes::int32).reshape(along);
  Tensor starts = x.eq(values).where(position.expand(x.shape()), Tensor::full(x.shape(), -1, dtypes::int32));
  return {values, scan(starts, a, Scan::max, name)};
}

}  // namespace

Tensor Tensor::cumsum(int axis) const {
  // integers and bools add up in the dtype sum() uses (int8 in int32, as tinygrad and NumPy)
  return scan(cast(sum().dtype()), axis, Scan::add, "cumsum");
}

Tensor Tensor::cumprod(int axis) const { return scan(cast(prod().dtype()), axis, Scan::mul, "cumprod"); }

std::pair<Tensor, Tensor> Tensor::cummax(int axis) const { return running_max(*this, axis, "cummax"); }

std::pair<Tensor, Tensor> Tensor::cummin(int axis) const {
  auto [values, indices] = running_max(reverse_order(*this), axis, "cummin");
  return {reverse_order(values), indices};
}

Tensor Tensor::logcumsumexp(int axis) const {
  return scan(dtype().is_float() ? *this : cast(dtypes::default_float), axis, Scan::logaddexp, "logcumsumexp");
}

}  // namespace kiln
