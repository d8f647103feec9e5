// Convolution layout: the tensor layer (tensor/pooling.cpp) builds every ungrouped convolution of 16
// or more output channels whose output rows are narrow, or whose input channels are 16 or more, the
// same way on every device: a matmul over channels-last copies (conv_channels_last), read back as NCHW:
//   PERMUTE(CONTIGUOUS(RESHAPE(REDUCE_ADD(MUL(EXPAND(RESHAPE(PERMUTE(windows of CL(xp)))),
//                                           EXPAND(RESHAPE(PERMUTE(CONTIGUOUS(PERMUTE(w))))))))))
// where CL(xp) is PERMUTE(CONTIGUOUS(PERMUTE(xp))), xp's channels-last copy viewed as NCHW (16-bit
// floats sum in float32: a CAST below the REDUCE and one above its RESHAPE).
// Pixels x output channels then form a register tile as in a matmul, one broadcast input load per
// two multiplies. Rows narrower than kConvMinRowForChannelsFirst fill no vector in the NCHW layout, on
// any device: those stay channels-last. For wider rows the layout that pays depends on the device,
// and this pass, reading its Target, turns the conv back into the NCHW form (conv_windows: windows
// of xp times the weight, summed over (cin, kernel...)) where that one does:
// - Devices without SIMD vectors (GPUs) compute one output per work-item: the copies only cost.
// - With 32 vector registers (AVX-512) the NCHW tile (output channels x row chunks x 2 rows, one
//   broadcast weight per channel) is wide enough. With 16 (AVX2) it shrinks to 8 channels x 8
//   pixels, a broadcast per multiply, and the channels-last matmul does more arithmetic per load.
// The NCHW form reads xp stored padded when it is padded (its conv then reads the border without
// bounds checks): a channels-last copy padded as a view becomes the copy of x padded, and so it does
// for the other readers of that view (the weight gradient's channels-last copy of it), which then
// need no channels-last copy of x of their own.
#include <cstdio>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/ir/pattern_matcher.h"
#include "schedule/devices.h"
#include "schedule/schedule.h"
#include "support/env.h"

namespace kiln::schedule {
namespace {

constexpr int kMinVectorRegistersForChannelsFirst = 32;

bool prefers_channels_first(const Target& target) {
  return target.vector_bytes == 0 || target.vector_registers >= kMinVectorRegistersForChannelsFirst;
}

// Axis orders moving the channels (axis 1) of an (N, C, spatial...) tensor last, and back.
Shape channels_last(size_t nk) {
  Shape order{0};
  for (size_t i = 0; i < nk; i++) order.push_back(static_cast<int64_t>(2 + i));
  order.push_back(1);
  return order;
}
Shape channels_first(size_t nk) {
  Shape order{0, static_cast<int64_t>(nk) + 1};
  for (size_t i = 0; i < nk; i++) order.push_back(static_cast<int64_t>(1 + i));
  return order;
}

bool is_permute(const UOp* u, const Shape& order) { return u->op == Ops::PERMUTE && u->arg_as<Shape>() == order; }

// The source of a copy viewed in another order: PERMUTE(CONTIGUOUS(PERMUTE(x, stored)), read), or null.
const UOpRef* copied(const UOpRef& view, const Shape& stored, const Shape& read) {
  if (!is_permute(view.get(), read) || view->src[0]->op != Ops::CONTIGUOUS) return nullptr;
  const UOpRef& store = view->src[0]->src[0];
  return is_permute(store.get(), stored) ? &store->src[0] : nullptr;
}

// The conv's input as the NCHW form reads it: stored padded when padding (PADs and SHRINKs over it)
// grows it, with a channels-last copy under the padding replaced by what it copies. Such an input
// goes into `replaced` with its NCHW version, for its other readers.
UOpRef nchw_input(const UOpRef& xp, size_t nk, std::unordered_map<const UOp*, UOpRef>& replaced) {
  std::vector<UOpRef> pads;
  bool grows = false;
  UOpRef u = xp;
  for (; u->op == Ops::PAD || u->op == Ops::SHRINK; u = u->src[0]) pads.push_back(u), grows |= u->op == Ops::PAD;
  if (!grows) return xp;
  const UOpRef* x = copied(u, channels_last(nk), channels_first(nk));
  if (x) u = *x;
  for (auto it = pads.rbegin(); it != pads.rend(); ++it) u = (*it)->with_src({u});
  UOpRef stored = UOp::make(Ops::CONTIGUOUS, u->dtype, {u});
  if (x) replaced.emplace(xp.get(), stored);
  return stored;
}

struct LayoutCtx : RewriteCtx {
  const TargetOf* target_of;
  const std::string* device_of_constants;
  bool changed = false;
  // the padded channels-last inputs of the convs turned NCHW, and their NCHW versions
  std::unordered_map<const UOp*, UOpRef> inputs;
  Target target(const UOp* u) { return (*target_of)(device_of(u, *device_of_constants)); }
};

// `out` (PERMUTE(CONTIGUOUS(r)): the channels-last conv's NCHW view) in the NCHW form when its
// device prefers that, else null.
UOpRef to_channels_first(LayoutCtx& ctx, const UOpRef& out, const UOpRef& r) {
  const Shape& out_shape = out->shape_or_throw();  // (bs, cout, o...)
  if (out_shape.size() < 3) return {};
  const size_t nk = out_shape.size() - 2;
  if (!is_permute(out.get(), channels_first(nk)) || out_shape.back() < kConvMinRowForChannelsFirst) return {};
  // r: [CAST] RESHAPE REDUCE [CAST] MUL, the casts summing 16-bit floats in float32
  std::vector<UOpRef> above;  // between the REDUCE and r, lowest last
  UOpRef sum = r;
  for (; sum->op == Ops::CAST || sum->op == Ops::RESHAPE; sum = sum->src[0]) above.push_back(sum);
  if (sum->op != Ops::REDUCE || sum->arg_as<ReduceArg>().op != Ops::ADD) return {};
  const UOpRef& summed = sum->src[0];
  const UOpRef& mul = summed->op == Ops::CAST ? summed->src[0] : summed;
  if (mul->op != Ops::MUL) return {};
  // the operands, broadcast: windows (bs, o..., 1, k..., ci) and the weight copy (1, 1..., co, k..., ci)
  const UOpRef &a = mul->src[0], &b = mul->src[1];
  Shape to_windows{0};  // (bs, ci, o..., k...) -> (bs, o..., k..., ci)
  for (size_t i = 0; i < 2 * nk; i++) to_windows.push_back(static_cast<int64_t>(2 + i));
  to_windows.push_back(1);
  if (a->op != Ops::EXPAND || a->src[0]->op != Ops::RESHAPE || !is_permute(a->src[0]->src[0].get(), to_windows))
    return {};
  if (b->op != Ops::EXPAND || b->src[0]->op != Ops::RESHAPE) return {};
  Shape w_store, w_read{static_cast<int64_t>(nk) + 1};
  for (size_t i = 0; i < nk; i++) w_store.push_back(static_cast<int64_t>(2 + i));
  w_store.insert(w_store.end(), {1, 0});
  for (size_t i = 0; i <= nk; i++) w_read.push_back(static_cast<int64_t>(i));
  const UOpRef* w = copied(b->src[0]->src[0], w_store, w_read);
  if (!w) return {};
  Shape reduced;  // the product's (bs, o..., co, k..., ci) last nk + 1 axes: (k..., ci)
  for (size_t i = 0; i <= nk; i++) reduced.push_back(static_cast<int64_t>(nk + 2 + i));
  if (sum->arg_as<ReduceArg>().axes != reduced) return {};
  // the windows (pool: movement ops only) over the input's channels-last copy
  const UOpRef& windows = a->src[0]->src[0]->src[0];  // (bs, ci, o..., k...)
  const UOpRef* copy_view = &windows;
  const UOpRef* xp = nullptr;
  for (; group::Movement.has((*copy_view)->op); copy_view = &(*copy_view)->src[0])
    if ((xp = copied(*copy_view, channels_last(nk), channels_first(nk)))) break;
  if (!xp) return {};
  const Target target = ctx.target(sum.get());
  if (!prefers_channels_first(target)) return {};
  const Shape& ws = (*w)->shape_or_throw();  // (co, ci, k...)
  const int64_t bs = out_shape[0], cout = ws[0], cin = ws[1];
  const Shape o(out_shape.begin() + 2, out_shape.end()), k(ws.begin() + 2, ws.end());
  // conv_windows: (bs, 1, ci, 1, o..., k...) -> expand co -> (bs, 1, co, o..., ci, k...) times the
  // weight (1, 1, co, 1..., ci, k...), summed over (ci, k...), (bs, 1, co, o...) -> (bs, co, o...)
  Shape s1{bs, 1, cin, 1}, s2{bs, 1, cin, cout}, order{0, 1, 3}, w1{1, 1, cout}, full{bs, 1, cout}, kept{bs, 1, cout};
  for (int64_t v : o) s1.push_back(v), s2.push_back(v), w1.push_back(1), full.push_back(v), kept.push_back(v);
  for (int64_t v : k) s1.push_back(v), s2.push_back(v);
  for (size_t i = 0; i < nk; i++) order.push_back(static_cast<int64_t>(4 + i));
  order.push_back(2);
  for (size_t i = 0; i < nk; i++) order.push_back(static_cast<int64_t>(4 + nk + i));
  w1.push_back(cin), full.push_back(cin);
  for (int64_t v : k) w1.push_back(v), full.push_back(v);
  Shape axes;
  for (size_t i = 0; i <= nk; i++) axes.push_back(static_cast<int64_t>(3 + nk + i));
  const DType dt = windows->dtype;
  UOpRef x = substitute(windows, {{copy_view->get(), nchw_input(*xp, nk, ctx.inputs)}});
  x = UOp::make(Ops::RESHAPE, dt, {x}, s1);
  x = UOp::make(Ops::PERMUTE, dt, {UOp::make(Ops::EXPAND, dt, {x}, s2)}, order);
  UOpRef wb = UOp::make(Ops::EXPAND, dt, {UOp::make(Ops::RESHAPE, dt, {*w}, w1)}, full);
  UOpRef product = mul->with_src({x, wb});
  if (summed->op == Ops::CAST) product = summed->with_src({product});
  UOpRef result = UOp::make(Ops::REDUCE, sum->dtype, {product}, ReduceArg{Ops::ADD, axes});
  for (auto it = above.rbegin(); it != above.rend(); ++it)
    result = (*it)->op == Ops::RESHAPE ? UOp::make(Ops::RESHAPE, result->dtype, {result}, kept)
                                       : (*it)->with_src({result});
  if (env::debug_level() >= 3)
    fprintf(stderr, "conv %s * %s: NCHW layout, channels-last copies dropped\n",
            shape_to_string((*xp)->shape_or_throw()).c_str(), shape_to_string(ws).c_str());
  ctx.changed = true;
  return UOp::make(Ops::RESHAPE, result->dtype, {result}, out_shape);
}

const PatternMatcher& layout_rules() {
  static const PatternMatcher pm{{
      make_rule(UPat(Ops::PERMUTE, {UPat(Ops::CONTIGUOUS, {UPat::any("r")})}).named("out"),
                [](RewriteCtx* ctx, const Match& m) {
                  return to_channels_first(ctx->as<LayoutCtx>(), m["out"], m["r"]);
                }),
  }};
  return pm;
}

// The inputs of the convs turned NCHW in their NCHW versions wherever else they are read: the weight
// gradient's channels-last copy of a padded input then copies the NCHW form's padded buffer, not a
// channels-last copy made for it alone.
const PatternMatcher& input_rules() {
  static const PatternMatcher pm{{
      make_rule(UPat({Ops::PAD, Ops::SHRINK}).named("x"), [](RewriteCtx* ctx, const Match& m) -> UOpRef {
        const auto& inputs = ctx->as<LayoutCtx>().inputs;
        const auto it = inputs.find(m["x"].get());
        return it == inputs.end() ? UOpRef() : it->second;
      }),
  }};
  return pm;
}

}  // namespace

UOpRef lay_out_convs(const UOpRef& sink, const TargetOf& target_of, const std::string& device_of_constants,
                     std::unordered_map<const UOp*, UOpRef>& versions) {
  LayoutCtx ctx;
  ctx.target_of = &target_of;
  ctx.device_of_constants = &device_of_constants;
  const std::unordered_map<const UOp*, UOpRef> laid_out =
      graph_rewrite_map(sink, layout_rules(), {&ctx, false, "conv layout"});
  const UOpRef out = follow_rewrite(sink, laid_out, ctx.changed, versions);
  if (ctx.inputs.empty()) return out;
  const std::unordered_map<const UOp*, UOpRef> inputs_read =
      graph_rewrite_map(out, input_rules(), {&ctx, false, "conv layout inputs"});
  return follow_rewrite(out, inputs_read, true, versions);
}

}  // namespace kiln::schedule
