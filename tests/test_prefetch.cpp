// Software prefetch (codegen/prefetch.cpp): which loads of which kernels prefetch, and how far
// ahead. Results with prefetches are checked against the kernels without opts in
// test_streaming_stores.cpp (its targets prefetch too); a prefetch cannot change them anyway.
#include <gtest/gtest.h>

#include <string>

#include "codegen/codegen.h"
#include "kiln/kiln.h"
#include "reference.h"

using namespace kiln;

namespace {

codegen::Program program_with_cache(const Tensor& t, int64_t cache_bytes) {
  const std::vector<ScheduleItem> items = t.schedule();
  EXPECT_EQ(items.size(), 1u);
  const codegen::Target target{.renderer = &renderer::c_renderer(), .vector_bytes = 64, .vector_registers = 32,
                               .cache_bytes = cache_bytes};
  return codegen::to_program(items.at(0).ast, target);
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) n++;
  return n;
}

TEST(Prefetch, ATileReReadingItsSlabFetchesTheNextSlab) {
  // A Winograd weight gradient's shape: per tile position p a sum over images and tiles of
  // (8 images, 16 positions, 25 tiles, 32 channels) slabs. Each block of 8 output channels
  // re-reads the position's slab, so the loads fetch the next position's, 25 x 32 floats on.
  const Tensor dm = kt::make(ref::random({8, 16, 25, 32}, 1)), v = kt::make(ref::random({8, 16, 25, 32}, 2));
  const Tensor du = (dm.reshape({8, 16, 25, 32, 1}) * v.reshape({8, 16, 25, 1, 32})).sum({0, 2});
  const codegen::Program p = program_with_cache(du, 64 * 1024);
  EXPECT_GE(count(p.source, "__builtin_prefetch("), 2u) << p.source;
  EXPECT_EQ(count(p.source, "__builtin_prefetch("), count(p.source, "+800);")) << p.source;
  // inputs of 400 KiB each: within a 1 MiB cache, nothing to prefetch
  EXPECT_EQ(count(program_with_cache(du, 1024 * 1024).source, "__builtin_prefetch("), 0u);
  EXPECT_EQ(count(program_with_cache(du, 0).source, "__builtin_prefetch("), 0u);
}

TEST(Prefetch, ABroadcastOperandSteppingAnElementFetchesAhead) {
  // a matmul's rows of a (broadcast along the tile, one element per step of the reduction) dwell
  // on each line: they fetch a few KiB ahead along the rows (rows of 32 floats: 20 rows on)
  const Tensor a = kt::make(ref::random({1024, 32}, 3)), b = kt::make(ref::random({32, 32}, 4));
  const codegen::Program p = program_with_cache(a.matmul(b), 64 * 1024);
  EXPECT_GE(count(p.source, "__builtin_prefetch((data1+"), 1u) << p.source;
  EXPECT_EQ(count(p.source, "__builtin_prefetch((data2+"), 0u) << "b (4 KiB) stays in cache:\n" << p.source;
}

TEST(Prefetch, StreamingLoadsLeaveItToTheHardware) {
  // sums over 8 rows 256 floats apart, each output read once: every step of every load takes a new
  // line, as the hardware prefetchers expect
  const Tensor x = kt::make(ref::random({256, 8, 256}, 5));
  const codegen::Program p = program_with_cache(x.sum({1}), 64 * 1024);
  EXPECT_EQ(count(p.source, "__builtin_prefetch("), 0u) << p.source;
}

}  // namespace
