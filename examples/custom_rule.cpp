// kiln's IR is public: build UOps by hand, write a rewrite rule, run graph_rewrite, and look at
// the graph behind any Tensor.
#include <kiln/kiln.h>
#include <kiln/uop.h>

#include <cstdio>

using namespace kiln;

int main() {
  // x*2 + x*2, by hand. Hash-consing makes the two x*2 the same node.
  UOpRef x = UOp::make(Ops::RANGE, dtypes::int32, {UOp::const_(dtypes::int32, 100)}, RangeArg{0, AxisType::LOOP});
  UOpRef two = UOp::const_(dtypes::int32, 2);
  UOpRef expr = x * two + x * two;
  std::printf("before: %s   (x*2 is one node: %s)\n", render_expr(expr).c_str(),
              expr->src[0] == expr->src[1] ? "yes" : "no");

  // A user rule: a + a -> a << 1 (strength reduction for integers).
  const UPat a = UPat::var("a", {dtypes::int32});
  PatternMatcher double_to_shift{{
      {UPat::op(Ops::ADD, {a, a}),
       [](RewriteCtx*, const Match& m) {
         return m["a"]->alu(Ops::SHL, {UOp::const_(dtypes::int32, 1)});
       }},
  }};
  UOpRef rewritten = graph_rewrite(expr, double_to_shift);
  std::printf("after:  %s\n", render_expr(rewritten).c_str());

  // Combined with kiln's own simplifier, rules compose: (x*2)*1 + 0 folds away first.
  UOpRef noisy = (x * two) * 1 + 0;
  std::printf("simplify(%s) = %s\n", render_expr(noisy).c_str(), render_expr(simplify(noisy)).c_str());

  // Every Tensor is a graph of the same UOps.
  Tensor t = (Tensor::ones({2, 3}) * 3.0f).sum({1});
  std::printf("\nthe graph behind (ones(2,3)*3).sum(1):\n%s", print_graph(t.uop()).c_str());
  std::printf("and its kernel:\n%s", t.schedule()[0].str().c_str());
  return 0;
}
