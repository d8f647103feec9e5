// The hand-written heuristics rule by rule (src/codegen/heuristics/): for each named rule, a
// kernel it is for and the opts it gives there, as its comment says, and a kernel it leaves alone.
// Kernels are only scheduled and optimized, never run: test_vectorize, test_local_opts and the op
// suites check that the opts compute what naive loops compute.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>

#include "codegen/codegen.h"
#include "codegen/heuristics/rules.h"
#include "kiln/ir/symbolic.h"
#include "kiln/kiln.h"

using namespace kiln;
using codegen::Opt;
using codegen::OptOp;
namespace heuristics = codegen::heuristics;

namespace {

// AVX2 and AVX-512 as the CPU device describes them (16 and 32 vector registers), one core unless
// a test asks for more; a GPU-like target with work-groups of up to 256.
codegen::Target avx2(int threads = 1) {
  return {.renderer = &renderer::c_renderer(), .max_threads = threads, .vector_bytes = 32, .vector_registers = 16};
}
codegen::Target avx512(int threads = 1) {
  return {.renderer = &renderer::c_renderer(), .max_threads = threads, .vector_bytes = 64, .vector_registers = 32};
}
const codegen::Target gpu{.renderer = &renderer::opencl_renderer(), .max_threads = 1 << 20, .max_local_size = 256,
                          .local_memory_bytes = 32 << 10};

// The kernel computing t (its schedule's last), as to_program hands it to the heuristics.
UOpRef kernel(const Tensor& t) { return simplify(t.schedule().back().ast); }

Tensor input(Shape shape) { return Tensor::empty(std::move(shape)); }

// The firing of `rule` on the kernel, if it fired.
std::optional<heuristics::Firing> firing(const UOpRef& ast, const codegen::Target& target, const std::string& rule) {
  bool known = false;
  for (const auto* rules : {&heuristics::cpu_rules(), &heuristics::work_group_rules()})
    for (const heuristics::Rule& r : *rules) known |= r.name == rule;
  EXPECT_TRUE(known) << "no rule named " << rule;
  for (heuristics::Firing& f : heuristics::choose_opts(ast, target).fired)
    if (f.rule == rule) return f;
  return std::nullopt;
}

std::vector<Opt> opts_of(const UOpRef& ast, const codegen::Target& target, const std::string& rule) {
  const auto f = firing(ast, target, rule);
  EXPECT_TRUE(f.has_value()) << rule << " did not fire";
  return f ? f->opts : std::vector<Opt>{};
}

// The id of the kernel's only loop of this kind and size (axes are named by size in the tests).
int64_t axis(const UOpRef& ast, int64_t size, AxisType type = AxisType::LOOP) {
  std::optional<int64_t> found;
  for (const UOp* r : codegen::ranges_of(ast))
    if (codegen::range_size(r) == size && codegen::axis_type(r) == type) {
      EXPECT_FALSE(found.has_value()) << "two loops of size " << size;
      found = codegen::axis_id(r);
    }
  EXPECT_TRUE(found.has_value()) << "no loop of size " << size;
  return found.value_or(-1);
}

Opt upcast(int64_t axis, int64_t amt) { return {OptOp::UPCAST, axis, amt}; }
Opt unroll(int64_t axis, int64_t amt) { return {OptOp::UNROLL, axis, amt}; }

// (256, 512) @ (512, 128): 256 rows, 128 columns, 512 reduced
const UOpRef& matmul() {
  static const UOpRef k = kernel(input({256, 512}).matmul(input({512, 128})));
  return k;
}

}  // namespace

TEST(HeuristicRules, ThreadsShareKernelsWithEnoughWork) {
  // 256 x 128 x 512 iterations: the outermost loop over 8 cores; 24 x 20 x 40 (< 65536) on one
  EXPECT_EQ(opts_of(matmul(), avx2(8), "threads"), (std::vector<Opt>{{OptOp::THREAD, axis(matmul(), 256), 8}}));
  EXPECT_FALSE(firing(kernel(input({24, 40}).matmul(input({40, 20}))), avx2(8), "threads"));
  EXPECT_FALSE(firing(matmul(), avx2(1), "threads"));
}

TEST(HeuristicRules, StackedPiecesUpcastWholeAndVectorizeTheStoreLoop) {
  // three pieces stacked along a loop of 3: that loop whole, the 32-wide rows as vectors of 8
  // floats (AVX2) or 16 (AVX-512)
  const UOpRef k = kernel(Tensor::stack({input({6, 32}), input({6, 32}) * 2.0f, input({6, 32}).exp()}, 1));
  EXPECT_EQ(opts_of(k, avx2(), "stacked pieces upcast whole"),
            (std::vector<Opt>{upcast(axis(k, 3), 3), upcast(axis(k, 32), 8)}));
  EXPECT_EQ(opts_of(k, avx512(), "stacked pieces upcast whole"),
            (std::vector<Opt>{upcast(axis(k, 3), 3), upcast(axis(k, 32), 16)}));
  EXPECT_FALSE(firing(kernel(input({6, 32}).exp() + 1.0f), avx2(), "stacked pieces upcast whole"));
}

TEST(HeuristicRules, TransposesAreTiledAlongTheLoadsLinesAndTheStores) {
  // NHWC -> NCHW plus a per-channel bias: loads run along C, stores along W; a tile of 16
  // channels (one bias each: 16 registers hold them) x 4 pixels
  const UOpRef k = kernel(input({2, 20, 20, 32}).permute({0, 3, 1, 2}) + input({1, 32, 1, 1}));
  const int64_t c = axis(k, 32);
  std::vector<Opt> tile = opts_of(k, avx2(), "transpose tile");
  ASSERT_EQ(tile.size(), 2u);
  EXPECT_EQ(tile[0], upcast(c, 16));
  EXPECT_EQ(tile[1].amt, 4);
  EXPECT_NE(tile[1].axis, c);
  // (32, 4) -> (4, 32): a load steps 4 floats along the stores, within a cache line
  EXPECT_FALSE(firing(kernel(input({32, 4}).transpose(0, 1).contiguous()), avx2(), "transpose tile"));
}

TEST(HeuristicRules, ShortInnerLoopsUpcastWholeUntilSixteenElements) {
  // stored in 2x2 windows of 5-wide rows: 2, 2 and then 5 (20 >= 16 elements of straight-line code)
  const UOpRef k = kernel(input({3, 4, 10, 10}).reshape({3, 4, 5, 2, 5, 2}).permute({0, 1, 2, 4, 3, 5}).contiguous());
  const std::vector<Opt> opts = opts_of(k, avx2(), "short inner loops upcast whole");
  ASSERT_EQ(opts.size(), 3u);
  EXPECT_EQ(std::vector<int64_t>({opts[0].amt, opts[1].amt, opts[2].amt}), (std::vector<int64_t>{2, 2, 5}));
  // a 16-wide innermost loop is the C compiler's to vectorize
  EXPECT_FALSE(firing(kernel(input({4, 16}) * 2.0f), avx2(), "short inner loops upcast whole"));
}

TEST(HeuristicRules, MatmulRegisterTileFillsThreeQuartersOfTheRegisters) {
  // columns in two vectors, rows as many as the accumulators allow: AVX2's 12 (of 16 registers)
  // make a 4x16 tile (2 x 4 = 8 vectors), AVX-512's 24 (of 32) an 8x32 tile (2 x 8 = 16)
  const UOpRef& k = matmul();
  const int64_t rows = axis(k, 256), cols = axis(k, 128);
  EXPECT_TRUE(firing(k, avx2(), "register tile of reused loads"));
  EXPECT_EQ(opts_of(k, avx2(), "register tile upcasts"), (std::vector<Opt>{upcast(rows, 4), upcast(cols, 16)}));
  EXPECT_EQ(opts_of(k, avx512(), "register tile upcasts"), (std::vector<Opt>{upcast(rows, 8), upcast(cols, 32)}));
  // elementwise kernels, and a sum of everything (no output loop), have no tile
  EXPECT_FALSE(firing(kernel(input({64, 64}).exp()), avx2(), "register tile of reused loads"));
  EXPECT_FALSE(firing(kernel(input({4096}).sum()), avx2(), "register tile upcasts"));
}

TEST(HeuristicRules, TheTilesWiderLoopGoesOutside) {
  // the column blocks (32 wide) outside the row blocks (8): B, read along the columns, is streamed
  // once per wider block
  const UOpRef& k = matmul();
  EXPECT_EQ(opts_of(k, avx512(), "wider tile loop outside"),
            (std::vector<Opt>{{OptOp::SWAP, axis(k, 256), axis(k, 128)}}));
  // a 20-wide row upcast whole leaves no outer loop of columns to move
  EXPECT_FALSE(firing(kernel(input({24, 40}).matmul(input({40, 20}))), avx512(), "wider tile loop outside"));
}

TEST(HeuristicRules, RowSumsAccumulateVectorsAlongTheReducedLoop) {
  // sums along contiguous rows: no load reads neighbours along the outputs, so the 64-long rows
  // are summed in two vectors (16 floats on AVX2, 32 on AVX-512), beside a tile of rows
  const UOpRef k = kernel(input({16, 32, 64}).sum({2}));
  const int64_t row = axis(k, 64, AxisType::REDUCE);
  EXPECT_TRUE(firing(k, avx2(), "vector accumulators along a reduced loop"));
  const std::vector<Opt> narrow = opts_of(k, avx2(), "reduced loop unrolled into vectors");
  const std::vector<Opt> wide = opts_of(k, avx512(), "reduced loop unrolled into vectors");
  EXPECT_EQ(narrow, std::vector<Opt>{unroll(row, 16)});
  EXPECT_EQ(wide, std::vector<Opt>{unroll(row, 32)});
  // a matmul's outputs are contiguous and fill vectors: no unroll
  EXPECT_FALSE(firing(matmul(), avx2(), "vector accumulators along a reduced loop"));
  EXPECT_FALSE(firing(matmul(), avx2(), "reduced loop unrolled into vectors"));
}

TEST(HeuristicRules, TilesShrinkToFitBesideExpAccumulators) {
  // a softmax's sum of exps: one accumulator per 8 registers (4 on AVX-512, 2 on AVX2); the 256-long
  // rows take 2 vectors, so AVX-512 keeps 2 rows and AVX2 none beside them
  const Tensor x = input({64, 256});
  const UOpRef k = kernel((x - x.max({1}, true)).exp().sum({1}));
  const auto wide = firing(k, avx512(), "tile fits the vector accumulators");
  ASSERT_TRUE(wide);
  EXPECT_NE(wide->decisions.find("tile [axis=" + std::to_string(axis(k, 64)) + " amt=2]"), std::string::npos)
      << wide->decisions;
  const auto narrow = firing(k, avx2(), "tile fits the vector accumulators");
  ASSERT_TRUE(narrow);
  EXPECT_NE(narrow->decisions.find("tile []"), std::string::npos) << narrow->decisions;
  // a plain row sum's tile fits beside its two vectors: 8 rows x 2 on AVX-512 (24 accumulators)
  EXPECT_FALSE(firing(kernel(input({16, 32, 64}).sum({2})), avx512(), "tile fits the vector accumulators"));
}

TEST(HeuristicRules, FusedSoftmaxRowsAreVectorsNotTiles) {
  // max, sum and the row's outputs in one kernel: the reductions are broadcast along the row, so
  // the tile is dropped; the row's outputs become vectors and both reductions accumulate vectors
  const UOpRef k = kernel(input({64, 256}).softmax());
  const auto dropped = firing(k, avx512(), "no tile beside reductions broadcast along it");
  ASSERT_TRUE(dropped);
  EXPECT_NE(dropped->decisions.find("tile []"), std::string::npos) << dropped->decisions;
  const std::vector<Opt> opts = opts_of(k, avx512(), "reduced loop unrolled into vectors");
  ASSERT_EQ(opts.size(), 3u);
  EXPECT_EQ(opts[0].op, OptOp::UPCAST);
  EXPECT_EQ(opts[0].amt, 16);  // one AVX-512 vector of the row's outputs
  EXPECT_EQ(opts[1].op, OptOp::UNROLL);
  EXPECT_EQ(opts[2].op, OptOp::UNROLL);
  EXPECT_NE(opts[1].axis, opts[2].axis);
  // a row sum is not broadcast along anything
  EXPECT_FALSE(firing(kernel(input({16, 32, 64}).sum({2})), avx512(), "no tile beside reductions broadcast along it"));
}

TEST(HeuristicRules, TilesAvoidLoopsThatMisalignTheVectorLoads) {
  // a 1-channel 5x5 conv's weight gradient: the reduced output row ox is the vector axis, and the
  // kernel row kx shifts those loads by one float: the tile takes the kernel column ky instead
  Tensor w = input({4, 1, 5, 5});
  w.requires_grad_();
  const UOpRef k = kernel((input({2, 1, 12, 12}).conv2d(w) * input({2, 4, 8, 8})).sum().gradient({w}).at(0));
  std::vector<int64_t> ky_kx;  // the output loops of 5, outermost first
  for (const UOp* r : codegen::ranges_of(k))
    if (codegen::axis_type(r) == AxisType::LOOP && codegen::range_size(r) == 5) ky_kx.push_back(codegen::axis_id(r));
  ASSERT_EQ(ky_kx.size(), 2u);
  EXPECT_TRUE(firing(k, avx2(), "tile avoids loops misaligned with the vector axis"));
  const std::vector<Opt> tile = opts_of(k, avx2(), "register tile upcasts");
  EXPECT_NE(std::find(tile.begin(), tile.end(), upcast(ky_kx[0], 5)), tile.end()) << codegen::opts_to_string(tile);
  for (const Opt& o : tile) EXPECT_NE(o.axis, ky_kx[1]) << codegen::opts_to_string(tile);
  // a row sum's tile of rows shifts its vector loads by whole rows
  const UOpRef row_sums = kernel(input({16, 32, 64}).sum({2}));
  EXPECT_FALSE(firing(row_sums, avx2(), "tile avoids loops misaligned with the vector axis"));
}

TEST(HeuristicRules, WorkGroupsShareFewOutputsLongReductions) {
  // 4096 values into one: a GROUP of 256 work-items, each summing a share
  const UOpRef sum = kernel(input({4096}).sum());
  EXPECT_EQ(opts_of(sum, gpu, "group reduce for few outputs"),
            (std::vector<Opt>{{OptOp::GROUP, axis(sum, 4096, AxisType::REDUCE), 256}}));
  EXPECT_FALSE(firing(matmul(), gpu, "group reduce for few outputs"));
  EXPECT_FALSE(firing(sum, avx2(), "group reduce for few outputs"));  // not a rule of the CPU's
}

TEST(HeuristicRules, WorkGroupsTileReductionsAndLineElementwiseKernels) {
  // a matmul's outputs in 16x16 work-groups, the groups along the remaining 16 row blocks
  const UOpRef& k = matmul();
  const int64_t rows = axis(k, 256), cols = axis(k, 128);
  EXPECT_EQ(opts_of(k, gpu, "local tile of a reduction's outputs"),
            (std::vector<Opt>{{OptOp::LOCAL, cols, 16}, {OptOp::LOCAL, rows, 16}}));
  EXPECT_EQ(opts_of(k, gpu, "a work-group per outer iteration"), (std::vector<Opt>{{OptOp::THREAD, rows, 16}}));
  EXPECT_FALSE(firing(k, gpu, "local line along the innermost loop"));
  // elementwise: a line of 64 (the largest power of two dividing the row, up to 256)
  const UOpRef e = kernel(input({33, 64}).exp() + 1.0f);
  EXPECT_EQ(opts_of(e, gpu, "local line along the innermost loop"),
            (std::vector<Opt>{{OptOp::LOCAL, axis(e, 64), 64}}));
  EXPECT_FALSE(firing(e, gpu, "local tile of a reduction's outputs"));
  // one loop, all of it in one work-group: nothing left to spread over groups
  EXPECT_FALSE(firing(kernel(input({256}).exp()), gpu, "a work-group per outer iteration"));
}

TEST(HeuristicRules, Debug4PrintsEachRuleThatFired) {
  Context ctx({{"DEBUG", 4}});
  testing::internal::CaptureStderr();
  const std::vector<Opt> opts = codegen::hand_coded_opts(matmul(), avx2(8));
  const std::string printed = testing::internal::GetCapturedStderr();
  for (const heuristics::Firing& f : heuristics::choose_opts(matmul(), avx2(8)).fired)
    EXPECT_NE(printed.find("heuristic rule \"" + f.rule + "\""), std::string::npos) << printed;
  EXPECT_NE(printed.find("SWAP("), std::string::npos) << printed;
  EXPECT_EQ(opts, heuristics::choose_opts(matmul(), avx2(8)).opts);
}
