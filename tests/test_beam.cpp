// Kernel opts as records and BEAM search: any sequence of legal opts computes what the kernel
// without opts computes (random opts on kernels of many shapes), opts print and parse, illegal ones
// are refused with the opt named, and BEAM's answers are cached on disk, survive damage to the
// cache, and never change results (a BEAM-optimized matmul against naive float64 loops).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>

#include "codegen/codegen.h"
#include "engine/beam_search.h"
#include "error_message.h"
#include "opt_checks.h"
#include "kiln/kiln.h"
#include "runtime/device.h"
#include "support/env.h"
#include "temp_cache.h"

using namespace kiln;
using codegen::Opt;
using codegen::OptOp;

namespace {

// `f` throws a kiln::Error whose message contains `text`.
void expect_error(const std::function<void()>& f, const std::string& text) {
  const std::string message = kt::error_of(f);
  EXPECT_NE(message.find(text), std::string::npos) << "message: " << message;
}

runtime::Device& cpu() { return runtime::get_device("CPU"); }

codegen::Target target_of(runtime::Device& dev, bool optimize = true) {
  return {.renderer = &renderer::renderer_for(dev.language()),
          .max_threads = dev.max_threads(),
          .optimize = optimize,
          .vector_bytes = dev.vector_bytes(),
          .vector_registers = dev.vector_registers()};
}

// Kernels of many shapes: matmuls (odd sizes, batched), a conv, reductions over each axis, a
// softmax (several reductions in one kernel), argmax (integer output), broadcasting, padding (gated
// loads), integer math, float64, a cumulative sum.
std::vector<UOpRef> sample_kernels() {
  Tensor a = Tensor::randn({24, 40}).realize(), b = Tensor::randn({40, 20}).realize();
  Tensor c = Tensor::randn({3, 16, 8}).realize(), d = Tensor::randn({3, 8, 12}).realize();
  Tensor img = Tensor::randn({2, 3, 10, 10}).realize(), w = Tensor::randn({4, 3, 3, 3}).realize();
  Tensor x = Tensor::randn({33, 64}).realize(), col = Tensor::randn({16, 1}).realize(), row = Tensor::randn({1, 32}).realize();
  Tensor ints = Tensor::randint({12, 30}, -50, 50).realize(), divs = Tensor::randint({12, 30}, 1, 9).realize();
  std::vector<Tensor> programs = {a.matmul(b),
                                  c.matmul(d),
                                  img.conv2d(w, std::nullopt, 1, 1, 1),
                                  x.sum({0}),
                                  x.sum({1}),
                                  x.max({1}),
                                  x.softmax(1),
                                  x.argmax(1),
                                  col * row + 1.0f,
                                  x.pad({{1, 2}, {3, 0}}).sum({1}),
                                  ints.idiv(divs) + ints.mod(divs),
                                  ints.sum({1}),
                                  x.cast(dtypes::float64).mean({0}),
                                  x.cumsum(1)};
  std::vector<UOpRef> kernels;
  for (const Tensor& t : programs)
    for (const ScheduleItem& item : t.schedule()) kernels.push_back(item.ast);
  return kernels;
}

}  // namespace

TEST(Opts, PrintAndParseBack) {
  std::vector<Opt> opts = {{OptOp::THREAD, 0, 2}, {OptOp::UPCAST, 1, 4}, {OptOp::UNROLL, 2, 16}, {OptOp::SWAP, 0, 3}};
  EXPECT_EQ(opts[1].str(), "UPCAST(axis=1, amt=4)");
  EXPECT_EQ(codegen::parse_opts(codegen::opts_to_string(opts)), opts);
  for (const char* bad : {"UPCAST(axis=1)", "SPLIT(axis=1, amt=2)", "UPCAST(axis=x, amt=2)", "UPCAST(axis=1, amt=2"})
    expect_error([&] { codegen::parse_opts(bad); }, "expected a line like 'UPCAST(axis=1, amt=4)'");
}

// Damaged opt lists (flipped, cut, spliced with tokens such as huge or negative numbers): each one
// parses and then applies or not, or throws kiln::Error; none crashes or reads out of bounds (ASan).
TEST(Opts, MutatedOptListsParseOrThrowKilnError) {
  Tensor a = Tensor::randn({24, 40}).realize(), b = Tensor::randn({40, 20}).realize();
  const UOpRef ast = a.matmul(b).schedule().at(0).ast;
  const codegen::Target target = target_of(cpu());
  const std::string seed = codegen::opts_to_string(codegen::hand_coded_opts(ast, target)) +
                           "SWAP(axis=0, amt=1)\nPADTO(axis=1, amt=8)\n";
  const std::vector<std::string> tokens = {"-1", "0", "99999999999999999999", "9223372036854775807", "(", ")", ", amt=",
                                           "(axis=", "UNROLL", "SWAP", "PADTO", "\n", " ", "x", ""};
  std::mt19937 rng(20261125);
  auto below = [&](size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  int parsed = 0, rejected = 0;
  const int iterations = kt::fuzz_iterations(3000);
  for (int i = 0; i < iterations; i++) {
    std::string text = seed;
    for (int edits = 1 + static_cast<int>(below(3)); edits > 0; edits--) {
      switch (below(3)) {
        case 0: if (!text.empty()) text[below(text.size())] ^= static_cast<char>(1 << below(8)); break;
        case 1: text.resize(below(text.size() + 1)); break;
        default: {
          const size_t at = below(text.size() + 1);
          text.replace(at, below(6), tokens[below(tokens.size())]);
        }
      }
    }
    try {
      codegen::apply_opts(ast, codegen::parse_opts(text), target);
      parsed++;
    } catch (const Error&) {
      rejected++;
    }
  }
  EXPECT_GT(parsed, 30);
  EXPECT_GT(rejected, 1000);
}

TEST(Opts, IllegalOptsAreRefusedByName) {
  Tensor a = Tensor::randn({24, 40}).realize(), b = Tensor::randn({40, 20}).realize();
  const UOpRef ast = a.matmul(b).schedule().at(0).ast;  // ranges 0 (24 rows), 1 (20 cols), 2 (40, reduced)
  const codegen::Target target = target_of(cpu());
  EXPECT_TRUE(codegen::apply_opt(ast, {OptOp::UPCAST, 1, 4}, target));
  EXPECT_FALSE(codegen::apply_opt(ast, {OptOp::UPCAST, 1, 3}, target));   // 3 does not divide 20
  EXPECT_FALSE(codegen::apply_opt(ast, {OptOp::UPCAST, 2, 4}, target));   // a reduced loop
  EXPECT_FALSE(codegen::apply_opt(ast, {OptOp::UNROLL, 0, 4}, target));   // an output loop
  EXPECT_FALSE(codegen::apply_opt(ast, {OptOp::UPCAST, 9, 2}, target));   // no such loop
  EXPECT_FALSE(codegen::apply_opt(ast, {OptOp::SWAP, 0, 2}, target));     // with a reduced loop
  EXPECT_FALSE(codegen::apply_opt(ast, {OptOp::PADTO, 1, 4}, target));    // 20 is a multiple of 4 already
  EXPECT_TRUE(codegen::apply_opt(ast, {OptOp::PADTO, 1, 8}, target));
  EXPECT_TRUE(codegen::apply_opt(ast, {OptOp::PADTO, 2, 16}, target));    // reduced loops too
  EXPECT_FALSE(codegen::apply_opt(ast, {OptOp::PADTO, 1, int64_t{1} << 62}, target));  // past any tile
  // one UNROLL per kernel
  expect_error([&] { codegen::apply_opts(ast, {{OptOp::UNROLL, 2, 8}, {OptOp::UNROLL, 2, 5}}, target); },
               "UNROLL(axis=2, amt=5) does not apply");
}

TEST(Opts, RandomLegalOptsNeverChangeResults) {
  kt::TempCache cache;
  std::mt19937 rng(20261125);
  const codegen::Target noopt = target_of(cpu(), false), target = target_of(cpu());
  int tried = 0;
  for (const UOpRef& ast : sample_kernels()) {
    const kt::WithoutOpts reference(ast, cpu(), noopt, rng);
    for (int trial = 0; trial < 6; trial++) {
      std::vector<Opt> opts;
      UOpRef k = ast;
      const int steps = std::uniform_int_distribution<int>(1, 4)(rng);
      for (int s = 0; s < steps; s++) {
        std::vector<Opt> moves = codegen::possible_opts(k, target);
        if (moves.empty()) break;
        opts.push_back(moves[std::uniform_int_distribution<size_t>(0, moves.size() - 1)(rng)]);
        k = codegen::apply_opt(k, opts.back(), target);
        ASSERT_TRUE(k) << "possible_opts offered " << opts.back().str() << ", which does not apply";
      }
      reference.expect_same_with(opts, target);
      tried++;
    }
  }
  EXPECT_GE(tried, 60);
}

// Runs `ast` with `opts` on buffers followed by guard bytes, from `initial`; expects the guards
// untouched: a padded loop's extra iterations must not store past a buffer's end.
void expect_nothing_written_past_the_end(const UOpRef& ast, const codegen::Target& target, const std::vector<Opt>& opts,
                                         const std::vector<std::vector<unsigned char>>& initial) {
  constexpr size_t kGuard = 4096;
  constexpr unsigned char kPoison = 0xAB;
  const engine::Candidate c = engine::compile_candidate(ast, cpu(), target, opts);
  std::vector<std::unique_ptr<unsigned char, decltype(&std::free)>> memory;
  std::vector<void*> addresses;
  for (const std::vector<unsigned char>& contents : initial) {
    const size_t bytes = (contents.size() + kGuard + 63) / 64 * 64;
    memory.emplace_back(static_cast<unsigned char*>(std::aligned_alloc(64, bytes)), &std::free);
    std::memset(memory.back().get(), kPoison, bytes);
    std::memcpy(memory.back().get(), contents.data(), contents.size());
    addresses.push_back(memory.back().get());
  }
  c.runtime->launch_grid(addresses, {}, {c.program.global_size, c.program.local_size}, true);
  for (size_t i = 0; i < initial.size(); i++)
    for (size_t b = initial[i].size(); b < initial[i].size() + kGuard; b++)
      ASSERT_EQ(memory[i].get()[b], kPoison) << kernel_name(ast) << " with " << codegen::opts_to_string(opts)
                                             << "wrote byte " << b - initial[i].size() << " past buffer " << i;
}

// PADTO on every loop of the sample kernels it applies to, alone and followed by the tile of its
// amount (which it makes legal): the same results as without opts, nothing stored past the end.
TEST(Opts, PaddedLoopsComputeTheSameAndStoreNothingPastTheEnd) {
  kt::TempCache cache;
  std::mt19937 rng(20261126);
  const codegen::Target noopt = target_of(cpu(), false), target = target_of(cpu());
  int padded = 0, tiled = 0;
  for (const UOpRef& ast : sample_kernels()) {
    const kt::WithoutOpts reference(ast, cpu(), noopt, rng);
    engine::KernelBuffers shape(ast, cpu());
    std::vector<std::vector<unsigned char>> initial;
    for (size_t i = 0; i < shape.count(); i++) initial.push_back(kt::random_bytes(shape.dtype(i), shape.bytes(i), rng));
    for (const UOp* r : codegen::ranges_of(ast))
      for (int64_t amt : {8, 16}) {
        std::vector<Opt> opts = {{OptOp::PADTO, codegen::axis_id(r), amt}};
        if (!codegen::opt_applies(ast, opts[0], target)) continue;
        const Opt tile{codegen::axis_type(r) == AxisType::REDUCE ? OptOp::UNROLL : OptOp::UPCAST, codegen::axis_id(r), amt};
        if (codegen::opt_applies(codegen::apply_opt(ast, opts[0], target), tile, target)) opts.push_back(tile);
        reference.expect_same_with(opts, target);
        expect_nothing_written_past_the_end(ast, target, opts, initial);
        padded++;
        tiled += opts.size() > 1;
      }
  }
  EXPECT_GE(padded, 30);
  EXPECT_GE(tiled, 15);
}

TEST(Beam, SearchesOnceThenAnswersFromTheDiskCache) {
  kt::TempCache cache;
  Tensor a = Tensor::randn({64, 48}).realize(), b = Tensor::randn({48, 32}).realize();
  const UOpRef ast = a.matmul(b).schedule().at(0).ast;
  const codegen::Target target = target_of(cpu());
  const engine::BeamStats before = engine::beam_stats();
  const std::vector<Opt> opts = engine::beam_search(ast, cpu(), target, 2);
  EXPECT_EQ(engine::beam_stats().searches, before.searches + 1);
  EXPECT_GT(engine::beam_stats().timed, before.timed + 10);  // it really tried candidates
  EXPECT_NO_THROW(codegen::apply_opts(ast, opts, target));

  EXPECT_EQ(engine::beam_search(ast, cpu(), target, 2), opts);
  EXPECT_EQ(engine::beam_stats().cache_hits, before.cache_hits + 1);
  EXPECT_EQ(engine::beam_stats().searches, before.searches + 1);

  // A damaged entry (here: cut short) is noticed and searched again.
  for (const auto& e : std::filesystem::recursive_directory_iterator(cache.dir))
    if (e.path().extension() == ".opts") std::filesystem::resize_file(e.path(), 3);
  engine::beam_search(ast, cpu(), target, 2);
  EXPECT_EQ(engine::beam_stats().searches, before.searches + 2);
}

TEST(Beam, BeamOptimizedMatmulMatchesNaiveLoops) {
  kt::TempCache cache;
  const int64_t n = 24, k = 40, m = 20;
  Tensor a = Tensor::randn({n, k}).realize(), b = Tensor::randn({k, m}).realize();
  const std::vector<float> av = a.to_vector<float>(), bv = b.to_vector<float>();
  const int64_t searches = engine::beam_stats().searches;
  std::vector<float> got;
  {
    env::ScopedEnv beam("BEAM", "2");
    got = a.matmul(b).to_vector<float>();
  }
  EXPECT_EQ(engine::beam_stats().searches, searches + 1);
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < m; j++) {
      double want = 0;
      for (int64_t x = 0; x < k; x++) want += double(av[i * k + x]) * bv[x * m + j];
      ASSERT_NEAR(got[i * m + j], want, 1e-4 * (1 + std::fabs(want)));
    }
}

TEST(Beam, WidthMustBePositive) {
  Tensor a = Tensor::randn({8, 8}).realize();
  expect_error([&] { engine::beam_search(a.sum({1}).schedule().at(0).ast, cpu(), target_of(cpu()), 0); }, "BEAM must be >= 1, got 0");
}
