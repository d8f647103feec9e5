// Matmul tiles (schedule/matmul_tiles.cpp): the tensor graph of a matmul is the same on every device;
// the scheduler, reading the device's Target, copies the operands of a device with SIMD vectors into
// its register tiles (padded to whole tiles, a large right operand in column panels) and those of no
// other; results match naive float64 loops either way.
#include <gtest/gtest.h>
#include <kiln/device.h>
#include <kiln/kiln.h>

#include <memory>
#include <string>
#include <vector>

#include "kiln/ir/pattern_matcher.h"
#include "reference.h"
#include "scalar_device.h"
#include "schedule/schedule.h"
#include "support/env.h"

namespace {

using namespace kiln;
using namespace kiln::runtime;

const std::string& scalar_device() {
  static const std::string name = kt::register_scalar_device("SCALARDEV");
  return name;
}

using kt::without_buffers;

Tensor on(const std::string& device, const ref::NdArray& a) {
  env::ScopedEnv dev("DEV", device);
  return kt::make(a);
}

struct Case {
  ref::Shape a, b;
};
// tile padding on the CPU (257: prime), a panel copy (512 with AVX2), batched, a matrix-vector product
const std::vector<Case> kCases = {{{257, 257}, {257, 257}}, {{512, 512}, {512, 512}}, {{3, 130, 129}, {129, 140}},
                                  {{1001, 700}, {700}}};

TEST(MatmulTiles, TensorGraphIsTheSameOnEveryDevice) {
  for (const Case& c : kCases) {
    ref::NdArray a = ref::random(c.a, 1), b = ref::random(c.b, 2);
    Tensor cpu = on("CPU", a).matmul(on("CPU", b));
    Tensor scalar = on(scalar_device(), a).matmul(on(scalar_device(), b));
    EXPECT_EQ(scalar.device(), scalar_device());
    EXPECT_EQ(without_buffers(cpu).get(), without_buffers(scalar).get())
        << ref::shape_str(c.a) << " @ " << ref::shape_str(c.b) << "\nCPU:\n"
        << print_graph(without_buffers(cpu)) << "\n"
        << scalar_device() << ":\n"
        << print_graph(without_buffers(scalar));
  }
}

TEST(MatmulTiles, ResultsMatchOnEveryDevice) {
  // 130 x 129 x 140 is past the padding's threshold: on the CPU both operands are copied padded
  const kt::Tol tol{1e-4, 1e-5 * 129};
  ref::NdArray a = ref::random({130, 129}, 3), b = ref::random({129, 140}, 4), a3 = ref::random({2, 130, 129}, 5);
  for (const std::string& device : {std::string("CPU"), scalar_device()}) {
    SCOPED_TRACE(device);
    EXPECT_TRUE(kt::matches(on(device, a).matmul(on(device, b)), ref::matmul(a, b), tol));
    EXPECT_TRUE(kt::matches(on(device, a3).matmul(on(device, b)), ref::matmul(a3, b), tol));
  }
}

// The kernel names of `t`'s schedule for a device of the given Target.
std::vector<std::string> kernels_for(const Tensor& t, schedule::Target target) {
  const schedule::Schedule s = schedule::build_schedule({t.uop()}, "CPU", [&](const std::string&) { return target; });
  std::vector<std::string> names;
  for (const ScheduleItem& item : schedule::schedule_items(s.linear)) names.push_back(item.name);
  return names;
}

const schedule::Target kNoVectors{.loops_in_order = true, .vector_bytes = 0, .vector_registers = 16};
const schedule::Target kAvx2{.loops_in_order = true, .vector_bytes = 32, .vector_registers = 16, .matmul_tile_rows = 6};
const schedule::Target kAvx512{.loops_in_order = true, .vector_bytes = 64, .vector_registers = 32, .matmul_tile_rows = 12};

using Names = std::vector<std::string>;

TEST(MatmulTiles, SizesWithoutTileDivisorsArePaddedWhereThereAreVectors) {
  Tensor a = Tensor::randn({257, 257}).realize(), b = Tensor::randn({257, 257}).realize();
  // rows to 264 (8s), columns to 272 (16s), the result stored whole and cut back
  EXPECT_EQ(kernels_for(a.matmul(b), kAvx2), (Names{"E_264_257", "E_257_272", "r_264_272_257", "E_257_257"}));
  EXPECT_EQ(kernels_for(a.matmul(b), kNoVectors), (Names{"r_257_257_257"}));
  // below the threshold the padding would cost more than it saves
  Tensor small = Tensor::randn({100, 100}).realize();
  EXPECT_EQ(kernels_for(small.matmul(small), kAvx2), (Names{"r_100_100_100"}));
}

TEST(MatmulTiles, LargeRightOperandsAreReadFromColumnPanels) {
  Tensor a = Tensor::randn({504, 512}).realize(), b = Tensor::randn({512, 512}).realize();
  // AVX2's two 8-float vectors: 16-column panels; AVX-512's wider tiles pay only from 2048
  EXPECT_EQ(kernels_for(a.matmul(b), kAvx2), (Names{"E_32_512_16", "r_504_512_512"}));
  EXPECT_EQ(kernels_for(a.matmul(b), kAvx512), (Names{"r_504_512_512"}));
  EXPECT_EQ(kernels_for(a.matmul(b), kNoVectors), (Names{"r_504_512_512"}));
  // 16-bit floats fill twice the columns per vector (summed in float32, cast back)
  Tensor h = b.cast(dtypes::float16).realize();
  EXPECT_EQ(kernels_for(a.cast(dtypes::float16).matmul(h), kAvx2), (Names{"E_16_512_32", "r_504_512_512"}));
  // batched right operands are read as they are
  Tensor b3 = Tensor::randn({2, 512, 512}).realize();
  EXPECT_EQ(kernels_for(a.matmul(b3), kAvx2), (Names{"r_2_504_512_512"}));
}

TEST(MatmulTiles, RowsArePaddedToTilesWithEnoughSums) {
  // 512 rows make tiles of at most 4 rows on AVX2 (8 sums, as many as two FMA units hold in flight):
  // padded to 516, 86 tiles of 6 (12 sums); AVX-512's 8-row tiles keep 16 sums as they are. 1000 rows
  // tile by 5 (10 sums). Smaller matmuls would lose more to the copies.
  Tensor a = Tensor::randn({512, 512}).realize(), b = Tensor::randn({512, 512}).realize();
  EXPECT_EQ(kernels_for(a.matmul(b), kAvx2), (Names{"E_516_512", "E_32_512_16", "r_516_512_512", "E_512_512"}));
  EXPECT_EQ(kernels_for(a.matmul(b), kAvx512), (Names{"r_512_512_512"}));
  Tensor a1000 = Tensor::randn({1000, 512}).realize();
  EXPECT_EQ(kernels_for(a1000.matmul(b), kAvx2), (Names{"E_32_512_16", "r_1000_512_512"}));
  Tensor small = Tensor::randn({256, 256}).realize();
  EXPECT_EQ(kernels_for(small.matmul(small), kAvx2), (Names{"r_256_256_256"}));
  // on this machine's own target, the padded product is the product
  const kt::Tol tol{1e-4, 1e-5 * 512};
  ref::NdArray x = ref::random({512, 512}, 6), y = ref::random({512, 512}, 7);
  EXPECT_TRUE(kt::matches(on("CPU", x).matmul(on("CPU", y)), ref::matmul(x, y), tol));
}

TEST(MatmulTiles, DebugNamesWhatWasDone) {
  Tensor a = Tensor::randn({257, 257}).realize(), b = Tensor::randn({257, 1024}).realize();
  env::ScopedEnv debug("DEBUG", "3");
  testing::internal::CaptureStderr();
  kernels_for(a.matmul(b), kAvx2);
  const std::string log = testing::internal::GetCapturedStderr();
  const std::string note =
      "matmul 257x257x1024: tile padding to 264x1024, panel copy of the right operand in 16-column panels";
  EXPECT_NE(log.find(note), std::string::npos) << log;
}

}  // namespace
