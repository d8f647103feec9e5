// The IR alone: interning, freeing, patterns, graph_rewrite, printing.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/uop.h"

using namespace kiln;

namespace {

UOpRef range(int64_t n, int64_t id) {
  return UOp::make(Ops::RANGE, dtypes::index, {UOp::const_(dtypes::index, static_cast<double>(n))},
                   RangeArg{id, AxisType::LOOP});
}

}  // namespace

TEST(UOp, EqualSpecsAreTheSameNode) {
  UOpRef a = UOp::const_(dtypes::float32, 1.5);
  UOpRef b = UOp::const_(dtypes::float32, 1.5);
  EXPECT_EQ(a.get(), b.get());
  UOpRef r = range(8, 0);
  EXPECT_EQ((r * 2 + 1).get(), (r * 2 + 1).get());
  EXPECT_NE(UOp::const_(dtypes::float32, 1.5).get(), UOp::const_(dtypes::float64, 1.5).get());
}

TEST(UOp, ConstsCompareBitwise) {
  EXPECT_NE(UOp::const_(dtypes::float32, 0.0).get(), UOp::const_(dtypes::float32, -0.0).get());
  EXPECT_EQ(UOp::const_(dtypes::float32, NAN).get(), UOp::const_(dtypes::float32, NAN).get());
}

TEST(UOp, IntConstsWrapToTheirDtype) {
  EXPECT_EQ(UOp::const_(dtypes::int8, 200)->const_value(), -56);
  EXPECT_EQ(UOp::const_(dtypes::uint8, -1)->const_value(), 255);
  EXPECT_EQ(UOp::const_(dtypes::bool_, 7)->const_value(), 1);
}

TEST(UOp, DeadGraphsAreFreed) {
  size_t before = live_uop_count();
  {
    UOpRef x = range(10, 12345);
    for (int i = 0; i < 100; i++) x = x + i;
    EXPECT_GE(live_uop_count(), before + 100);
  }
  EXPECT_EQ(live_uop_count(), before);
}

TEST(UOp, DeepGraphsFreeWithoutRecursion) {
  size_t before = live_uop_count();
  {
    UOpRef x = range(10, 777);
    for (int i = 0; i < 200000; i++) x = x->alu(Ops::ADD, {x});  // a 200k-deep chain
    EXPECT_EQ(x->toposort().size(), 200002u);  // the ADDs, the RANGE and its size
  }
  EXPECT_EQ(live_uop_count(), before);
}

TEST(UOp, ShapesAreCheckedAtCreation) {
  UOpRef buf = UOp::make(Ops::BUFFER, dtypes::float32, {}, BufferArg{-1, 12, "CPU"});
  UOpRef m = UOp::make(Ops::RESHAPE, dtypes::float32, {buf}, Shape{3, 4});
  EXPECT_EQ(*m->shape(), (Shape{3, 4}));
  EXPECT_EQ(*UOp::make(Ops::PERMUTE, dtypes::float32, {m}, Shape{1, 0})->shape(), (Shape{4, 3}));
  EXPECT_THROW(UOp::make(Ops::RESHAPE, dtypes::float32, {buf}, Shape{5}), Error);
  EXPECT_THROW(UOp::make(Ops::PERMUTE, dtypes::float32, {m}, Shape{0, 0}), Error);
}

TEST(UOp, ValueRanges) {
  UOpRef r = range(16, 0);
  EXPECT_EQ(r->vmin(), 0);
  EXPECT_EQ(r->vmax(), 15);
  EXPECT_EQ((r * 4 + 3)->vmax(), 63);
  EXPECT_EQ((r % 5)->vmax(), 4);
  EXPECT_EQ((r / 4)->vmax(), 3);
}

TEST(UOp, ValueRangesGiveUpWhereIntegersMayWrap) {
  UOpRef r = range(2, 0);  // [0, 1]
  UOpRef u8 = r->cast(dtypes::uint8);
  UOpRef minus_one = u8 - UOp::const_(dtypes::uint8, 1);  // r = 0 gives 255
  EXPECT_EQ(minus_one->vmin(), 0);
  EXPECT_EQ(minus_one->vmax(), 255);
  UOpRef big = range(4, 1)->cast(dtypes::int8) + UOp::const_(dtypes::int8, 126);  // reaches -128
  EXPECT_EQ(big->vmin(), -128);
  UOpRef truthy = (r + 2)->cast(dtypes::bool_);  // never zero: always true
  EXPECT_EQ(truthy->vmin(), 1);
  EXPECT_EQ(truthy->vmax(), 1);
}

TEST(PatternMatcher, MatchesCapturesAndCommutes) {
  const UPat x = UPat::var("x"), c = UPat::cvar("c");
  int hits = 0;
  PatternMatcher pm{{
      {x + c, [&](RewriteCtx*, const Match& m) {
         hits++;
         EXPECT_EQ(m["c"]->op, Ops::CONST);
         return m["x"];
       }},
  }};
  UOpRef r = range(4, 0);
  UOpRef k = UOp::const_(dtypes::index, 3);
  EXPECT_EQ(pm.rewrite(r + k), r);
  EXPECT_EQ(pm.rewrite(k + r), r);  // ADD is commutative: sources may come in either order
  EXPECT_FALSE(pm.rewrite(r * k));
  EXPECT_EQ(hits, 2);
}

TEST(PatternMatcher, SameNameMustBindTheSameNode) {
  const UPat x = UPat::var("x");
  PatternMatcher pm{{{UPat::op(Ops::SUB, {x, x}), [](RewriteCtx*, const Match& m) { return m["x"]->const_like(0); }}}};
  UOpRef a = range(4, 0), b = range(4, 1);
  EXPECT_TRUE(pm.rewrite(a - a));
  EXPECT_FALSE(pm.rewrite(a - b));
}

TEST(GraphRewrite, RewritesToAFixedPointSourcesFirst) {
  // a rule that peels one "+1" at a time: (((r+1)+1)+1) -> r
  const UPat x = UPat::var("x");
  PatternMatcher peel{{{x + UPat::cconst(1), [](RewriteCtx*, const Match& m) { return m["x"]; }}}};
  UOpRef r = range(4, 0);
  UOpRef e = ((r + 1) + 1) + 1;
  EXPECT_EQ(graph_rewrite(e * 2, peel), r * 2);
}

TEST(GraphRewrite, ResultsOfRulesAreRewrittenToo) {
  const UPat x = UPat::var("x");
  // x*2 -> x+x, and x+x -> x<<1: the second must apply to what the first produced
  PatternMatcher pm{{
      {x * UPat::cconst(2), [](RewriteCtx*, const Match& m) { return m["x"] + m["x"]; }},
      {UPat::op(Ops::ADD, {x, x}), [](RewriteCtx*, const Match& m) { return m["x"]->alu(Ops::SHL, {m["x"]->const_like(1)}); }},
  }};
  UOpRef r = range(4, 0);
  UOpRef out = graph_rewrite(r * 2, pm);
  EXPECT_EQ(out->op, Ops::SHL);
  EXPECT_EQ(out->src[0], r);
}

TEST(GraphRewrite, NonTerminatingRulesAreReported) {
  const UPat x = UPat::var("x");
  PatternMatcher flip{{{x + UPat::cvar("c"), [](RewriteCtx*, const Match& m) {
                          return m["x"] + (m["c"]->const_value() == 1 ? 2 : 1);
                        }}}};
  EXPECT_THROW(graph_rewrite(range(4, 0) + 1, flip), Error);
}

TEST(GraphRewrite, RulesThatRegrowTheirInputAreReported) {
  const UPat x = UPat::var("x", {dtypes::index});
  PatternMatcher grow{{{x, [](RewriteCtx*, const Match& m) { return m["x"]->alu(Ops::MAX, {m["x"]}); }}}};
  EXPECT_THROW(graph_rewrite(range(4, 0), grow), Error);
}

TEST(GraphRewrite, SubstituteReplacesWithoutDescending) {
  UOpRef a = range(4, 0), b = range(8, 1);
  UOpRef e = a * 3 + a;
  EXPECT_EQ(substitute(e, {{a.get(), b}}), b * 3 + b);
}

TEST(Print, GraphAndExpressions) {
  UOpRef r = range(16, 0);
  EXPECT_EQ(render_expr(r * 4 + 1), "((r0*4)+1)");
  std::string g = print_graph(r * 4);
  EXPECT_NE(g.find("RANGE"), std::string::npos);
  EXPECT_NE(g.find("MUL"), std::string::npos);
}

TEST(DType, PromotionFollowsTheLattice) {
  using namespace dtypes;
  EXPECT_EQ(least_upper(int8, uint8), int16);
  EXPECT_EQ(least_upper(bool_, int32), int32);
  EXPECT_EQ(least_upper(int32, float16), float16);
  EXPECT_EQ(least_upper(float16, bfloat16), float32);
  EXPECT_EQ(least_upper(uint32, int32), int64);
  EXPECT_EQ(least_upper(int64, uint64), float16);  // tinygrad's rule: no integer holds both
  EXPECT_EQ(least_upper(float32, float64), float64);
}

TEST(Spec, RejectsMalformedKernels) {
  UOpRef bad_index = UOp::make(Ops::INDEX, dtypes::float32.as_ptr(),
                               {UOp::const_(dtypes::index, 0), UOp::const_(dtypes::index, 0)});
  EXPECT_THROW(spec::verify_kernel(UOp::sink({UOp::make(Ops::LOAD, dtypes::float32, {bad_index})})), Error);
  EXPECT_THROW(spec::verify_linear({range(4, 0)}), Error);  // its size CONST is not listed first
}
