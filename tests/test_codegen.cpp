// Codegen on tiny kernels: the generated C, loop structure, opts and index simplification.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "codegen/codegen.h"
#include "kiln/kiln.h"
#include "schedule/schedule.h"
#include "support/env.h"

using namespace kiln;

namespace {

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) n++;
  return n;
}

codegen::Program program_of(const Tensor& t, int threads = 1) {
  std::vector<ScheduleItem> items = t.schedule();
  EXPECT_EQ(items.size(), 1u);
  codegen::Target target{&renderer::c_renderer(), threads, true};
  return codegen::to_program(items.at(0).ast, target);
}

std::vector<Ops> ops_of(const std::vector<UOpRef>& linear) {
  std::vector<Ops> ops;
  for (const UOpRef& u : linear) ops.push_back(u->op);
  return ops;
}

}  // namespace

TEST(Codegen, ElementwiseIsOneLoopOneStore) {
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7}, {7});
  Tensor b = Tensor::from_vector<float>({1, 1, 1, 1, 1, 1, 1}, {7});
  codegen::Program p = program_of(a + b);
  EXPECT_EQ(p.name, "E_7");
  EXPECT_EQ(count(p.source, "for ("), 1) << p.source;
  EXPECT_NE(p.source.find("*(data0+ridx0) = (val0+val1);"), std::string::npos) << p.source;
  EXPECT_EQ(p.threads, 1);
}

TEST(Codegen, ViewsSimplifyToPlainIndices) {
  // permute, reshape and back again: the index math folds to the identity, no division is left
  Tensor a = Tensor::rand({6, 10}).realize();
  Tensor v = a.reshape({6, 2, 5}).permute({1, 0, 2}).permute({1, 0, 2}).reshape({60}) * 2.0f;
  codegen::Program p = program_of(v);
  EXPECT_EQ(count(p.source, "/"), 0) << p.source;
  EXPECT_EQ(count(p.source, "%"), 0) << p.source;
}

TEST(Codegen, ReduceBecomesAnAccumulatorLoop) {
  Tensor a = Tensor::rand({4, 8}).realize();
  codegen::Program p = program_of(a.sum({1}));
  EXPECT_EQ(p.name, "r_4_8");
  // RANGE(outer) ... STORE(acc = 0) RANGE(inner) ... END(inner) LOAD acc ... STORE out END(outer)
  std::vector<Ops> ops = ops_of(p.linear);
  auto first = [&](Ops op, size_t from = 0) { return std::find(ops.begin() + from, ops.end(), op) - ops.begin(); };
  size_t outer = first(Ops::RANGE), init = first(Ops::STORE), inner = first(Ops::RANGE, outer + 1);
  EXPECT_LT(outer, init);
  EXPECT_LT(init, inner);
  EXPECT_EQ(count(p.source, "acc0 = 0.0f;"), 1) << p.source;
  EXPECT_EQ(count(p.source, "for ("), 2);
}

TEST(Codegen, LoopInvariantLoadsAreHoisted) {
  // a[i] is read once per row, outside the loop over j
  Tensor a = Tensor::rand({4, 1}).realize(), b = Tensor::rand({1, 8}).realize();
  codegen::Program p = program_of(a * b);
  size_t load_a = p.source.find("(*(data1+ridx0))"), inner = p.source.find(" ridx1 = 0;");
  ASSERT_NE(load_a, std::string::npos) << p.source;
  ASSERT_NE(inner, std::string::npos) << p.source;
  EXPECT_LT(load_a, inner) << p.source;
}

TEST(Codegen, AddressArithmeticIsPointerWideAndDataArithmeticWrapsAtInt32) {
  // Loop counters and offsets that only address memory are `long long` in C (no sign extension
  // per access); an int32 value the kernel stores keeps int32 arithmetic, which wraps.
  Tensor a = Tensor::rand({64, 48}).realize();
  codegen::Program strided = program_of(a.permute({1, 0}) * 2.0f);
  EXPECT_NE(strided.source.find("for (long long ridx0 = 0;"), std::string::npos) << strided.source;
  EXPECT_EQ(count(strided.source, "for (int "), 0) << strided.source;

  constexpr int64_t n = 1000, big = 3000000;  // i * big passes 2^31 from i = 716 on
  Tensor idx = Tensor::arange(0, n, 1, dtypes::int32).realize() * Tensor::full({n}, big, dtypes::int32);
  codegen::Program data = program_of(idx);
  EXPECT_NE(data.source.find("*(data0+ridx0) = (val0*3000000);"), std::string::npos) << data.source;
  EXPECT_NE(data.source.find("int val0"), std::string::npos) << data.source;
  std::vector<int32_t> got = idx.to_vector<int32_t>();
  ASSERT_EQ(got.size(), static_cast<size_t>(n));
  for (int64_t i = 0; i < n; i++)
    ASSERT_EQ(got[i], static_cast<int32_t>(static_cast<uint32_t>(i) * static_cast<uint32_t>(big))) << "i=" << i;
}

TEST(Codegen, LargeKernelsSplitTheOuterLoopOverThreads) {
  Tensor a = Tensor::rand({512, 512}).realize();
  codegen::Program p = program_of(a * 2.0f, 4);
  EXPECT_EQ(p.threads, 4);
  EXPECT_NE(p.source.find("core_id"), std::string::npos);
  ASSERT_EQ(p.opts.size(), 1u);
  EXPECT_EQ(p.opts[0].op, codegen::OptOp::THREAD);
  // small kernels stay on one core, and NOOPT turns opts off
  EXPECT_EQ(program_of(Tensor::rand({8}).realize() * 2.0f, 4).threads, 1);
  codegen::Target noopt{&renderer::c_renderer(), 4, false};
  EXPECT_EQ(codegen::to_program((a * 2.0f).schedule()[0].ast, noopt).threads, 1);
}

TEST(Codegen, IdenticalKernelsShareOneAst) {
  // ranges are renumbered, so the same computation on other buffers is the same AST node
  Tensor a = Tensor::rand({5, 3}).realize(), b = Tensor::rand({5, 3}).realize();
  EXPECT_EQ((a * 3.0f).schedule()[0].ast, (b * 3.0f).schedule()[0].ast);
}

TEST(Codegen, HalfPrecisionComputesInFloatAndRounds) {
  Tensor h = Tensor::from_vector<float>({1.5f, -2.25f, 1e5f}, {3}).cast(dtypes::float16);
  codegen::Program p = program_of(h);
  EXPECT_NE(p.source.find("kiln_float_to_half"), std::string::npos);
  std::vector<float> back = h.cast(dtypes::float32).to_vector<float>();
  EXPECT_EQ(back[0], 1.5f);
  EXPECT_EQ(back[1], -2.25f);
  EXPECT_TRUE(std::isinf(back[2]));  // 1e5 overflows float16
}

TEST(Codegen, KernelNamesColorAxesByKind) {
  Tensor a = Tensor::rand({4, 8}).realize();
  codegen::Program p = program_of(a.sum({1}));
  EXPECT_NE(p.display_name.find("\033[31m8"), std::string::npos);  // the reduce axis in red
}

TEST(Codegen, ReductionsAreUpcastAndTheResultsDoNotChange) {
  // The same computations with opts and with NOOPT=1 must agree; the optimized ones are upcast.
  Tensor::manual_seed(7);
  Tensor a = Tensor::randn({24, 40}).realize(), b = Tensor::randn({40, 32}).realize();
  Tensor c = Tensor::randn({3, 8, 16}).realize();
  auto build = [](const Tensor& a, const Tensor& b, const Tensor& c) {
    return std::vector<Tensor>{a.matmul(b), a.sum({0}), a.sum({1}), (c * 2.0f).max({2}), c.sum({1}).exp(), a.softmax(1)};
  };
  const std::vector<codegen::Opt> mm = program_of(a.matmul(b)).opts;
  EXPECT_TRUE(std::any_of(mm.begin(), mm.end(), [](const codegen::Opt& o) { return o.op == codegen::OptOp::UPCAST; }));
  std::vector<Tensor> fast = build(a, b, c);
  // Copies of the inputs in new buffers, so hash-consing does not hand back the optimized results.
  Tensor a2 = (a + 0.0f).realize(), b2 = (b + 0.0f).realize(), c2 = (c + 0.0f).realize();
  std::vector<std::vector<float>> plain;
  {
    env::ScopedEnv noopt("NOOPT", "1");
    for (const Tensor& e : build(a2, b2, c2)) plain.push_back(e.to_vector<float>());
  }
  for (size_t k = 0; k < fast.size(); k++) {
    std::vector<float> f = fast[k].to_vector<float>();
    ASSERT_EQ(f.size(), plain[k].size());
    for (size_t i = 0; i < f.size(); i++) EXPECT_NEAR(f[i], plain[k][i], 1e-4 * (1 + std::abs(plain[k][i]))) << k << " " << i;
  }
}
