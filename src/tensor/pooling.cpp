// Sliding-window ops: pooling and convolution are a windowed view (pool) followed by a reduction,
// as tinygrad builds them. The windows are movement ops only, so they cost index math, not copies.
#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <optional>
#include <unordered_set>

#include "kiln/error.h"
#include "schedule/schedule.h"
#include "tensor/custom_gradient.h"
#include "tensor/gradient.h"
#include "tensor/tensor_impl.h"
#include "tensor/winograd.h"

namespace kiln {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Pads (or, for negative amounts, crops) the last pads.size() axes, filling with `value`.
Tensor pad_spatial(const Tensor& x, const Pairs& pads, double value = 0) {
  Pairs all(x.shape().size() - pads.size(), {0, 0});
  all.insert(all.end(), pads.begin(), pads.end());
  return x.pad(all, PadMode::constant, value);
}

Shape spatial(const Shape& s, size_t k) { return Shape(s.end() - static_cast<int64_t>(k), s.end()); }

Pairs symmetric(int64_t p, size_t dims) { return Pairs(dims, {p, p}); }

// A per-axis argument: `fallback` on every axis when empty, else exactly one entry per spatial axis.
template <class T>
std::vector<T> per_axis(const std::vector<T>& given, size_t nk, T fallback, const char* op, const char* what) {
  if (given.empty()) return std::vector<T>(nk, fallback);
  if (given.size() != nk)
    throw_error(op, ": expected ", what, " for each of the ", nk, " spatial axes, got ", given.size(), " values");
  return given;
}

// Extra padding after each axis so the last window that starts inside the input is kept.
Pairs ceil_mode_pads(const Shape& in, const Pairs& pads, const Shape& k, const Shape& s, const Shape& d) {
  Pairs out = pads;
  for (size_t i = 0; i < k.size(); i++) {
    auto [b, a] = pads[i];
    int64_t span = d[i] * (k[i] - 1) + 1;
    int64_t o = ceil_div(in[i] + b + a - span, s[i]) + 1;
    out[i].second += s[i] * (o - 1) + span - (in[i] + b + a) - std::max<int64_t>(s[i] * (o - 1) - (b + in[i] - 1), 0);
  }
  return out;
}

// Windows of kernel k, stride s and dilation d fit the last k.size() axes of `shape` (the input as
// padded); errors name `op`, the user's call.
void check_windows(const Shape& shape, const Shape& k, const Shape& s, const Shape& d, std::string_view op) {
  const size_t nk = k.size();
  if (shape.size() < nk) throw_error(op, ": cannot take ", nk, "-d windows of shape ", shape_to_string(shape));
  for (size_t i = 0; i < nk; i++) {
    if (k[i] < 1 || s[i] < 1 || d[i] < 1)
      throw_error(op, ": kernel, stride and dilation must be >= 1, got ", k[i], ", ", s[i], ", ", d[i]);
    const int64_t in = shape[shape.size() - nk + i];
    if (d[i] * (k[i] - 1) + 1 > in)
      throw_error(op, ": window ", k[i], " (dilation ", d[i], ") is larger than the input's ", in, " along axis ",
                  shape.size() - nk + i, " of ", shape_to_string(shape), " (padding included)");
  }
}

Shape padded_shape(const Shape& shape, const Pairs& pads) {
  Shape r = shape;
  for (size_t i = 0; i < pads.size(); i++) r[r.size() - pads.size() + i] += pads[i].first + pads[i].second;
  return r;
}

// The one-size forms follow PyTorch, which has no cropping: negative padding is an error there, and
// a pool's padding is at most half its kernel.
void check_padding(int padding, const char* op, std::optional<int> pool_kernel = {}) {
  if (padding < 0)
    throw_error(op, ": padding must be >= 0, got ", padding, " (the per-axis (before, after) form crops)");
  if (pool_kernel && padding > *pool_kernel / 2)
    throw_error(op, ": padding ", padding, " is more than half the kernel size ", *pool_kernel, " (at most ",
                *pool_kernel / 2, ")");
}

}  // namespace

Tensor Tensor::pool(const Shape& k, const Shape& s, const Shape& d) const {
  check_windows(shape(), k, s, d, "pool");
  const size_t nk = k.size(), lead = shape().size() - nk;
  Shape in = spatial(shape(), nk), o(nk);
  for (size_t i = 0; i < nk; i++) o[i] = ceil_div(in[i] - d[i] * (k[i] - 1), s[i]);
  Shape noop(shape().begin(), shape().begin() + static_cast<int64_t>(lead));
  auto with_lead = [&](const Shape& tail) {
    Shape r = noop;
    r.insert(r.end(), tail.begin(), tail.end());
    return r;
  };
  auto bounds = [&](const Pairs& tail) {
    Pairs r;
    for (int64_t n : noop) r.push_back({0, n});
    r.insert(r.end(), tail.begin(), tail.end());
    return r;
  };
  std::vector<int> order;
  for (size_t i = 0; i < lead; i++) order.push_back(static_cast<int>(i));
  bool overlapping = false;
  for (size_t i = 0; i < nk; i++) overlapping |= k[i] > s[i] || d[i] != 1;
  if (!overlapping) {  // windows tile the input: pad to o*s, split each axis into (o, s), keep k
    Pairs grow, cut;
    Shape split;
    for (size_t i = 0; i < nk; i++) {
      grow.push_back({0, std::max<int64_t>(0, o[i] * s[i] - in[i])});
      cut.push_back({0, o[i] * s[i]});
    }
    Tensor x = pad_spatial(*this, grow).shrink(bounds(cut));
    for (size_t i = 0; i < nk; i++) split.insert(split.end(), {o[i], s[i]});
    Pairs keep;
    for (size_t i = 0; i < nk; i++) keep.insert(keep.end(), {{0, o[i]}, {0, k[i]}});
    x = x.reshape(with_lead(split)).shrink(bounds(keep));
    for (size_t i = 0; i < nk; i++) order.push_back(static_cast<int>(lead + 2 * i));
    for (size_t i = 0; i < nk; i++) order.push_back(static_cast<int>(lead + 2 * i + 1));
    return x.permute(order);
  }
  // Overlapping windows: repeat each axis k times and pad the repeats by k dilations, so that read
  // in rows of one period (the padded input plus one dilation) row kk starts kk dilations further
  // in; then cut strides out of each row. The front padding F (whole strides, at least the k-1
  // dilations the rows drift) keeps every index inside one period both ways: the forward reads
  // x[F + o*s + kk*d], and the backward's window index is just the repeat number, with no division
  // left after simplification.
  Shape front(nk), padded(nk), period(nk), rep(lead, 1);
  Pairs grow, row_pad(lead, {0, 0});
  for (size_t i = 0; i < nk; i++) {
    const int64_t span = d[i] * (k[i] - 1);
    const int64_t end_pad = o[i] * s[i] - (in[i] - span);  // so the strides divide the length exactly
    front[i] = ceil_div(span, s[i]) * s[i];
    padded[i] = in[i] + front[i] + end_pad;
    period[i] = padded[i] + d[i];
    grow.push_back({front[i], end_pad});
    rep.push_back(k[i]);
    row_pad.push_back({0, k[i] * d[i]});
  }
  Tensor x = pad_spatial(*this, grow).repeat(rep).pad(row_pad);
  Pairs cut2, cut3;
  Shape shape1, shape2, shape3;
  for (size_t i = 0; i < nk; i++) {
    const int64_t strides = (padded[i] - d[i] * (k[i] - 1)) / s[i];  // window starts in the padded input
    shape1.insert(shape1.end(), {k[i], period[i]});
    cut2.insert(cut2.end(), {{0, k[i]}, {0, strides * s[i]}});
    shape2.insert(shape2.end(), {k[i], strides, s[i]});
    cut3.insert(cut3.end(), {{0, k[i]}, {front[i] / s[i], front[i] / s[i] + o[i]}, {0, 1}});
    shape3.insert(shape3.end(), {k[i], o[i]});
  }
  x = x.reshape(with_lead(shape1));
  x = x.shrink(bounds(cut2)).reshape(with_lead(shape2));
  x = x.shrink(bounds(cut3)).reshape(with_lead(shape3));
  for (size_t i = 0; i < nk; i++) order.push_back(static_cast<int>(lead + 2 * i + 1));
  for (size_t i = 0; i < nk; i++) order.push_back(static_cast<int>(lead + 2 * i));
  return x.permute(order);
}

namespace {

// Zeros between the elements of each spatial axis, n -> (n-1)*s+1: a transposed convolution's input.
Tensor dilate_spatial(const Tensor& x, const Shape& stride) {
  const size_t nk = stride.size();
  if (std::all_of(stride.begin(), stride.end(), [](int64_t s) { return s == 1; })) return x;
  // (n) -> (n, 1) -> pad (n, s) -> (n*s) -> cut the last s-1
  const size_t lead = x.shape().size() - nk;
  Shape s1(x.shape().begin(), x.shape().begin() + static_cast<int64_t>(lead)), s2 = s1;
  Pairs pads(lead, {0, 0}), cut;
  for (size_t i = 0; i < nk; i++) {
    int64_t n = x.shape()[lead + i];
    s1.insert(s1.end(), {n, 1});
    pads.insert(pads.end(), {{0, 0}, {0, stride[i] - 1}});
    s2.push_back(n * stride[i]);
  }
  Tensor d = x.reshape(s1).pad(pads).reshape(s2);
  for (size_t i = 0; i < d.shape().size(); i++)
    cut.push_back({0, i < lead ? d.shape()[i] : d.shape()[i] - (stride[i - lead] - 1)});
  return d.shrink(cut);
}

// A transposed convolution's weight (cin, cout/groups, k...) as the weight of the equivalent
// convolution: (cout, cin/groups, k...), windows flipped.
Tensor transposed_weight(const Tensor& weight, int64_t groups) {
  const size_t nk = static_cast<size_t>(weight.ndim() - 2);
  const int64_t cin = weight.shape()[0], rcout = weight.shape()[1];
  Shape wshape{groups, cin / groups, rcout};
  Shape k = spatial(weight.shape(), nk);
  wshape.insert(wshape.end(), k.begin(), k.end());
  std::vector<int> flip_axes;
  for (size_t i = 0; i < nk; i++) flip_axes.push_back(static_cast<int>(3 + i));
  return weight.reshape(wshape).transpose(1, 2).flip(flip_axes).flatten(0, 1);
}

// Channels from which a convolution (output channels) or its weight gradient (input channels) is
// a matmul over channels-last copies: enough to fill a vector register. (A first layer's 1 or 3
// input channels keep the derived gradient.)
constexpr int64_t kMinChannelsForChannelsLast = 16;

// Axis orders moving the channels (axis 1) of an (N, C, spatial...) tensor last, and back.
std::vector<int> channels_last(size_t nk) {
  std::vector<int> order{0};
  for (size_t i = 0; i < nk; i++) order.push_back(static_cast<int>(2 + i));
  order.push_back(1);
  return order;
}

std::vector<int> channels_first(size_t nk) {
  std::vector<int> order{0, static_cast<int>(nk) + 1};
  for (size_t i = 0; i < nk; i++) order.push_back(static_cast<int>(1 + i));
  return order;
}

// Convolution of an already padded input: windows (pool) times the weight, summed, in the NCHW
// layout (the output rows are the SIMD vector axis).
Tensor conv_windows(const Tensor& xp, const Tensor& w, const Shape& stride, const Shape& dilation, int64_t groups) {
  const int64_t bs = xp.shape()[0], cout = w.shape()[0], cin = w.shape()[1];
  const size_t nk = static_cast<size_t>(w.ndim() - 2);
  Shape k = spatial(w.shape(), nk);
  Tensor x = xp.pool(k, stride, dilation);  // (bs, cin_total, out..., k...)
  const int64_t rcout = cout / groups;
  Shape oyx(x.shape().begin() + 2, x.shape().begin() + 2 + static_cast<int64_t>(nk));
  // (bs, groups, cin, 1, out..., k...) -> expand rcout -> (bs, groups, rcout, out..., cin, k...)
  Shape s1{bs, groups, cin, 1}, s2{bs, groups, cin, rcout};
  for (int64_t v : oyx) s1.push_back(v), s2.push_back(v);
  for (int64_t v : k) s1.push_back(v), s2.push_back(v);
  std::vector<int> order{0, 1, 3};
  for (size_t i = 0; i < nk; i++) order.push_back(static_cast<int>(4 + i));
  order.push_back(2);
  for (size_t i = 0; i < nk; i++) order.push_back(static_cast<int>(4 + nk + i));
  x = x.reshape(s1).expand(s2).permute(order);
  Shape ws{1, groups, rcout};
  for (size_t i = 0; i < nk; i++) ws.push_back(1);
  ws.push_back(cin);
  for (int64_t v : k) ws.push_back(v);
  std::vector<int> axes;
  for (size_t i = 0; i <= nk; i++) axes.push_back(-1 - static_cast<int>(i));
  Shape out{bs, cout};
  out.insert(out.end(), oyx.begin(), oyx.end());
  return (x * w.reshape(ws)).sum(axes).reshape(out);
}

// An ungrouped convolution of an already padded input as a matmul over channels-last copies:
// out[n, o..., co] = sum over (k..., ci) of x[n, o*s + k*d..., ci] * w[k..., ci, co]. The weight's
// loads and the store move along co (the vector axis), the input's along nothing the tile varies
// in co (broadcast), so pixels x channels form a register tile as in a matmul. A 3x3 conv of 64
// channels on 8x8 inputs (6-wide output rows) beats conv_windows, copies included.
Tensor conv_channels_last(const Tensor& xp, const Tensor& w, const Shape& stride, const Shape& dilation) {
  const size_t nk = static_cast<size_t>(w.ndim() - 2);
  const int64_t bs = xp.shape()[0], cout = w.shape()[0], cin = w.shape()[1];
  const Shape k = spatial(w.shape(), nk);
  // (n, ci, o..., k...) windows of a channels-last copy -> (n, o..., 1, k..., ci)
  Tensor windows = xp.permute(channels_last(nk)).contiguous().permute(channels_first(nk)).pool(k, stride, dilation);
  std::vector<int> order{0};
  for (size_t i = 0; i < 2 * nk; i++) order.push_back(static_cast<int>(2 + i));
  order.push_back(1);
  Shape xs{bs}, ws{1}, out{bs};
  for (size_t i = 0; i < nk; i++) xs.push_back(windows.shape()[2 + i]), ws.push_back(1), out.push_back(windows.shape()[2 + i]);
  xs.push_back(1), ws.push_back(cout), out.push_back(cout);
  for (int64_t v : k) xs.push_back(v), ws.push_back(v);
  xs.push_back(cin), ws.push_back(cin);
  // the weight stored (k..., ci, co), read as (co, k..., ci)
  std::vector<int> w_store, w_read{static_cast<int>(nk) + 1};
  for (size_t i = 0; i < nk; i++) w_store.push_back(static_cast<int>(2 + i));
  w_store.insert(w_store.end(), {1, 0});
  for (size_t i = 0; i <= nk; i++) w_read.push_back(static_cast<int>(i));
  Tensor wc = w.permute(w_store).contiguous().permute(w_read);
  std::vector<int> axes;
  for (size_t i = 0; i <= nk; i++) axes.push_back(-1 - static_cast<int>(i));
  return (windows.permute(order).reshape(xs) * wc.reshape(ws)).sum(axes).reshape(out).contiguous().permute(channels_first(nk));
}

// Whether conv_core(xp, w) runs as a matmul over channels-last copies (else in the NCHW layout), the
// same on every device. Output rows narrower than kConvMinRowForChannelsFirst fill no vector in the
// NCHW layout: such convs vectorize along the output channels instead, as the MNIST CNN's 3x3 convs
// on 8- and 10-wide rows do. Wider rows with 16 or more input channels too: there the layout that
// pays depends on the device's registers, and the scheduler turns the conv back into the NCHW form
// where that one does (schedule/conv_layout.cpp).
bool runs_channels_last(const Tensor& xp, const Tensor& w, const Shape& stride, const Shape& dilation, int64_t groups) {
  const size_t nk = static_cast<size_t>(w.ndim() - 2);
  const int64_t last_row = (xp.shape().back() - dilation[nk - 1] * (w.shape().back() - 1) - 1) / stride[nk - 1] + 1;
  const bool deep = w.shape()[1] >= kMinChannelsForChannelsLast;  // a first layer's 1-3 channels fill no vector
  return groups == 1 && w.shape()[0] >= kMinChannelsForChannelsLast &&
         (last_row < schedule::kConvMinRowForChannelsFirst || deep);
}

// How conv_core computes a convolution of an already padded input.
enum class ConvForm {
  windows,        // in the NCHW layout (conv_windows)
  channels_last,  // a matmul over channels-last copies (conv_channels_last)
  winograd,       // F(4x4, 5x5) over channels-last tiles (winograd::conv)
};

ConvForm conv_form(const Tensor& xp, const Tensor& w, const Shape& stride, const Shape& dilation, int64_t groups) {
  if (winograd::applies(xp, w, stride, dilation, groups)) return ConvForm::winograd;
  if (runs_channels_last(xp, w, stride, dilation, groups)) return ConvForm::channels_last;
  return ConvForm::windows;
}

// x (N, C, spatial...) stored channels-last, read as NCHW and zero-padded by `pads` as a view.
Tensor channels_last_padded(const Tensor& x, const Pairs& pads) {
  const size_t nk = pads.size();
  return pad_spatial(x.permute(channels_last(nk)).contiguous().permute(channels_first(nk)), pads);
}

// `x` zero-padded by `pads` (some nonzero) as conv_core's input. For the NCHW form stored padded,
// so its conv reads the border without bounds checks. For the channels-last forms a channels-last
// copy of x, padded as a view: their reads of it then move whole channel vectors under a border
// gate, where copying a padded NCHW input transposes under that gate, one scalar at a time.
Tensor padded_input(const Tensor& x, const Pairs& pads, ConvForm form) {
  if (form == ConvForm::windows) return pad_spatial(x, pads).contiguous();
  return channels_last_padded(x, pads);
}

// Convolution of an already padded input, in the layout its vectors fill better.
Tensor conv_core(const Tensor& xp, const Tensor& w, const Shape& stride, const Shape& dilation, int64_t groups) {
  switch (conv_form(xp, w, stride, dilation, groups)) {
    case ConvForm::winograd: return winograd::conv(xp, w);
    case ConvForm::channels_last: return conv_channels_last(xp, w, stride, dilation);
    case ConvForm::windows: break;
  }
  return conv_windows(xp, w, stride, dilation, groups);
}

// The weight gradient of an ungrouped conv_core(x, w) for output gradient g, as a matmul per
// kernel position: dW[co, k..., ci] = sum over (n, o...) of g[n, co, o...] * x[n, ci, o*s + k*d...],
// computed from channels-last copies of x and g. Both loads then move along ci (and co)
// contiguously and the store along ci, so ci becomes the SIMD vector axis and co the register
// tile's other side, as in a matmul. Read in the NCHW layout, the only contiguous axes are the
// small spatial ones (6 wide for a 3x3 conv on 8x8 inputs: 4- and 2-lane vectors).
Tensor conv_weight_gradient(const Tensor& x, const Tensor& g, const Shape& kernel, const Shape& stride,
                            const Shape& dilation) {
  const size_t nk = kernel.size();
  const int64_t bs = x.shape()[0], cin = x.shape()[1], cout = g.shape()[1];
  Tensor windows = x.permute(channels_last(nk)).contiguous().permute(channels_first(nk)).pool(kernel, stride, dilation);
  Tensor grad = g.permute(channels_last(nk)).contiguous().permute(channels_first(nk));
  // (n, co, ci, o..., k...) -> (n, o..., co, k..., ci), summed over n and o..., stored in that
  // order (contiguous: the store moves along ci, and co, outermost, splits evenly between threads);
  // the weight's (co, ci, k...) is a view of it
  Shape gs{bs, cout, 1}, ws{bs, 1, cin};
  for (size_t i = 0; i < nk; i++) gs.push_back(grad.shape()[2 + i]), ws.push_back(grad.shape()[2 + i]);
  for (size_t i = 0; i < nk; i++) gs.push_back(1), ws.push_back(kernel[i]);
  std::vector<int> order{0}, reduced{0};
  for (size_t i = 0; i < nk; i++) order.push_back(static_cast<int>(3 + i)), reduced.push_back(static_cast<int>(1 + i));
  order.push_back(1);
  for (size_t i = 0; i < nk; i++) order.push_back(static_cast<int>(3 + nk + i));
  order.push_back(2);
  return (grad.reshape(gs) * windows.reshape(ws)).permute(order).sum(reduced).contiguous().permute(channels_first(nk));
}

// The gradient of conv_core(xp, w). In the Winograd form, both from the output gradient's tiles
// (winograd.h). Else for xp, the transposed convolution of the output gradient,
// run as a plain convolution over that gradient dilated by the stride and padded explicitly into
// a buffer, so its inner loop reads without bounds checks and vectorizes like the forward pass
// (the sliding window's derived gradient sums gated reads instead); for w, with 16 or more input
// channels a matmul over channels-last copies (conv_weight_gradient), else the derived gradient.
Tensor with_conv_gradient(const Tensor& r, const Tensor& xp, const Tensor& w, const Shape& stride,
                          const Shape& dilation, int64_t groups) {
  UOpRef xp_node = xp.uop(), w_node = w.uop();
  auto backward = [=](const Tensor& g, const std::vector<bool>& wanted) {
    Tensor x(xp_node), weight(w_node);
    const size_t nk = stride.size();
    std::vector<std::optional<Tensor>> grads(2);
    const bool winograd_form = conv_form(x, weight, stride, dilation, groups) == ConvForm::winograd;
    if (wanted[0] && winograd_form) {
      grads[0] = winograd::input_gradient(x, weight, g);
    } else if (wanted[0]) {
      Pairs pads;
      for (size_t i = 0; i < nk; i++) {
        int64_t span = dilation[i] * (weight.shape()[2 + i] - 1), o = g.shape()[2 + i];
        int64_t unread = x.shape()[2 + i] - ((o - 1) * stride[i] + 1 + span);  // input the windows never reach
        pads.push_back({span, span + unread});
      }
      // stored padded (a gated border would keep the NCHW kernel's rows scalar), unless the
      // channels-last form's copy pads it anyway (a copy of g channels-last first, as the forward
      // pass does, held it alive beside the weight gradient's: +39 MB at the MNIST step's peak)
      // (The Winograd form reads g channels-last: the weight gradient's copy of g, the same node.)
      Tensor gp = pad_spatial(dilate_spatial(g, stride), pads);
      const Tensor wt = transposed_weight(weight, groups);
      const ConvForm form = conv_form(gp, wt, Shape(nk, 1), dilation, groups);
      if (form == ConvForm::windows) gp = gp.contiguous();
      if (form == ConvForm::winograd) gp = channels_last_padded(dilate_spatial(g, stride), pads);
      grads[0] = conv_core(gp, wt, Shape(nk, 1), dilation, groups);
    }
    if (wanted[1] && winograd_form) {
      grads[1] = winograd::weight_gradient(x, g);
    } else if (wanted[1] && groups == 1 && weight.shape()[1] >= kMinChannelsForChannelsLast) {
      grads[1] = conv_weight_gradient(x.detach(), g, spatial(weight.shape(), nk), stride, dilation);
    } else if (wanted[1]) {
      Tensor r_of_w = conv_core(x.detach(), weight, stride, dilation, groups);
      grads[1] = autograd::compute_gradient(r_of_w, g, {w_node.get()}).at(w_node.get());
    }
    return grads;
  };
  return autograd::set_custom_gradient(r, {xp, w}, backward);
}

// Convolution with per-axis strides, dilations and (possibly negative, asymmetric) padding.
Tensor conv(const Tensor& x_in, const Tensor& w, const std::optional<Tensor>& bias, const Shape& stride,
            const Shape& dilation, const Pairs& padding, int64_t groups, const char* op) {
  if (x_in.ndim() < 3 || w.ndim() != x_in.ndim())
    throw_error(op, ": expected input (N, C, spatial...) and weight (O, C/groups, kernel...) of equal rank, got ",
                shape_to_string(x_in.shape()), " and ", shape_to_string(w.shape()));
  const int64_t cin_total = x_in.shape()[1], cout = w.shape()[0], cin = w.shape()[1];
  if (groups < 1 || cin * groups != cin_total || cout % groups != 0)
    throw_error(op, ": input ", shape_to_string(x_in.shape()), " has ", cin_total, " channels but weight ",
                shape_to_string(w.shape()), " with groups=", groups, " expects ", cin * groups,
                " (and out channels divisible by groups)");
  const size_t nk = static_cast<size_t>(w.ndim() - 2);
  check_windows(padded_shape(x_in.shape(), padding), spatial(w.shape(), nk), stride, dilation, op);
  const bool padded = std::any_of(padding.begin(), padding.end(), [](auto p) { return p.first > 0 || p.second > 0; });
  Tensor xp = pad_spatial(x_in, padding);
  const ConvForm form = conv_form(xp, w, stride, dilation, groups);
  if (padded || form == ConvForm::winograd) xp = padded_input(x_in, padding, form);
  Tensor r = conv_core(xp, w, stride, dilation, groups);
  if (!Tensor::no_grad) r = with_conv_gradient(r, xp, w, stride, dilation, groups);
  if (!bias) return r;
  if (bias->shape() != Shape{cout})
    throw_error(op, ": expected a bias of shape (", cout, "), got ", shape_to_string(bias->shape()));
  Shape bs_shape{1, cout};
  bs_shape.insert(bs_shape.end(), nk, 1);
  return r + bias->reshape(bs_shape);
}

}  // namespace

Tensor Tensor::conv2d(const Tensor& weight, std::optional<Tensor> bias, int stride, int padding, int dilation,
                      int groups) const {
  check_padding(padding, "conv2d");
  const size_t nk = weight.ndim() >= 2 ? static_cast<size_t>(weight.ndim() - 2) : 0;
  return conv2d(weight, bias, Shape(nk, stride), symmetric(padding, nk), Shape(nk, dilation), groups);
}

Tensor Tensor::conv2d(const Tensor& weight, std::optional<Tensor> bias, const Shape& stride, const Pairs& padding,
                      const Shape& dilation, int groups) const {
  const size_t nk = weight.ndim() >= 2 ? static_cast<size_t>(weight.ndim() - 2) : 0;
  return conv(*this, weight, bias, per_axis(stride, nk, int64_t{1}, "conv2d", "a stride"),
              per_axis(dilation, nk, int64_t{1}, "conv2d", "a dilation"),
              per_axis(padding, nk, {int64_t{0}, int64_t{0}}, "conv2d", "(before, after) padding"), groups, "conv2d");
}

Tensor Tensor::conv_transpose2d(const Tensor& weight, std::optional<Tensor> bias, int stride, int padding,
                                int dilation, int groups, int output_padding) const {
  check_padding(padding, "conv_transpose2d");
  const size_t nk = weight.ndim() >= 2 ? static_cast<size_t>(weight.ndim() - 2) : 0;
  return conv_transpose2d(weight, bias, Shape(nk, stride), symmetric(padding, nk), Shape(nk, dilation), groups,
                          Shape(nk, output_padding));
}

Tensor Tensor::conv_transpose2d(const Tensor& weight, std::optional<Tensor> bias, const Shape& stride,
                                const Pairs& padding, const Shape& dilation, int groups,
                                const Shape& output_padding) const {
  if (weight.ndim() < 3 || weight.ndim() != ndim())
    throw_error("conv_transpose2d: expected input and weight of equal rank >= 3, got ", shape_to_string(shape()),
                " and ", shape_to_string(weight.shape()));
  const size_t nk = static_cast<size_t>(weight.ndim() - 2);
  const int64_t cin = weight.shape()[0];
  if (groups < 1 || cin % groups != 0 || shape()[1] != cin)
    throw_error("conv_transpose2d: input ", shape_to_string(shape()), " and weight ", shape_to_string(weight.shape()),
                " disagree on input channels (groups=", groups, ")");
  const char* op = "conv_transpose2d";
  Shape s = per_axis(stride, nk, int64_t{1}, op, "a stride"), d = per_axis(dilation, nk, int64_t{1}, op, "a dilation");
  Shape out_pad = per_axis(output_padding, nk, int64_t{0}, op, "an output_padding");
  Pairs p = per_axis(padding, nk, {int64_t{0}, int64_t{0}}, op, "(before, after) padding");
  Shape k = spatial(weight.shape(), nk);
  Tensor x = dilate_spatial(*this, s);
  Pairs pads;
  for (size_t i = 0; i < nk; i++)
    pads.push_back({(k[i] - 1) * d[i] - p[i].first, (k[i] - 1) * d[i] - p[i].second + out_pad[i]});
  return conv(x, transposed_weight(weight, groups), bias, Shape(nk, 1), d, pads, groups, op);
}

namespace {

// A pool's window arguments, resolved per spatial axis (the last kernel.size() axes of `x`).
struct Window {
  Shape k, s, d;
  Pairs pads;
  Window(const Tensor& x, const Shape& kernel, const Shape& stride, const Pairs& padding, const Shape& dilation,
         const char* op)
      : k(kernel),
        s(per_axis(stride, kernel.size(), int64_t{0}, op, "a stride")),
        d(per_axis(dilation, kernel.size(), int64_t{1}, op, "a dilation")),
        pads(per_axis(padding, kernel.size(), {int64_t{0}, int64_t{0}}, op, "(before, after) padding")) {
    if (kernel.empty() || kernel.size() > static_cast<size_t>(x.ndim()))
      throw_error(op, ": expected 1 to ", x.ndim(), " kernel sizes for input ", shape_to_string(x.shape()), ", got ",
                  kernel.size());
    if (stride.empty()) s = k;
    check_windows(padded_shape(x.shape(), pads), k, s, d, op);
    check_windows_see_input(spatial(x.shape(), k.size()), op);
  }
  // A window over padding only would give -inf (max) or 0 / 0 (an average): PyTorch has none (its
  // padding is at most half the kernel, and ceil mode's extra windows start inside the input).
  void check_windows_see_input(const Shape& in, const char* op) const {
    for (size_t i = 0; i < k.size(); i++) {
      const int64_t span = d[i] * (k[i] - 1) + 1, n = ceil_div(in[i] + pads[i].first + pads[i].second - span + 1, s[i]);
      for (int64_t j = 0; j < n; j++) {
        const int64_t start = j * s[i] - pads[i].first, first = std::max<int64_t>(0, ceil_div(-start, d[i]));
        if (first >= k[i] || start + first * d[i] >= in[i])
          throw_error(op, ": window ", j, " along spatial axis ", i, " covers padding only (kernel ", k[i], ", dilation ",
                      d[i], ", stride ", s[i], ", padding (", pads[i].first, ", ", pads[i].second, "))");
      }
    }
  }
  std::vector<int> axes() const {
    std::vector<int> r;
    for (size_t i = 0; i < k.size(); i++) r.push_back(-1 - static_cast<int>(i));
    return r;
  }
};

// Whether x is elementwise over channels-last buffers viewed channels-first (a channels-last
// convolution's output and what BatchNorm and ReLU make of it), per-channel values and constants
// aside: a kernel reading it moves along memory when its channels vary fastest.
bool reads_channels_last(const Tensor& x) {
  if (x.ndim() <= 2) return false;
  Shape viewed_channels_first;
  for (int a : channels_first(static_cast<size_t>(x.ndim() - 2))) viewed_channels_first.push_back(a);
  std::unordered_set<const UOp*> seen;
  bool found = false;
  std::function<bool(const UOpRef&)> elementwise_over = [&](const UOpRef& ref) {
    const UOp* u = ref.get();
    if (!seen.insert(u).second || u->op == Ops::CONST || u->op == Ops::EXPAND) return true;  // EXPAND: a broadcast
    if (prod(u->shape_or_throw()) < x.numel()) return true;  // the same: a per-channel value, a statistic
    if (u->op == Ops::PERMUTE) {
      const Ops base = u->src[0]->op;
      const bool channels_last_buffer = u->arg_as<Shape>() == viewed_channels_first && (base == Ops::CONTIGUOUS || base == Ops::BUFFER);
      found |= channels_last_buffer;
      return channels_last_buffer;
    }
    // (an identity reshape marks a custom gradient's output, as BatchNorm's)
    const bool same = u->op == Ops::DETACH || (u->op == Ops::RESHAPE && u->src[0]->shape_or_throw() == u->shape_or_throw());
    if (!group::Elementwise.has(u->op) && !same) return false;
    return std::all_of(u->src.begin(), u->src.end(), elementwise_over);
  };
  return elementwise_over(x.uop()) && found;
}

}  // namespace

Tensor Tensor::max_pool2d(int kernel, std::optional<int> stride, int padding, int dilation, bool ceil_mode) const {
  check_padding(padding, "max_pool2d", kernel);
  return max_pool2d(Shape(2, kernel), Shape(2, stride.value_or(kernel)), symmetric(padding, 2), Shape(2, dilation),
                    ceil_mode);
}

Tensor Tensor::max_pool2d(const Shape& kernel, const Shape& stride, const Pairs& padding, const Shape& dilation,
                          bool ceil_mode) const {
  Window w(*this, kernel, stride, padding, dilation, "max_pool2d");
  Pairs pads = ceil_mode ? ceil_mode_pads(spatial(shape(), w.k.size()), w.pads, w.k, w.s, w.d) : w.pads;
  Tensor windows = pad_spatial(*this, pads, dtype().is_float() ? -INFINITY : dtype().min_value()).pool(w.k, w.s, w.d);
  // Over channels-last data (a channels-last convolution's output) the max is taken channels-last
  // and stored so (a view of it is the NCHW result): its reads and stores move along channel
  // vectors, and so do the backward pass's reads of it and the next convolution's channels-last
  // copy, which becomes a view. In NCHW the pool gathered a scalar per channel plane, and so did its
  // backward (the MNIST CNN's max-pool kernels and their gradients).
  if (reads_channels_last(*this)) {
    const size_t nk = w.k.size();
    std::vector<int> order = channels_last(nk);  // (N, o..., C, k...)
    for (size_t i = 0; i < nk; i++) order.push_back(static_cast<int>(2 + nk + i));
    return windows.permute(order).max(w.axes()).permute(channels_first(nk));
  }
  return windows.max(w.axes());
}

std::pair<Tensor, Tensor> Tensor::max_pool2d_with_indices(const Shape& kernel, const Shape& stride, const Pairs& padding,
                                                          const Shape& dilation, bool ceil_mode) const {
  Window w(*this, kernel, stride, padding, dilation, "max_pool2d");
  Pairs pads = ceil_mode ? ceil_mode_pads(spatial(shape(), w.k.size()), w.pads, w.k, w.s, w.d) : w.pads;
  Tensor windows = pad_spatial(*this, pads, dtype().is_float() ? -INFINITY : dtype().min_value()).pool(w.k, w.s, w.d);
  Tensor values = windows.max(w.axes());
  // Positions counted down (n..1, padding 0): the largest position among a window's maxima is the
  // first of them, and n minus it is its index.
  const Shape sp = spatial(shape(), w.k.size());
  const int64_t n = kiln::prod(sp);
  auto window_positions = [&](double first, double step) {
    Tensor positions = Tensor::arange(first, first + step * static_cast<double>(n), step, dtypes::int32).reshape(sp);
    return pad_spatial(positions, pads).pool(w.k, w.s, w.d);
  };
  Tensor first_max = windows.eq(windows.max(w.axes(), true)).where(window_positions(n, -1), 0).max(w.axes());
  Tensor index = first_max.const_like(n) - first_max;
  if (!dtype().is_float()) return {values, index};
  // A window with NaNs has a NaN maximum, found as its last NaN (as PyTorch does).
  Tensor last_nan = windows.isnan().where(window_positions(1, 1), 0).max(w.axes());
  return {values, last_nan.gt(0).where(last_nan - 1, index)};
}

Tensor Tensor::max_unpool2d(const Tensor& indices, const Shape& kernel, const Shape& stride, const Pairs& padding,
                            const Shape& dilation, const Shape& output_size) const {
  if (ndim() < 3 || static_cast<int64_t>(kernel.size()) != ndim() - 2)
    throw_error("max_unpool2d: expected an input (N, C, spatial...) and a kernel size per spatial axis, got input ",
                shape_to_string(shape()), " and kernel ", shape_to_string(kernel));
  if (indices.shape() != shape() || indices.dtype().is_float() || indices.dtype().is_bool())
    throw_error("max_unpool2d: expected integer indices of the input's shape ", shape_to_string(shape()), ", got ",
                indices.dtype().name(), " ", shape_to_string(indices.shape()));
  // (not a Window: those check that the windows fit this tensor, but this is the pool's output)
  const size_t nk = kernel.size();
  const char* op = "max_unpool2d";
  const Shape& k = kernel;
  const Shape s = stride.empty() ? kernel : per_axis(stride, nk, int64_t{1}, op, "a stride");
  const Shape d = per_axis(dilation, nk, int64_t{1}, op, "a dilation");
  const Pairs pads = per_axis(padding, nk, {int64_t{0}, int64_t{0}}, op, "(before, after) padding");
  for (size_t i = 0; i < nk; i++)
    if (k[i] < 1 || s[i] < 1 || d[i] < 1)
      throw_error(op, ": kernel, stride and dilation must be >= 1, got ", k[i], ", ", s[i], ", ", d[i]);
  const Shape in = spatial(shape(), nk);
  Shape out;
  if (output_size.size() >= nk) out = spatial(output_size, nk);
  else if (!output_size.empty())
    throw_error("max_unpool2d: output_size ", shape_to_string(output_size), " has fewer than ", nk, " spatial sizes");
  else  // the input size a pool with these windows takes to this size
    for (size_t i = 0; i < nk; i++)
      out.push_back((in[i] - 1) * s[i] - (pads[i].first + pads[i].second) + d[i] * (k[i] - 1) + 1);
  for (int64_t o : out)
    if (o < 1) throw_error("max_unpool2d: the output size ", shape_to_string(out), " must be positive");
  // Each output position takes the value whose index names it, 0 where none does. Overlapping
  // windows can name one input twice (the same value): the max keeps it once, as PyTorch's.
  const int64_t n = kiln::prod(out), batch = shape()[0], channels = shape()[1];
  Tensor positions = Tensor::arange(0, static_cast<double>(n), 1, indices.dtype()).reshape({1, 1, n, 1});
  Tensor x = reshape({batch, channels, 1, -1});
  Tensor hit = indices.reshape(x.shape()).eq(positions);
  Tensor lowest = x.const_like(dtype().is_float() ? -INFINITY : dtype().min_value());
  Tensor placed = hit.any({3}).where(hit.where(x, lowest).max({3}), 0);
  Shape result{batch, channels};
  result.insert(result.end(), out.begin(), out.end());
  return placed.reshape(result);
}

Tensor Tensor::avg_pool2d(int kernel, std::optional<int> stride, int padding, int dilation, bool ceil_mode,
                          bool count_include_pad) const {
  check_padding(padding, "avg_pool2d", kernel);
  return avg_pool2d(Shape(2, kernel), Shape(2, stride.value_or(kernel)), symmetric(padding, 2), Shape(2, dilation),
                    ceil_mode, count_include_pad);
}

Tensor Tensor::avg_pool2d(const Shape& kernel, const Shape& stride, const Pairs& padding, const Shape& dilation,
                          bool ceil_mode, bool count_include_pad) const {
  Window w(*this, kernel, stride, padding, dilation, "avg_pool2d");
  const Pairs& reg = w.pads;
  Pairs pads = ceil_mode ? ceil_mode_pads(spatial(shape(), w.k.size()), reg, w.k, w.s, w.d) : reg;
  Tensor sum = pad_spatial(*this, pads).pool(w.k, w.s, w.d).sum(w.axes());
  if (!count_include_pad) return sum / pad_spatial(ones_like(), pads).pool(w.k, w.s, w.d).sum(w.axes());
  if (!ceil_mode) {
    int64_t window = 1;
    for (int64_t v : w.k) window *= v;
    return sum / static_cast<double>(window);
  }
  // ceil_mode counts the regular padding but not the extra windows' overhang
  Pairs extra;
  for (size_t i = 0; i < w.k.size(); i++) extra.push_back({0, pads[i].second - reg[i].second});
  return sum / pad_spatial(pad_spatial(ones_like(), reg, 1), extra).pool(w.k, w.s, w.d).sum(w.axes());
}

}  // namespace kiln
