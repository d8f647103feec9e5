// SIMD vectorization and split reductions: which kernels get vector types and UNROLL, and that
// their results match naive float64 loops (tolerances: reference.h's float32/float64 defaults).
// The program text is checked against an AVX-512-sized target (vector_bytes 64), so these tests
// say the same on every machine; results run on this machine's own vector width.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>

#include "codegen/codegen.h"
#include "kiln/kiln.h"
#include "opt_checks.h"
#include "reference.h"
#include "runtime/device.h"
#include "support/env.h"

using namespace kiln;

namespace {

codegen::Program program_of(const Tensor& t, int vector_bytes = 64) {
  std::vector<ScheduleItem> items = t.schedule();
  EXPECT_EQ(items.size(), 1u);
  // 64-byte vectors: AVX-512, which has 32 registers (AVX2 and SSE 16)
  const codegen::Target target{.renderer = &renderer::c_renderer(),
                               .vector_bytes = vector_bytes,
                               .vector_registers = vector_bytes >= 64 ? 32 : 16};
  return codegen::to_program(items.at(0).ast, target);
}

bool has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

bool applied(const codegen::Program& p, const std::string& opt) {
  for (const codegen::Opt& o : p.opts)
    if (o.str().rfind(opt, 0) == 0) return true;
  return false;
}

TEST(Vectorize, ContiguousOutputRowsBecomeVectorsInChunks) {
  // a 20-wide output row: one 16-lane and one 4-lane vector, loads of b as vectors
  ref::NdArray a = ref::random({24, 40}, 1), b = ref::random({40, 20}, 2);
  Tensor c = kt::make(a).matmul(kt::make(b));
  codegen::Program p = program_of(c);
  EXPECT_TRUE(has(p.source, "typedef float float_x16")) << p.source;
  EXPECT_TRUE(has(p.source, "float_x4")) << p.source;
  EXPECT_TRUE(has(p.source, "*(float_x16*)(data2+")) << "vector loads of b:\n" << p.source;
  EXPECT_TRUE(kt::matches(c, ref::matmul(a, b)));
}

TEST(Vectorize, ExpReductionsKeepFewAccumulatorsBesideTheirConstants) {
  // a softmax's sum of exps along contiguous rows (one kernel with the row max before it): one
  // vector accumulator per 8 registers (the inline exp's ~14 constants and temporaries take the
  // rest): 4 x 16 lanes with AVX-512's 32 registers, 2 x 8 lanes with AVX2's 16
  ref::NdArray a = ref::random({64, 256}, 31);
  const Tensor x = kt::make(a);
  const Tensor sums = (x - x.max({1}, true)).exp().sum({1});
  const std::vector<ScheduleItem> items = sums.schedule();
  const codegen::Target avx512{.renderer = &renderer::c_renderer(), .vector_bytes = 64, .vector_registers = 32};
  const codegen::Target avx2{.renderer = &renderer::c_renderer(), .vector_bytes = 32, .vector_registers = 16};
  const codegen::Program wide = codegen::to_program(items.back().ast, avx512);
  const codegen::Program narrow = codegen::to_program(items.back().ast, avx2);
  auto exp_accumulators = [](const codegen::Program& p, const std::string& type) {  // updates "acc = (val+exp(..."
    int n = 0;
    const std::string update = "+kiln_exp_" + type + "(";
    for (size_t at = p.source.find(update); at != std::string::npos; at = p.source.find(update, at + 1)) n++;
    return n;
  };
  EXPECT_EQ(items.size(), 1u);
  EXPECT_EQ(exp_accumulators(wide, "float_x16"), 4) << wide.source;
  EXPECT_EQ(exp_accumulators(narrow, "float_x8"), 2) << narrow.source;
  std::vector<double> want(64, 0.0);
  for (int64_t i = 0; i < 64; i++) {
    double m = -INFINITY;
    for (int64_t j = 0; j < 256; j++) m = std::max(m, a.data[i * 256 + j]);
    for (int64_t j = 0; j < 256; j++) want[i] += std::exp(a.data[i * 256 + j] - m);
  }
  EXPECT_TRUE(kt::matches(sums, ref::NdArray{{64}, want}));
}

TEST(Vectorize, ScalarTargetsGetScalarCode) {
  Tensor c = kt::make(ref::random({8, 16}, 3)).matmul(kt::make(ref::random({16, 32}, 4)));
  EXPECT_FALSE(has(program_of(c, 0).source, "_x")) << program_of(c, 0).source;
}

TEST(Vectorize, Float64UsesEightLanesPerRegister) {
  ref::NdArray a = ref::random({8, 12}, 5), b = ref::random({12, 16}, 6);
  Tensor c = kt::f64(a).matmul(kt::f64(b));
  EXPECT_TRUE(has(program_of(c).source, "typedef double double_x8")) << program_of(c).source;
  EXPECT_TRUE(kt::matches(c, ref::matmul(a, b)));
}

TEST(Vectorize, FusedSoftmaxRowsAreWholeVectors) {
  // one kernel: the row's max and sum, then its outputs, each in full vectors of the target's
  // width (not 2-lane pieces of a register tile along the row, which no reduction varies with)
  ref::NdArray a = ref::random({64, 256}, 37, -4, 4);
  const Tensor s = kt::make(a).softmax(1);
  for (const int vector_bytes : {64, 32}) {
    const codegen::Program p = program_of(s, vector_bytes);
    const std::string full = vector_bytes == 64 ? "float_x16" : "float_x8";
    EXPECT_TRUE(has(p.source, "*(" + full + "*)(data0+")) << "vector stores of the row:\n" << p.source;
    EXPECT_FALSE(has(p.source, "float_x2 ")) << p.source;
  }
  EXPECT_TRUE(kt::matches(s, ref::softmax(a, 1)));
}

TEST(Vectorize, NarrowOutputsVectorizeTheReducedAxis) {
  // (7, 3) outputs, each a dot product over a contiguous 48: the sum runs in 16-lane vectors
  ref::NdArray x = ref::random({7, 48}, 7), y = ref::random({3, 48}, 8);
  Tensor d = kt::make(x).matmul(kt::make(y).transpose(0, 1));
  codegen::Program p = program_of(d);
  EXPECT_TRUE(applied(p, "UNROLL")) << p.source;
  EXPECT_TRUE(has(p.source, "float_x16")) << p.source;
  EXPECT_TRUE(kt::matches(d, ref::matmul(x, ref::transpose(y, 0, 1))));
}

TEST(Vectorize, OutputsShorterThanAVectorVectorizeTheReducedAxis) {
  // a 1-channel 5x5 conv's weight gradient: its outputs run along a 5-wide kernel row, 4 + 1 of
  // AVX2's 8 lanes, while both loads are contiguous along the output row they sum over: that row
  // becomes the vector axis (UNROLL, as for the first MNIST conv's weight gradient)
  ref::NdArray x = ref::random({2, 1, 12, 12}, 30), w = ref::random({4, 1, 5, 5}, 31), g = ref::random({2, 4, 8, 8}, 32);
  Tensor wt = kt::make(w).requires_grad_();
  Tensor dw = (kt::make(x).conv2d(wt) * kt::make(g)).sum().gradient({wt}).at(0);
  EXPECT_TRUE(applied(program_of(dw, 32), "UNROLL")) << program_of(dw, 32).source;
  ref::NdArray expected({4, 1, 5, 5});
  for (int64_t co = 0; co < 4; co++)
    for (int64_t kh = 0; kh < 5; kh++)
      for (int64_t kw = 0; kw < 5; kw++) {
        double sum = 0;
        for (int64_t n = 0; n < 2; n++)
          for (int64_t oh = 0; oh < 8; oh++)
            for (int64_t ow = 0; ow < 8; ow++) sum += g.at({n, co, oh, ow}) * x.at({n, 0, oh + kh, ow + kw});
        expected.at({co, 0, kh, kw}) = sum;
      }
  EXPECT_TRUE(kt::matches(dw, expected));
}

TEST(Vectorize, RowSumsVectorizeAlongTheRow) {
  // each output is a row apart from the next, so copies of the outputs would only gather: the row
  // itself becomes the vector axis
  ref::NdArray x = ref::random({33, 64}, 16);
  Tensor s = kt::make(x).sum({1});
  codegen::Program p = program_of(s);
  EXPECT_TRUE(applied(p, "UNROLL")) << p.source;
  EXPECT_TRUE(has(p.source, "*(float_x16*)(data1+")) << p.source;
  EXPECT_TRUE(kt::matches(s, ref::sum(x, {1})));
}

TEST(Vectorize, RowMaximaVectorizeAlongTheRowAndKeepNaN) {
  // softmax's max: vector accumulators with a NaN-propagating max (a NaN anywhere in a row wins,
  // as in PyTorch), lanes combined after the loop; rows of -inf, of equal values, and NaNs at
  // every position of a vector (lanes 0, 7, 15, and the 4-lane tail chunk)
  const int64_t rows = 40, cols = 100;  // 100 = 64 + 32 + 4: chunks of three widths
  ref::NdArray x = ref::random({rows, cols}, 17, -50, 50);
  const double nan = std::nan(""), inf = INFINITY;
  for (int64_t c = 0; c < cols; c++) x.at({1, c}) = -inf;
  for (int64_t c = 0; c < cols; c++) x.at({2, c}) = 3.5;
  const int64_t nan_at[] = {0, 7, 15, 16, 63, 64, 97, 99};
  for (size_t i = 0; i < std::size(nan_at); i++) x.at({static_cast<int64_t>(3 + i), nan_at[i]}) = nan;
  x.at({20, 50}) = inf;
  Tensor m = kt::make(x).max({1});
  codegen::Program p = program_of(m);
  EXPECT_TRUE(applied(p, "UNROLL")) << p.source;
  EXPECT_TRUE(has(p.source, "KILN_VMAX(")) << p.source;
  std::vector<float> got = m.to_vector<float>();
  for (int64_t r = 0; r < rows; r++) {
    double want = -inf;
    bool has_nan = false;
    for (int64_t c = 0; c < cols; c++) {
      has_nan |= std::isnan(x.at({r, c}));
      want = std::max(want, x.at({r, c}));
    }
    if (has_nan) EXPECT_TRUE(std::isnan(got[r])) << "row " << r;
    else EXPECT_EQ(got[r], static_cast<float>(want)) << "row " << r;
  }
}

TEST(Vectorize, NestedVectorMaximaStayLinearInTheSource) {
  // a max over 32 unrolled into 8-lane vectors nests 31 KILN_VMAX: each names its first operand
  // once, so the source the compiler parses grows linearly (with __typeof__(a) it tripled per
  // level: clang took 24 GB on 16 levels); the kernel compiles and matches itself without opts
  const Tensor m = Tensor::randn({3, 8, 32}).realize().max({2});
  const std::vector<ScheduleItem> items = m.schedule();
  ASSERT_EQ(items.size(), 1u);
  runtime::Device& cpu = runtime::get_device("CPU");
  const codegen::Target avx2{.renderer = &renderer::c_renderer(), .vector_bytes = 32, .vector_registers = 16};
  const std::vector<codegen::Opt> opts = {{codegen::OptOp::UPCAST, 1, 8}, {codegen::OptOp::UNROLL, 2, 32}};
  const codegen::Program p = codegen::to_program(items[0].ast, avx2, opts);
  size_t nested = 0;
  for (size_t at = p.source.find("KILN_VMAX(("); at != std::string::npos; at = p.source.find("KILN_VMAX((", at + 1)) nested++;
  EXPECT_GE(nested, 31u) << p.source;
  const std::string preamble = p.source.substr(0, p.source.find("KILN_BITCAST"));
  EXPECT_FALSE(has(preamble, "__typeof__(a)")) << preamble;
  std::mt19937 rng(5);
  const codegen::Target noopt{.renderer = &renderer::c_renderer(), .optimize = false};
  kt::WithoutOpts(items[0].ast, cpu, noopt, rng).expect_same_with(opts, avx2);
}

TEST(Vectorize, PerLaneOpsReadTheLanesOfVectorResults) {
  // log stays libm's scalar function (c_language.cpp): it runs lane by lane on the vector accumulators
  ref::NdArray a = ref::random({16, 24}, 9), b = ref::random({24, 20}, 10);
  Tensor c = kt::make(a).matmul(kt::make(b));
  Tensor out = c.relu() + (c * c + 1.0f).log();
  codegen::Program p = program_of(out);
  EXPECT_TRUE(has(p.source, "float_x16")) << p.source;
  EXPECT_TRUE(has(p.source, "[15]")) << "lane reads of a 16-lane vector:\n" << p.source;
  ref::NdArray want = ref::matmul(a, b);
  for (double& v : want.data) v = std::max(v, 0.0) + std::log(v * v + 1);
  EXPECT_TRUE(kt::matches(out, want));
}

TEST(Vectorize, SelectsAndComparisonsOfFloat32RunOnVectors) {
  // comparisons are int32 masks (true: all ones), a select picks bitwise by one; a bool read from
  // memory joins a mask as 0 or -1, and a mask's lane read as a bool is 0 or 1 again (the cast)
  ref::NdArray a = ref::random({16, 24}, 43), b = ref::random({24, 20}, 44), m = ref::random_int({16, 20}, 45, 0, 1);
  Tensor c = kt::make(a).matmul(kt::make(b)), mask = kt::make(m, dtypes::bool_).realize();
  Tensor out = c.gt(0.25f).where(c, 0.5f) + c.lt(-0.5f).bitwise_or(mask).where(2.0f, c) + c.gt(0.0f).cast(dtypes::float32);
  codegen::Program p = program_of(out);
  EXPECT_TRUE(has(p.source, "KILN_VWHERE")) << p.source;
  ref::NdArray want = ref::matmul(a, b);
  for (size_t i = 0; i < want.data.size(); i++) {
    const double v = want.data[i];
    want.data[i] = (v > 0.25 ? v : 0.5) + (v < -0.5 || m.data[i] != 0 ? 2.0 : v) + (v > 0 ? 1.0 : 0.0);
  }
  EXPECT_TRUE(kt::matches(out, want));
}

TEST(Vectorize, GatedVectorLoadsReadOnlyInsideTheBuffer) {
  // b padded along the reduced axis: its vector loads along the output row are gated by the row
  // they are in; the sanitizer build checks that an invalid row is never read
  ref::NdArray a = ref::random({5, 42}, 11), b = ref::random({40, 32}, 12);
  Tensor c = kt::make(a).matmul(kt::make(b).pad({{1, 1}, {0, 0}}));
  EXPECT_TRUE(has(program_of(c).source, "? (*(float_x16*)")) << program_of(c).source;
  ref::NdArray bp = ref::pad(b, {{1, 1}, {0, 0}});
  EXPECT_TRUE(kt::matches(c, ref::matmul(a, bp)));
}

TEST(Vectorize, PaddedInputsOfAConvolutionAreCopiedWithoutRemainders) {
  // the conv's zero-padded input copy reads (y*6+x-7) % n: inside the gate (1 <= y, 1 <= x) the
  // address is in range only with both bounds at once, and then the remainder goes
  ref::NdArray x = ref::random({2, 3, 6, 6}, 41), w = ref::random({4, 3, 3, 3}, 42);
  const Tensor y = kt::make(x).conv2d(kt::make(w), std::nullopt, 1, 1);
  const std::vector<ScheduleItem> items = y.schedule();
  ASSERT_EQ(items.size(), 2u);
  const codegen::Target avx512{.renderer = &renderer::c_renderer(), .vector_bytes = 64, .vector_registers = 32};
  const codegen::Program pad = codegen::to_program(items[0].ast, avx512);
  EXPECT_FALSE(has(pad.source, "%")) << pad.source;
  // and reads only inside its gate (a masked load to the C compiler), not at a selected address
  EXPECT_TRUE(has(pad.source, " ? (*(data1+")) << pad.source;
  // the same conv of an input the reference padded (ref::pad) and kiln does not
  const std::vector<float> unpadded = kt::make(ref::pad(x, {{0, 0}, {0, 0}, {1, 1}, {1, 1}})).conv2d(kt::make(w)).to_vector<float>();
  const ref::NdArray want(Shape{2, 4, 6, 6}, std::vector<double>(unpadded.begin(), unpadded.end()));
  EXPECT_TRUE(kt::matches(y, want));
}

TEST(Vectorize, TransposedCopiesAreTiled) {
  // NHWC -> NCHW plus a bias: the stores run along W, the loads along C (a line apart along W);
  // the tile takes 16 channels x 4 pixels, so each loaded line serves 16 stores (codegen/heuristics/)
  ref::NdArray x = ref::random({3, 5, 8, 32}, 21), b = ref::random({1, 32, 1, 1}, 22);
  Tensor t = kt::make(x).permute({0, 3, 1, 2}) + kt::make(b);
  codegen::Program p = program_of(t);
  std::vector<std::string> upcasts;
  for (const codegen::Opt& o : p.opts)
    if (o.op == codegen::OptOp::UPCAST) upcasts.push_back(o.str());
  EXPECT_EQ(upcasts.size(), 2u) << p.source;
  EXPECT_TRUE(has(p.source, "*(float_x4*)(data0+")) << "4-wide stores along W:\n" << p.source;
  EXPECT_TRUE(kt::matches(t, ref::zip(ref::permute(x, {0, 3, 1, 2}), b, [](double u, double v) { return u + v; })));
  // a plain copy, and a transpose whose loads step less than a line, keep the compiler's loops
  EXPECT_FALSE(applied(program_of(kt::make(x) + 1.0f), "UPCAST"));
  EXPECT_FALSE(applied(program_of(kt::make(ref::random({32, 4}, 23)).transpose(0, 1).contiguous()), "UPCAST"));
}

TEST(Vectorize, TransposeTilesShrinkToKeepPerChannelInputsInRegisters) {
  // NHWC -> NCHW through 7 per-channel inputs (a BatchNorm backward's scales and shifts): each is
  // kept for every pixel of a tile row, so the tile takes 4 channels (7 x 4 values: about 16 or
  // 32 registers) where one input alone leaves it 16 (codegen/heuristics/)
  ref::NdArray x = ref::random({2, 4, 8, 32}, 32);
  std::vector<ref::NdArray> params;
  for (int i = 0; i < 7; i++) params.push_back(ref::random({1, 32, 1, 1}, 33 + i));
  Tensor t = kt::make(x).permute({0, 3, 1, 2});
  ref::NdArray want = ref::permute(x, {0, 3, 1, 2});
  for (int i = 0; i < 7; i++) {
    const bool add = i % 2 == 0;
    t = add ? t + kt::make(params[i]) : t * kt::make(params[i]);
    want = ref::zip(want, params[i], [add](double u, double v) { return add ? u + v : u * v; });
  }
  auto upcasts = [](const codegen::Program& p) {
    std::vector<int64_t> amounts;
    for (const codegen::Opt& o : p.opts)
      if (o.op == codegen::OptOp::UPCAST) amounts.push_back(o.amt);
    return amounts;
  };
  EXPECT_EQ(upcasts(program_of(t, 32)), (std::vector<int64_t>{4, 4})) << program_of(t, 32).source;
  EXPECT_EQ(upcasts(program_of(t, 64)), (std::vector<int64_t>{4, 4})) << program_of(t, 64).source;
  const Tensor one_input = kt::make(x).permute({0, 3, 1, 2}) + kt::make(params[0]);
  EXPECT_EQ(upcasts(program_of(one_input, 32)), (std::vector<int64_t>{16, 4}));
  EXPECT_TRUE(kt::matches(t, want));
}

TEST(Vectorize, GatheringReductionsKeepOneAccumulatorRow) {
  // per (image, channel) sums of x (NCHW: a channel is 64 floats from the next) times g (NHWC):
  // the channels become 8-lane vectors gathered from x; more images per step would only add
  // gathers and registers, not hide latency (codegen/heuristics/), so one row of 8 channels it is
  ref::NdArray x = ref::random({4, 32, 8, 8}, 41), g = ref::random({4, 8, 8, 32}, 42);
  const Tensor t = (kt::make(x) * kt::make(g).permute({0, 3, 1, 2})).sum({2, 3});
  const codegen::Program p = program_of(t, 32);
  std::vector<int64_t> upcasts;
  for (const codegen::Opt& o : p.opts)
    if (o.op == codegen::OptOp::UPCAST) upcasts.push_back(o.amt);
  EXPECT_EQ(upcasts, std::vector<int64_t>{8}) << p.source;
  ref::NdArray want({4, 32});
  for (int64_t b = 0; b < 4; b++)
    for (int64_t c = 0; c < 32; c++)
      for (int64_t i = 0; i < 64; i++) want.data[b * 32 + c] += x.data[(b * 32 + c) * 64 + i] * g.data[(b * 64 + i) * 32 + c];
  EXPECT_TRUE(kt::matches(t, want));
}

TEST(Vectorize, ShortInnerLoopsAreUpcastWhole) {
  // x*a+b stored in 2x2 max-pool windows: the innermost loops are 2, 2 and then 5 long; upcast
  // whole (20 elements in straight-line code) the compiler packs them (codegen/heuristics/)
  ref::NdArray x = ref::random({3, 4, 10, 10}, 24), a = ref::random({1, 4, 1, 1}, 25);
  Tensor t = (kt::make(x) * kt::make(a)).reshape({3, 4, 5, 2, 5, 2}).permute({0, 1, 2, 4, 3, 5}).contiguous();
  codegen::Program p = program_of(t);
  EXPECT_EQ(codegen::opts_to_string(p.opts), "UPCAST(axis=5, amt=2)\nUPCAST(axis=4, amt=2)\nUPCAST(axis=3, amt=5)\n")
      << p.source;
  const ref::NdArray product = ref::zip(x, a, [](double u, double v) { return u * v; });
  EXPECT_TRUE(kt::matches(t, ref::permute(ref::reshape(product, {3, 4, 5, 2, 5, 2}), {0, 1, 2, 4, 3, 5})));
  // a 16-wide innermost loop is the compiler's to vectorize as it is
  EXPECT_FALSE(applied(program_of(kt::make(ref::random({4, 16}, 26)) * 2.0f), "UPCAST"));
}

TEST(Vectorize, StackedPiecesSharingTermsAreOneKernelUpcastAlongTheStack) {
  // A separable transform as a Winograd conv writes it: first-pass terms s[i] (9 ALU ops each) of
  // slices of x, and 8 stacked rows, each a constant combination of several s[i], zeros skipped.
  // One kernel: the stacked loop upcast whole, each copy's gates folded to its own row (no
  // selects, no gated loads), the channel loop as vectors; the values as naive float64 loops.
  ref::NdArray x = ref::random({6, 12, 32}, 27);
  const Tensor xt = kt::make(x);
  auto slice = [](const Tensor& t, int64_t i) { return t.shrink({{0, 6}, {i, i + 1}, {0, 32}}).reshape({6, 32}); };
  auto term = [&](const Tensor& t, int64_t i) {
    return ((slice(t, i) * 2.0f + slice(t, i + 1) * 3.0f - slice(t, i + 2)) * 0.5f + slice(t, i + 3) * 0.25f) * slice(t, i + 4);
  };
  const std::vector<std::vector<double>> c{{1, 0, -1, 0, 2, 0, 0, 1}, {0, 1, 1, -4, 0, 0, 1, 0}, {0, -1, 1, 4, 0, 0, 1, 0},
                                           {0, 0.5, 0.25, -2.5, 0, 2, 1, 0}, {0, -0.5, 0.25, 2.5, 0, -2, 1, 0},
                                           {0, 2, 4, -2.5, -5, 0.5, 1, 0}, {0, -2, 4, 2.5, -5, -0.5, 1, 0}, {0, -1, 0, 5, 0, -5, 0, 1}};
  std::vector<Tensor> s, rows;
  for (int64_t i = 0; i < 8; i++) s.push_back(term(xt, i));
  for (const auto& row : c) {
    std::optional<Tensor> sum;
    for (size_t i = 0; i < row.size(); i++)
      if (row[i] != 0) sum = sum ? *sum + s[i] * static_cast<float>(row[i]) : s[i] * static_cast<float>(row[i]);
    rows.push_back(*sum);
  }
  const Tensor out = Tensor::stack(rows, 1).contiguous();  // (6, 8, 32)
  EXPECT_EQ(out.schedule().size(), 1u);
  const codegen::Program p = program_of(out);
  EXPECT_TRUE(applied(p, "UPCAST(axis=1, amt=8)")) << codegen::opts_to_string(p.opts);
  const std::string body = p.source.substr(p.source.find("void "));
  EXPECT_FALSE(has(body, "KILN_VWHERE") || has(body, " ? ")) << body;
  EXPECT_TRUE(has(p.source, "float_x")) << p.source;
  ref::NdArray want({6, 8, 32});
  for (int64_t n = 0; n < 6; n++)
    for (int64_t ch = 0; ch < 32; ch++) {
      auto at = [&](int64_t i) { return x.data[static_cast<size_t>((n * 12 + i) * 32 + ch)]; };
      for (int64_t o = 0; o < 8; o++) {
        double v = 0;
        for (int64_t i = 0; i < 8; i++)
          v += c[o][i] * (((at(i) * 2 + at(i + 1) * 3 - at(i + 2)) * 0.5 + at(i + 3) * 0.25) * at(i + 4));
        want.data[static_cast<size_t>((n * 8 + o) * 32 + ch)] = v;
      }
    }
  EXPECT_TRUE(kt::matches(out, want));
}

TEST(SplitReduce, ManyToFewReductionsRunAsPartialSumsThenTheirSum) {
  ref::NdArray x = ref::random({1 << 18}, 13);
  Tensor t = kt::make(x);
  std::vector<ScheduleItem> items = t.sum().schedule();
  EXPECT_EQ(items.size(), 2u) << "partial sums, then their sum";
  EXPECT_TRUE(kt::matches(t.sum(), ref::sum(x)));
  ref::NdArray y = ref::random({4, 1 << 16}, 14);
  EXPECT_TRUE(kt::matches(kt::make(y).sum({1}), ref::sum(y, {1})));
  EXPECT_TRUE(kt::matches(kt::make(y).max({1}), ref::max(y, {1})));
  {
    env::ScopedEnv off("SPLIT_REDUCEOP", "0");
    EXPECT_EQ(kt::make(x).sum().schedule().size(), 1u);
  }
}

TEST(SplitReduce, ManyOutputsSplitFromFewerInputsEach) {
  // a^T b with 128x128 outputs (a weight gradient's shape: many outputs, each re-reading the
  // inputs) splits at 8192 inputs per output; 4096 rows of sums of 8192 stay one kernel
  ref::NdArray a = ref::random({8192, 128}, 27), b = ref::random({8192, 128}, 28);
  const Tensor product = kt::make(a).transpose(0, 1).matmul(kt::make(b));
  const Tensor row_sums = Tensor::rand({4096, 8192}).sum({1});  // not realized: only scheduled
  const size_t product_items = product.schedule().size(), row_sum_items = row_sums.schedule().size();
  {
    env::ScopedEnv off("SPLIT_REDUCEOP", "0");
    EXPECT_EQ(product.schedule().size() + 1, product_items) << "partial products, then their sum";
    EXPECT_EQ(row_sums.schedule().size(), row_sum_items);
  }
  // sums of 8192 float32 products in (-1, 1), of size ~30: rounding in any order stays within
  // ~1e-4 of float64, absolutely so for the outputs near zero
  EXPECT_TRUE(kt::matches(product, ref::matmul(ref::transpose(a, 0, 1), b), kt::Tol{1e-4, 5e-4}));
}

TEST(SplitReduce, WeightGradientsSplitIntoChunksThatStayInCache) {
  // 25,600 outputs (a 32x32x5x5 weight gradient's) of 16,384 inputs each: 256 chunks of 64 inputs
  // (6.5M partials, below the 8M bound), not 128 larger ones that spill out of a core's L2
  ref::NdArray a = ref::random({16384, 160}, 29), b = ref::random({16384, 160}, 30);
  const Tensor product = kt::make(a).transpose(0, 1).matmul(kt::make(b));
  const std::vector<ScheduleItem> items = product.schedule();
  int64_t partials = 0;  // the first stage's output: partial sums of every output
  for (const ScheduleItem& item : items)
    if (const int64_t size = item.buffers.at(0)->arg_as<BufferArg>().size; size > 160 * 160 && size % (160 * 160) == 0)
      partials = size;
  EXPECT_EQ(partials, 256 * 160 * 160);
  EXPECT_TRUE(kt::matches(product, ref::matmul(ref::transpose(a, 0, 1), b), kt::Tol{2e-4, 1e-3}));
}

TEST(SplitReduce, SmallReductionsStayOneKernel) {
  EXPECT_EQ(kt::make(ref::random({64, 64}, 15)).sum().schedule().size(), 1u);
}

}  // namespace
