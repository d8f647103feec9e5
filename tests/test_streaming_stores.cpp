// Streaming stores: kernels that store at least codegen::Target::cache_bytes (the CPU:
// its last-level cache) write whole cache lines past the caches (KILN_STREAM in C). Checked: which
// kernels and stores get them, and that their results match the same kernel without opts (the
// reference), with vectors at 64-byte aligned addresses and at misaligned ones (stored plainly).
#include <gtest/gtest.h>

#include <random>

#include "codegen/codegen.h"
#include "kiln/kiln.h"
#include "opt_checks.h"
#include "reference.h"
#include "runtime/device.h"

using namespace kiln;

namespace {

bool has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

codegen::Target avx512_streaming_from(int64_t bytes) {
  return {.renderer = &renderer::c_renderer(), .vector_bytes = 64, .vector_registers = 32, .cache_bytes = bytes};
}

UOpRef only_kernel(const Tensor& t) {
  const std::vector<ScheduleItem> items = t.schedule();
  EXPECT_EQ(items.size(), 1u);
  return items.at(0).ast;
}

TEST(StreamingStores, KernelsStoringAtLeastTheThresholdStreamTheirWholeLineVectors) {
  // a matmul's (64, 256) float32 output: 64 KiB stored, as 16-lane vectors along its rows
  const Tensor y = kt::make(ref::random({64, 32}, 1)).matmul(kt::make(ref::random({32, 256}, 8)));
  const UOpRef ast = only_kernel(y);
  const codegen::Program at = codegen::to_program(ast, avx512_streaming_from(64 * 1024));
  EXPECT_TRUE(has(at.source, "KILN_STREAM((float_x16*)(data0+")) << at.source;
  EXPECT_TRUE(has(at.source, "KILN_STREAM_FENCE();")) << at.source;
  const codegen::Program below = codegen::to_program(ast, avx512_streaming_from(64 * 1024 + 4));
  EXPECT_FALSE(has(below.source, "KILN_STREAM")) << below.source;
  const codegen::Program never = codegen::to_program(ast, avx512_streaming_from(0));
  EXPECT_FALSE(has(never.source, "KILN_STREAM")) << never.source;
}

TEST(StreamingStores, OnlyVectorsOfAWholeLineStream) {
  // a 20-wide output row is a 16-lane and a 4-lane vector: the 4-lane one is a plain store
  const Tensor c = kt::make(ref::random({24, 40}, 2)).matmul(kt::make(ref::random({40, 20}, 3)));
  const codegen::Program p = codegen::to_program(only_kernel(c), avx512_streaming_from(1));
  EXPECT_TRUE(has(p.source, "KILN_STREAM((float_x16*)")) << p.source;
  EXPECT_FALSE(has(p.source, "KILN_STREAM((float_x4*)")) << p.source;
  EXPECT_TRUE(has(p.source, "*(float_x4*)(data0+")) << p.source;
}

TEST(StreamingStores, ResultsMatchTheKernelWithoutOpts) {
  // On this machine's vectors (streamed where they are a 64-byte line). The matmul's 20-wide rows
  // put its 16-lane vectors at 80-byte steps: three rows in four start misaligned.
  runtime::Device& cpu = runtime::get_device("CPU");
  const codegen::Target streaming{.renderer = &renderer::c_renderer(),
                                  .max_threads = cpu.max_threads(),
                                  .vector_bytes = cpu.vector_bytes(),
                                  .vector_registers = cpu.vector_registers(),
                                  .cache_bytes = 1};
  const codegen::Target noopt{.renderer = &renderer::c_renderer(), .optimize = false};
  std::mt19937 rng(7);
  const Tensor aligned = kt::make(ref::random({64, 32}, 4)).matmul(kt::make(ref::random({32, 256}, 9)));
  const Tensor c = kt::make(ref::random({24, 40}, 5)).matmul(kt::make(ref::random({40, 20}, 6)));
  const Tensor wide = kt::f64(ref::random({32, 16}, 7)).matmul(kt::f64(ref::random({16, 64}, 10)));  // double_x8
  for (const Tensor& t : {aligned, c, wide}) {
    const UOpRef ast = only_kernel(t);
    kt::WithoutOpts(ast, cpu, noopt, rng).expect_same_with(codegen::hand_coded_opts(ast, streaming), streaming);
  }
}

}  // namespace
