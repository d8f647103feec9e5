// The codegen pass driver (codegen/passes.h): passes run in order, rewrites get their context from
// the kernel as it is when they start, cleanups of unchanged kernels are skipped, and each pass is
// recorded for VIZ and printed at DEBUG=5.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "codegen/passes.h"
#include "kiln/kiln.h"
#include "support/env.h"
#include "uop/rewrite_trace.h"

using namespace kiln;
using codegen::Pass;

namespace {

UOpRef idx(int64_t v) { return UOp::const_int(dtypes::index, v); }
UOpRef range(int64_t id, int64_t n) {
  return UOp::make(Ops::RANGE, dtypes::index, {idx(n)}, RangeArg{id, AxisType::LOOP});
}

// Walks that rebuild the kernel's only value.
UOpRef times_two(const UOpRef& k) { return UOp::sink({k->src[0] * 2}); }
UOpRef plus_one(const UOpRef& k) { return UOp::sink({k->src[0] + 1}); }
UOpRef same(const UOpRef& k) { return k; }

// A rewrite's context: the range every RANGE becomes, and the kernel it was made from.
struct Renumber : RewriteCtx {
  UOpRef kernel, to;
};

const PatternMatcher& renumber_rules() {
  static const PatternMatcher pm{{make_rule(UPat(Ops::RANGE).named("r"), [](RewriteCtx* ctx, const Match&) {
    return ctx->as<Renumber>().to;
  })}};
  return pm;
}

std::vector<std::string> trace_names() {
  std::vector<std::string> names;
  trace::visit([&](const std::vector<trace::Trace>& ts) {
    for (const trace::Trace& t : ts) names.push_back(t.name);
  });
  return names;
}

}  // namespace

TEST(CodegenPasses, RunInOrderEachRewriteWithAContextFromTheKernelItGets) {
  const UOpRef r = range(0, 8), r9 = range(9, 8);
  UOpRef seen;  // the kernel the rewrite's context was made from
  const std::vector<Pass> passes{
      Pass::walk_of("times two", times_two, "test"),
      Pass::rewrite("renumber", renumber_rules(),
                    [&](const UOpRef& k) {
                      seen = k;
                      auto ctx = std::make_unique<Renumber>();
                      ctx->to = r9;
                      return ctx;
                    }),
      Pass::walk_of("plus one", plus_one, "test"),
  };
  const UOpRef out = codegen::run_passes(UOp::sink({r}), passes);
  EXPECT_EQ(seen, UOp::sink({r * 2}));  // after the first walk, before the second
  EXPECT_EQ(out, UOp::sink({r9 * 2 + 1}));  // not (r9 + 1) * 2: the passes' order
}

TEST(CodegenPasses, CleanupsRunOnlyAfterAPassThatChangedTheKernel) {
  const UOpRef r = range(0, 8);
  const UOpRef unchanged = codegen::run_passes(
      UOp::sink({r}), {Pass::walk_of("same", same, "test"), Pass::walk_of("plus one", plus_one, "test").if_changed()});
  EXPECT_EQ(unchanged, UOp::sink({r}));
  const std::vector<Pass> after_a_change{Pass::walk_of("times two", times_two, "test"),
                                         Pass::walk_of("plus one", plus_one, "test").if_changed()};
  EXPECT_EQ(codegen::run_passes(UOp::sink({r}), after_a_change), UOp::sink({r * 2 + 1}));
}

TEST(CodegenPasses, EachPassIsRecordedForVizAndPrintedAtDebug5) {
  trace::clear();
  trace::set_enabled(true);
  env::ScopedEnv debug("DEBUG", "5");
  testing::internal::CaptureStderr();
  const UOpRef r = range(0, 8);
  codegen::run_passes(UOp::sink({r}), {Pass::walk_of("times two", times_two, "a walk's reason"),
                                       Pass::rewrite("simplify", codegen::simplify_rules()),
                                       Pass::walk_of("plus one", plus_one, "test").if_changed()});
  const std::string printed = testing::internal::GetCapturedStderr();
  trace::set_enabled(false);
  EXPECT_EQ(trace_names(), (std::vector<std::string>{"times two", "simplify"}));
  // sink(r) has 3 nodes (sink, range, its size), sink(r*2) 5; r*2 is simplified already
  EXPECT_NE(printed.find("times two"), std::string::npos) << printed;
  EXPECT_NE(printed.find("3 ->      5 nodes  walk: a walk's reason"), std::string::npos) << printed;
  const size_t plus_one = printed.find("plus one");
  ASSERT_NE(plus_one, std::string::npos) << printed;
  const std::string line = printed.substr(plus_one, printed.find('\n', plus_one) - plus_one);
  EXPECT_NE(line.find("skipped"), std::string::npos) << printed;
  EXPECT_LT(printed.find("times two"), printed.find("simplify")) << printed;
}

// A kernel's codegen is the list of passes, each printed at DEBUG=5 under its name, in order.
TEST(CodegenPasses, ToProgramRunsItsPassesInOrder) {
  const std::vector<ScheduleItem> items = Tensor::empty({16, 64}).sum({1}).schedule();
  ASSERT_EQ(items.size(), 1u);
  const codegen::Target avx2{.renderer = &renderer::c_renderer(), .vector_bytes = 32, .vector_registers = 16};
  std::string printed;
  {
    env::ScopedEnv debug("DEBUG", "5");
    testing::internal::CaptureStderr();
    codegen::to_program(items[0].ast, avx2,
                        std::vector<codegen::Opt>{{codegen::OptOp::UPCAST, 0, 4}, {codegen::OptOp::UNROLL, 1, 8}});
    printed = testing::internal::GetCapturedStderr();
  }
  std::vector<std::string> names;
  const std::string prefix = "  pass ";
  for (size_t at = printed.find(prefix); at != std::string::npos; at = printed.find(prefix, at + 1)) {
    std::string name = printed.substr(at + prefix.size(), 28);
    name.erase(name.find_last_not_of(' ') + 1);
    names.push_back(name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"simplify ast", "opts", "vectorize unrolls", "simplify unrolled",
                                             "expand upcasts", "simplify expanded", "block long sums",
                                             "lower group reduces", "lower reduces", "simplify lowered"}))
      << printed;
}
