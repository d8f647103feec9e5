// Split reductions (tinygrad's split_reduceop): a reduction of many elements into few outputs,
// e.g. sum() of 16M floats or a conv's weight gradient (25k outputs, each summing 200k products),
// runs as two kernels. The first reduces chunks of one reduced axis into partial results, one
// axis of partials in front, so its outermost loop spreads the chunks over the cores and each
// chunk's data stays in cache while every output is accumulated from it; the second sums the
// partials.
//   REDUCE(x, axes)  ->  RESHAPE(REDUCE(CONTIGUOUS(REDUCE(PERMUTE(RESHAPE(x)), axes+1)), {0}))
#include <unordered_set>

#include "kiln/ir/pattern_matcher.h"
#include "schedule/schedule.h"
#include "support/env.h"

namespace kiln::schedule {
namespace {

// Split when each output sums at least this many inputs, into between 8 and 256 partials per
// output (the most that divide the axis: small chunks stay in L1; a conv weight gradient runs
// fastest with one image per chunk), at most 8M partials (32 MB of floats) in all. With many
// outputs (a weight gradient's), each tile of outputs re-reads all the inputs, so cached chunks
// pay off sooner: the MNIST CNN's 64x64x3x3 weight gradient (18k inputs per output) is split, and
// its 32x32x5x5 one goes in 256 chunks of 2 images (128 chunks of 4 are 500 KB each, more than a
// core's L2 holds beside the rest).
constexpr int64_t kMinReduceRatio = 32768, kManyOutputs = 16384, kMinReduceRatioOfManyOutputs = 8192;
constexpr int64_t kMinSplit = 8, kMaxSplit = 256, kMaxPartials = int64_t{1} << 23;

struct SplitCtx : RewriteCtx {
  std::unordered_set<const UOp*> first_stages;  // already split: not again
};

UOpRef split_reduce(SplitCtx& ctx, const UOpRef& reduce) {
  if (ctx.first_stages.count(reduce.get())) return {};
  const UOpRef& x = reduce->src[0];
  const Shape &in = x->shape_or_throw(), &out = reduce->shape_or_throw();
  const auto& arg = reduce->arg_as<ReduceArg>();
  const int64_t min_ratio = prod(out) >= kManyOutputs ? kMinReduceRatioOfManyOutputs : kMinReduceRatio;
  if (prod(out) == 0 || prod(in) / prod(out) < min_ratio) return {};
  for (int64_t axis : arg.axes)
    for (int64_t d = std::min(kMaxSplit, kMaxPartials / prod(out)); d >= kMinSplit; d--) {
      if (in[axis] % d != 0) continue;
      // axis -> (d, n/d): the partial number goes in front, the chunk's n/d elements stay at `axis`
      Shape chunked = in;
      Shape perm;
      chunked.insert(chunked.begin() + axis, d);
      chunked[axis + 1] = in[axis] / d;
      perm.push_back(axis);
      for (int64_t i = 0; i < static_cast<int64_t>(chunked.size()); i++)
        if (i != axis) perm.push_back(i);
      UOpRef parts = UOp::make(Ops::PERMUTE, x->dtype, {UOp::make(Ops::RESHAPE, x->dtype, {x}, chunked)}, perm);
      std::vector<int64_t> shifted;
      for (int64_t a : arg.axes) shifted.push_back(a + 1);
      UOpRef first = UOp::make(Ops::REDUCE, reduce->dtype, {parts}, ReduceArg{arg.op, shifted});
      ctx.first_stages.insert(first.get());
      if (env::debug_level() >= 3)
        fprintf(stderr, "split reduce %s -> %lld partials of %s\n", shape_to_string(in).c_str(), static_cast<long long>(d),
                shape_to_string(out).c_str());
      UOpRef partials = UOp::make(Ops::CONTIGUOUS, reduce->dtype, {first});
      UOpRef total = UOp::make(Ops::REDUCE, reduce->dtype, {partials}, ReduceArg{arg.op, {0}});
      return UOp::make(Ops::RESHAPE, reduce->dtype, {total}, out);
    }
  return {};
}

const PatternMatcher& split_rules() {
  static const PatternMatcher pm{{
      make_rule(UPat(Ops::REDUCE).named("r"),
                [](RewriteCtx* ctx, const Match& m) { return split_reduce(ctx->as<SplitCtx>(), m["r"]); }),
  }};
  return pm;
}

}  // namespace

UOpRef split_reduces(const UOpRef& sink, std::unordered_map<const UOp*, UOpRef>& versions) {
  if (env::get_int("SPLIT_REDUCEOP", 1) == 0) return sink;
  SplitCtx ctx;
  const std::unordered_map<const UOp*, UOpRef> split = graph_rewrite_map(sink, split_rules(), {&ctx, false, "split reduces"});
  for (auto& [node, version] : versions) version = split.at(version.get());
  return split.at(sink.get());
}

}  // namespace kiln::schedule
