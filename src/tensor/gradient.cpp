// Backward rules as data: one pattern per primitive op, each returning the gradient of every source
// (as a SINK, NOOP where a source gets none), built from tensor ops on the incoming gradient.
#include "tensor/gradient.h"

#include <functional>
#include <numbers>
#include <numeric>
#include <optional>
#include <unordered_set>

#include "kiln/error.h"
#include "kiln/ir/pattern_matcher.h"
#include "tensor/custom_gradient.h"
#include "uop/rewrite_trace.h"

namespace kiln::autograd {
namespace {

struct GradCtx : RewriteCtx {
  explicit GradCtx(Tensor g) : grad(std::move(g)) {}
  Tensor grad;  // d root / d ret
};

using Grads = std::vector<std::optional<Tensor>>;
// (incoming gradient, the node, its sources as tensors) -> one gradient per source
using GradFn = std::function<Grads(const Tensor& g, const UOp& ret, const std::vector<Tensor>& src)>;

PatternMatcher::Rule rule(OpSet ops, GradFn fn, SourceLoc where = SourceLoc::current()) {
  return {UPat(ops),
          [fn = std::move(fn)](RewriteCtx* ctx, const Match& m) {
            const UOp& ret = *m.root();
            std::vector<Tensor> src;
            for (const UOpRef& s : ret.src) src.emplace_back(s);
            std::vector<UOpRef> out;
            for (const auto& g : fn(ctx->as<GradCtx>().grad, ret, src))
              out.push_back(g ? g->uop() : UOp::make(Ops::NOOP, dtypes::void_));
            return UOp::sink(std::move(out));
          },
          where};
}

std::vector<int> as_ints(const Shape& s) { return std::vector<int>(s.begin(), s.end()); }

Grads reduce_grad(const Tensor& g, const UOp& ret, const std::vector<Tensor>& src) {
  const Tensor& x = src[0];
  const ReduceArg& r = ret.arg_as<ReduceArg>();
  Tensor out(ret.ref());
  switch (r.op) {
    case Ops::ADD: return {g.expand(x.shape())};
    case Ops::MAX: {  // ties share the gradient equally
      Tensor is_max = x.eq(out).cast(g.dtype());
      Tensor count = is_max.sum(std::vector<int>(r.axes.begin(), r.axes.end()), true);
      return {is_max / count * g};
    }
    case Ops::MUL: {  // the product of the others: out / x unless the slice holds zeros
      std::vector<int> axes(r.axes.begin(), r.axes.end());
      Tensor is_zero = x.eq(x.const_like(0));
      Tensor zeros = is_zero.cast(x.dtype()).sum(axes, true);
      Tensor nonzero_prod = is_zero.where(x.const_like(1), x).prod(axes, true);
      // at the only zero of a slice: the product of the rest; anywhere else in a slice with a zero: 0
      Tensor others = is_zero.where(zeros.eq(1.0).where(nonzero_prod, 0.0), zeros.eq(0.0).where(out / x, 0.0));
      return {others * g};
    }
    default: throw_error("gradient: no rule for a ", op_name(r.op), " reduction");
  }
}

// A gather's gradient is a scatter-add, as a masked sum: source element j along the axis collects
// every incoming gradient whose index is j (indices outside the source collect nowhere).
Grads gather_grad(const Tensor& g, const UOp& ret, const std::vector<Tensor>& src) {
  const int axis = static_cast<int>(ret.arg_as<int64_t>());
  Tensor hit = src[1].one_hot(src[0].shape()[axis]);                     // (..., k at axis, ..., n)
  Tensor collected = hit.where(g.unsqueeze(-1), 0.0).sum({axis}, true);  // (..., 1 at axis, ..., n)
  return {collected.transpose(axis, -1).squeeze(-1), std::nullopt};
}

// The rules. Sources of elementwise ops already have the node's shape (broadcasts are EXPANDs).
const PatternMatcher& gradient_rules() {
  static const PatternMatcher pm{{
      rule(Ops::ADD, [](const Tensor& g, const UOp&, const auto&) -> Grads { return {g, g}; }),
      rule(Ops::SUB, [](const Tensor& g, const UOp&, const auto&) -> Grads { return {g, -g}; }),
      rule(Ops::MUL, [](const Tensor& g, const UOp&, const auto& s) -> Grads { return {s[1] * g, s[0] * g}; }),
      rule(Ops::FDIV,
           [](const Tensor& g, const UOp&, const auto& s) -> Grads {
             return {g / s[1], -g * s[0] / (s[1] * s[1])};
           }),
      rule(Ops::NEG, [](const Tensor& g, const UOp&, const auto&) -> Grads { return {-g}; }),
      rule(Ops::MAX,  // equal inputs split the gradient
           [](const Tensor& g, const UOp&, const auto& s) -> Grads {
             Tensor zero = g.const_like(0), half = g * 0.5;
             Tensor tie = s[0].ne(s[1]).where(zero, half);
             return {s[0].gt(s[1]).where(g, tie), s[0].lt(s[1]).where(g, tie)};
           }),
      rule(Ops::WHERE,
           [](const Tensor& g, const UOp&, const auto& s) -> Grads {
             Tensor zero = g.const_like(0);
             return {std::nullopt, s[0].where(g, zero), s[0].where(zero, g)};
           }),
      rule(Ops::EXP, [](const Tensor& g, const UOp& ret, const auto&) -> Grads { return {Tensor(ret.ref()) * g}; }),
      rule(Ops::EXP2,
           [](const Tensor& g, const UOp& ret, const auto&) -> Grads {
             return {Tensor(ret.ref()) * g * std::numbers::ln2};
           }),
      rule(Ops::LOG, [](const Tensor& g, const UOp&, const auto& s) -> Grads { return {g / s[0]}; }),
      rule(Ops::LOG2,
           [](const Tensor& g, const UOp&, const auto& s) -> Grads { return {g / (s[0] * std::numbers::ln2)}; }),
      rule(Ops::SIN, [](const Tensor& g, const UOp&, const auto& s) -> Grads { return {s[0].cos() * g}; }),
      rule(Ops::COS, [](const Tensor& g, const UOp&, const auto& s) -> Grads { return {-s[0].sin() * g}; }),
      rule(Ops::SQRT, [](const Tensor& g, const UOp& ret, const auto&) -> Grads { return {g / (Tensor(ret.ref()) * 2.0)}; }),
      rule(Ops::RECIPROCAL,
           [](const Tensor& g, const UOp& ret, const auto&) -> Grads {
             Tensor r(ret.ref());
             return {-g * r * r};
           }),
      rule(Ops::CAST,  // integer and bool sources carry no gradient
           [](const Tensor& g, const UOp&, const auto& s) -> Grads {
             if (!s[0].dtype().is_float()) return {std::nullopt};
             return {g.cast(s[0].dtype())};
           }),
      // piecewise constant, comparisons, integer and bit ops: no gradient
      rule({Ops::TRUNC, Ops::CMPLT, Ops::CMPNE, Ops::CMPEQ, Ops::IDIV, Ops::MOD, Ops::AND, Ops::OR, Ops::XOR,
            Ops::SHL, Ops::SHR, Ops::BITCAST, Ops::DETACH},
           [](const Tensor&, const UOp& ret, const auto&) { return Grads(ret.src.size()); }),
      rule(Ops::CONTIGUOUS, [](const Tensor& g, const UOp&, const auto&) -> Grads { return {g}; }),
      // a copy's gradient is copied back to where its source lives
      rule(Ops::COPY, [](const Tensor& g, const UOp&, const auto& s) -> Grads { return {g.to(s[0].device())}; }),
      rule(Ops::REDUCE, reduce_grad),
      rule(Ops::GATHER, gather_grad),
      // movement ops have exact inverses
      rule(Ops::RESHAPE, [](const Tensor& g, const UOp&, const auto& s) -> Grads { return {g.reshape(s[0].shape())}; }),
      rule(Ops::PERMUTE,
           [](const Tensor& g, const UOp& ret, const auto&) -> Grads {
             const Shape& perm = ret.arg_as<Shape>();
             std::vector<int> inverse(perm.size());
             for (size_t i = 0; i < perm.size(); i++) inverse[perm[i]] = static_cast<int>(i);
             return {g.permute(inverse)};
           }),
      rule(Ops::EXPAND,
           [](const Tensor& g, const UOp& ret, const auto& s) -> Grads {
             std::vector<int> axes;
             for (size_t i = 0; i < s[0].shape().size(); i++)
               if (s[0].shape()[i] != (*ret.shape())[i]) axes.push_back(static_cast<int>(i));
             return {g.sum(axes, true)};
           }),
      rule(Ops::PAD,
           [](const Tensor& g, const UOp& ret, const auto& s) -> Grads {
             Pairs bounds;
             for (size_t i = 0; i < s[0].shape().size(); i++) {
               int64_t before = ret.arg_as<Pairs>()[i].first;
               bounds.push_back({before, before + s[0].shape()[i]});
             }
             return {g.shrink(bounds)};
           }),
      rule(Ops::SHRINK,
           [](const Tensor& g, const UOp& ret, const auto& s) -> Grads {
             Pairs padding;
             for (size_t i = 0; i < s[0].shape().size(); i++) {
               auto [begin, end] = ret.arg_as<Pairs>()[i];
               padding.push_back({begin, s[0].shape()[i] - end});
             }
             return {g.pad(padding)};
           }),
      rule(Ops::FLIP, [](const Tensor& g, const UOp& ret, const auto&) -> Grads { return {g.flip(as_ints(ret.arg_as<Shape>()))}; }),
  }};
  return pm;
}

bool carries_gradient(const UOp* u) { return u->dtype.is_float() && u->shape(); }

// Nodes of root's graph that lie on a path to a target, sources first (tinygrad's _deepwalk). A
// node with a custom gradient reaches a target only through its custom gradient's inputs.
std::vector<const UOp*> nodes_to_targets(const UOp* root, const std::unordered_set<const UOp*>& targets) {
  std::vector<const UOp*> topo = root->toposort(), out;
  std::unordered_set<const UOp*> on_path;
  for (const UOp* u : topo) {
    bool reaches = targets.count(u) > 0;
    if (auto custom = custom_gradient(u))
      for (const UOpRef& s : custom->inputs) reaches |= on_path.count(s.get()) > 0;
    else if (u->op != Ops::DETACH)
      for (const UOpRef& s : u->src) reaches |= on_path.count(s.get()) > 0;
    if (reaches && carries_gradient(u)) {
      on_path.insert(u);
      out.push_back(u);
    }
  }
  return out;
}

}  // namespace

std::unordered_map<const UOp*, Tensor> compute_gradient(const Tensor& root, const Tensor& root_grad,
                                                        const std::vector<const UOp*>& targets) {
  trace::Context viz_context("gradient");
  std::unordered_set<const UOp*> target_set(targets.begin(), targets.end());
  std::vector<const UOp*> order = nodes_to_targets(root.uop().get(), target_set);
  std::unordered_set<const UOp*> on_path(order.begin(), order.end());
  std::unordered_map<const UOp*, Tensor> grads;
  if (on_path.count(root.uop().get())) grads.emplace(root.uop().get(), root_grad);
  auto accumulate = [&](const UOp* s, const Tensor& gs) {
    auto [at, fresh] = grads.try_emplace(s, gs);
    if (!fresh) at->second = at->second + gs;
  };
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const UOp* u = *it;
    auto g = grads.find(u);
    if (g == grads.end() || u->src.empty()) continue;
    if (auto custom = custom_gradient(u)) {
      std::vector<bool> wanted;
      for (const UOpRef& s : custom->inputs) wanted.push_back(on_path.count(s.get()) > 0);
      std::vector<std::optional<Tensor>> out = custom->backward(g->second, wanted);
      for (size_t i = 0; i < out.size(); i++)
        if (wanted[i] && out[i]) accumulate(custom->inputs[i].get(), *out[i]);
      continue;
    }
    GradCtx ctx(g->second);
    UOpRef out = gradient_rules().rewrite(u->ref(), &ctx);
    if (!out) throw_error("gradient: no backward rule for ", op_name(u->op));
    for (size_t i = 0; i < u->src.size(); i++)
      if (out->src[i]->op != Ops::NOOP && on_path.count(u->src[i].get())) accumulate(u->src[i].get(), Tensor(out->src[i]));
  }
  if (trace::enabled()) {
    std::vector<UOpRef> target_grads;
    for (const UOp* t : targets)
      if (auto g = grads.find(t); g != grads.end()) target_grads.push_back(g->second.uop());
    trace::record_pass("backward rules", root.uop(), UOp::sink(std::move(target_grads)));
  }
  return grads;
}

}  // namespace kiln::autograd
