// The dispatch cache (realize()'s fast path): a graph of a structure realized before reuses that
// realize's prepared launches. Hits are counted and give the values naive float64 loops give
// (float32 tolerance of kt::matches); graphs differing in a constant, shape, dtype, device or
// setting never share a plan; results never share or lose their buffers.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "engine/dispatch_cache.h"
#include "engine/kernel_cache.h"
#include "kiln/kiln.h"
#include "reference.h"
#include "runtime/device.h"
#include "schedule/schedule.h"
#include "support/env.h"

using namespace kiln;

namespace {

int64_t hits() { return engine::dispatch_cache_hits(); }

// A graph over two inputs, and the same computation in naive float64 loops.
struct Case {
  std::string name;
  ref::Shape a_shape, b_shape;
  std::function<Tensor(const Tensor&, const Tensor&)> graph;
  std::function<ref::NdArray(const ref::NdArray&, const ref::NdArray&)> naive;
};

std::vector<Case> cases() {
  using ref::NdArray;
  return {
      {"elementwise", {4}, {4}, [](const Tensor& a, const Tensor& b) { return a * b + 2.0f; },
       [](const NdArray& a, const NdArray& b) { return ref::zip(a, b, [](double x, double y) { return x * y + 2; }); }},
      {"broadcast_relu", {3, 5}, {1, 5}, [](const Tensor& a, const Tensor& b) { return (a - b).relu(); },
       [](const NdArray& a, const NdArray& b) {
         return ref::zip(a, ref::expand(b, a.shape), [](double x, double y) { return std::max(x - y, 0.0); });
       }},
      {"reduce", {6, 7}, {6, 7}, [](const Tensor& a, const Tensor& b) { return (a * b).sum({1}); },
       [](const NdArray& a, const NdArray& b) {
         return ref::sum(ref::zip(a, b, [](double x, double y) { return x * y; }), {1});
       }},
      {"permuted", {3, 4}, {4, 3}, [](const Tensor& a, const Tensor& b) { return a.permute({1, 0}) + b * 0.5f; },
       [](const NdArray& a, const NdArray& b) {
         return ref::zip(ref::permute(a, {1, 0}), b, [](double x, double y) { return x + y * 0.5; });
       }},
      // several kernels: the max and the sum are reductions the exp depends on
      {"softmax_of_sum", {5, 8}, {5, 8}, [](const Tensor& a, const Tensor& b) { return (a + b).softmax(1); },
       [](const NdArray& a, const NdArray& b) {
         return ref::softmax(ref::zip(a, b, [](double x, double y) { return x + y; }), 1);
       }},
      {"input_read_twice", {2, 3}, {2, 3}, [](const Tensor& a, const Tensor& b) { return (a * a + b).sum(); },
       [](const NdArray& a, const NdArray& b) {
         return ref::sum(ref::zip(a, b, [](double x, double y) { return x * x + y; }));
       }},
  };
}

class Dispatch : public ::testing::Test {};

TEST_F(Dispatch, HitsGiveTheValuesOfNaiveLoops) {
  uint64_t seed = 1;
  for (const Case& c : cases()) {
    std::vector<Tensor> results;
    std::vector<ref::NdArray> wanted;
    for (int round = 0; round < 4; round++) {
      ref::NdArray a = ref::random(c.a_shape, seed++), b = ref::random(c.b_shape, seed++);
      const int64_t before = hits();
      Tensor t = c.graph(kt::make(a), kt::make(b));
      t.realize();
      // the first round may find a plan an earlier test left; every later round must
      if (round > 0) EXPECT_EQ(hits(), before + 1) << c.name << " round " << round;
      EXPECT_TRUE(kt::matches(t, c.naive(a, b))) << c.name << " round " << round;
      results.push_back(t);
      wanted.push_back(c.naive(a, b));
    }
    // every result kept its own buffer
    for (size_t i = 0; i < results.size(); i++) EXPECT_TRUE(kt::matches(results[i], wanted[i])) << c.name << " " << i;
  }
}

TEST_F(Dispatch, HitsGiveTheValuesOfTheFullPath) {
  uint64_t seed = 100;
  for (const Case& c : cases()) {
    ref::NdArray a = ref::random(c.a_shape, seed++), b = ref::random(c.b_shape, seed++);
    c.graph(kt::make(a), kt::make(b)).realize();  // records the plan
    Tensor fast = c.graph(kt::make(a), kt::make(b));
    const int64_t before = hits();
    fast.realize();
    EXPECT_EQ(hits(), before + 1) << c.name;
    std::vector<double> full;
    {
      env::ScopedEnv off("SCHEDULE_CACHE", "0");
      Tensor slow = c.graph(kt::make(a), kt::make(b));
      slow.realize();
      EXPECT_EQ(hits(), before + 1) << c.name << ": SCHEDULE_CACHE=0 turns the dispatch cache off too";
      full = kt::read(slow);
    }
    EXPECT_EQ(kt::read(fast), full) << c.name << ": the same kernels give the same bits";
  }
}

TEST_F(Dispatch, SeveralRootsInOneRealize) {
  for (int round = 0; round < 3; round++) {
    ref::NdArray a = ref::random({3, 4}, 30 + round), b = ref::random({3, 4}, 40 + round);
    Tensor ta = kt::make(a), tb = kt::make(b);
    Tensor product = ta * tb, total = (ta * tb).sum({0}), shifted = ta - 1.0f;
    const int64_t before = hits();
    Tensor::realize({product, total, shifted});
    if (round > 0) EXPECT_EQ(hits(), before + 1) << round;
    auto naive_product = ref::zip(a, b, [](double x, double y) { return x * y; });
    EXPECT_TRUE(kt::matches(product, naive_product)) << round;
    EXPECT_TRUE(kt::matches(total, ref::sum(naive_product, {0}))) << round;
    EXPECT_TRUE(kt::matches(shifted, ref::map(a, [](double x) { return x - 1; }))) << round;
  }
}

TEST_F(Dispatch, AHitSchedulesNothingNew) {
  ref::NdArray a = ref::random({16}, 7), b = ref::random({16}, 8);
  auto graph = [](const Tensor& x, const Tensor& y) { return (x * y).exp2() - x; };
  graph(kt::make(a), kt::make(b)).realize();
  const int64_t generated = engine::engine_stats().kernels_generated.load();
  const int64_t schedule_hits = schedule::schedule_cache_hits();
  const int64_t before = hits();
  for (int i = 0; i < 5; i++) graph(kt::make(b), kt::make(a)).realize();
  EXPECT_EQ(hits(), before + 5);
  EXPECT_EQ(engine::engine_stats().kernels_generated.load(), generated);
  EXPECT_EQ(schedule::schedule_cache_hits(), schedule_hits) << "a hit does not even reach the schedule cache";
}

TEST_F(Dispatch, ConstantsAreNotConfused) {
  ref::NdArray a = ref::random({8}, 11);
  Tensor x = kt::make(a);
  (x * 2.0f).realize();
  const int64_t before = hits();
  Tensor thrice = x * 3.0f;
  thrice.realize();
  EXPECT_EQ(hits(), before) << "another constant is another graph";
  EXPECT_TRUE(kt::matches(thrice, ref::map(a, [](double v) { return 3 * v; })));
  Tensor twice = x * 2.0f;
  twice.realize();
  EXPECT_EQ(hits(), before + 1);
  EXPECT_TRUE(kt::matches(twice, ref::map(a, [](double v) { return 2 * v; })));
}

TEST_F(Dispatch, ShapesAndDtypesAreNotConfused) {
  auto graph = [](const Tensor& x) { return x + x * x; };
  auto naive = [](const ref::NdArray& a) { return ref::map(a, [](double v) { return v + v * v; }); };
  ref::NdArray small = ref::random({4}, 12), large = ref::random({9}, 13), ints = ref::random_int({4}, 14, -50, 50);
  graph(kt::make(small)).realize();
  const int64_t before = hits();
  Tensor other_shape = graph(kt::make(large));
  other_shape.realize();
  Tensor other_dtype = graph(kt::i32(ints));
  other_dtype.realize();
  Tensor other_dtype_f64 = graph(kt::f64(small));
  other_dtype_f64.realize();
  EXPECT_EQ(hits(), before);
  EXPECT_TRUE(kt::matches(other_shape, naive(large)));
  EXPECT_TRUE(kt::matches(other_dtype, naive(ints)));
  EXPECT_EQ(other_dtype.dtype(), dtypes::int32);
  EXPECT_TRUE(kt::matches(other_dtype_f64, naive(small), kt::kF64));
}

TEST_F(Dispatch, AliasedInputsAreAnotherGraph) {
  ref::NdArray a = ref::random({5}, 15), b = ref::random({5}, 16);
  auto graph = [](const Tensor& x, const Tensor& y) { return x * y + y; };
  Tensor ta = kt::make(a), tb = kt::make(b);
  graph(ta, tb).realize();
  graph(kt::make(a), kt::make(b)).realize();
  const int64_t before = hits();
  Tensor same = graph(ta, ta);  // one input read three times: must not reuse the two-input plan
  same.realize();
  EXPECT_EQ(hits(), before);
  EXPECT_TRUE(kt::matches(same, ref::map(a, [](double v) { return v * v + v; })));
}

TEST_F(Dispatch, SettingsRetirePlans) {
  ref::NdArray a = ref::random({32}, 17);
  auto graph = [](const Tensor& x) { return (x * 1.25f).sum(); };
  graph(kt::make(a)).realize();
  graph(kt::make(a)).realize();
  const int64_t before = hits();
  {
    env::ScopedEnv noopt("NOOPT", "1");  // another kernel for the same graph
    Tensor t = graph(kt::make(a));
    t.realize();
    EXPECT_EQ(hits(), before) << "a plan made under other settings is not used";
    EXPECT_TRUE(kt::matches(t, ref::sum(ref::map(a, [](double v) { return 1.25 * v; }))));
    graph(kt::make(a)).realize();
    EXPECT_EQ(hits(), before + 1) << "a plan made under these settings is";
  }
  {
    env::ScopedEnv debug("DEBUG", "1");  // DEBUG wants the full path's output
    graph(kt::make(a)).realize();
    graph(kt::make(a)).realize();
    EXPECT_EQ(hits(), before + 1);
  }
}

TEST_F(Dispatch, APublicContextRetiresPlansAndRestoresSettings) {
  // kiln::Context (kiln/context.h) is how a program changes a setting after kiln has read it
  ref::NdArray a = ref::random({32}, 18);
  auto graph = [](const Tensor& x) { return (x * 0.75f).sum(); };
  graph(kt::make(a)).realize();
  const int64_t before = hits();
  {
    Context ctx({{"NOOPT", 1}, {"SPLIT_REDUCEOP", "0"}});
    EXPECT_EQ(env::get_int("NOOPT", 0), 1);
    EXPECT_EQ(env::get_string("SPLIT_REDUCEOP"), "0");
    Tensor t = graph(kt::make(a));
    t.realize();
    EXPECT_EQ(hits(), before) << "a plan made under other settings is not used";
    EXPECT_TRUE(kt::matches(t, ref::sum(ref::map(a, [](double v) { return 0.75 * v; }))));
  }
  EXPECT_EQ(env::get_int("NOOPT", 0), 0) << "restored after the scope";
  graph(kt::make(a)).realize();
  graph(kt::make(a)).realize();
  EXPECT_EQ(hits(), before + 1);
}

TEST_F(Dispatch, DevicesAreNotConfused) {
  std::vector<std::string> names = runtime::device_names();
  if (std::find(names.begin(), names.end(), "CL") == names.end()) GTEST_SKIP() << "no second device (CL)";
  ref::NdArray a = ref::random({6}, 18);
  auto on = [&](const std::string& device) {  // `a` in a buffer of `device`
    Tensor t = kt::make(a).to(device);
    t.realize();
    return t;
  };
  auto graph = [](const Tensor& x) { return x * 4.0f - 1.0f; };
  auto naive = ref::map(a, [](double v) { return 4 * v - 1; });
  graph(on("CPU")).realize();
  graph(on("CPU")).realize();
  Tensor cl_input = on("CL"), cpu_input = on("CPU");  // (their own realizes may hit)
  const int64_t before = hits();
  Tensor on_cl = graph(cl_input);
  on_cl.realize();
  EXPECT_EQ(hits(), before);
  EXPECT_EQ(on_cl.device(), "CL");
  EXPECT_TRUE(kt::matches(on_cl, naive));
  Tensor on_cpu = graph(cpu_input);
  on_cpu.realize();
  EXPECT_EQ(hits(), before + 1);
  EXPECT_EQ(on_cpu.device(), "CPU");
  EXPECT_TRUE(kt::matches(on_cpu, naive));
}

TEST_F(Dispatch, TheLeastRecentlyUsedPlanMakesRoom) {
  ref::NdArray a = ref::random({3}, 23);
  auto graph = [](const Tensor& x, int k) { return x + static_cast<float>(k); };  // a structure per k
  auto naive = [&](int k) { return ref::map(a, [k](double v) { return v + k; }); };
  graph(kt::make(a), 0).realize();
  for (int k = 1; k <= 70; k++) graph(kt::make(a), k).realize();  // more structures than the cache holds
  const int64_t before = hits();
  Tensor first = graph(kt::make(a), 0);
  first.realize();
  EXPECT_EQ(hits(), before) << "the oldest plan was dropped";
  EXPECT_TRUE(kt::matches(first, naive(0)));
  Tensor recent = graph(kt::make(a), 70);
  recent.realize();
  EXPECT_EQ(hits(), before + 1) << "a recent plan is still there";
  EXPECT_TRUE(kt::matches(recent, naive(70)));
}

TEST_F(Dispatch, ResultsNeverShareBuffers) {
  ref::NdArray a = ref::random({4}, 19), b = ref::random({4}, 20);
  Tensor ta = kt::make(a), tb = kt::make(b);
  auto sum = ref::zip(a, b, [](double x, double y) { return x + y; });
  std::vector<Tensor> kept;
  for (int i = 0; i < 5; i++) {
    Tensor dropped = ta + tb;  // realized, then freed: its memory goes back to the allocator
    dropped.realize();
    kept.push_back(ta + tb);
    kept.back().realize();
    kept.push_back((ta + tb) * static_cast<float>(i));  // reads the freed memory's next owner
    kept.back().realize();
  }
  std::vector<const UOp*> buffers;
  for (int i = 0; i < 5; i++) {
    EXPECT_TRUE(kt::matches(kept[2 * i], sum)) << i;
    EXPECT_TRUE(kt::matches(kept[2 * i + 1], ref::map(sum, [&](double v) { return v * i; }))) << i;
    buffers.push_back(kept[2 * i].uop().get());
  }
  std::sort(buffers.begin(), buffers.end());
  EXPECT_EQ(std::unique(buffers.begin(), buffers.end()), buffers.end()) << "two results share a buffer";
}

TEST_F(Dispatch, IntermediatesALiveTensorHoldsKeepTheirValues) {
  ref::NdArray a = ref::random({4, 6}, 21);
  auto naive_max = ref::max(a, {0}, true);
  for (int round = 0; round < 3; round++) {
    Tensor x = kt::make(a);
    // a column max is its own kernel, which the result reads (a row max would run inside the
    // result's kernel, once per row)
    Tensor m = x.max({0}, true);
    Tensor y = (x - m).exp();
    const int64_t before = hits();
    y.realize();
    if (round > 0) EXPECT_EQ(hits(), before + 1) << round;
    const int64_t kernels = GlobalCounters::kernel_count;
    EXPECT_TRUE(kt::matches(m, naive_max)) << round;
    EXPECT_EQ(GlobalCounters::kernel_count, kernels) << "the max was realized with y, not again";
    EXPECT_TRUE(kt::matches(y, ref::zip(a, ref::expand(naive_max, a.shape), [](double v, double mx) {
      return std::exp(v - mx);
    }))) << round;
  }
}

TEST_F(Dispatch, AssignUpdatesInPlaceEveryTime) {
  ref::NdArray start = ref::random({8}, 22);
  Tensor w = kt::make(start);
  for (int step = 1; step <= 4; step++) {
    w.assign(w * 0.5f + 1.0f).realize();
    ref::NdArray want = start;
    for (int s = 0; s < step; s++) want = ref::map(want, [](double v) { return v * 0.5 + 1; });
    EXPECT_TRUE(kt::matches(w, want)) << "step " << step;
  }
}

// realize() updates only the tensors whose graphs are not settled (RESHAPEs of a buffer): one
// that was realized and then assigned a lazy graph must be found again when a realize computes
// part of that graph, or it would recompute that part later from inputs changed since.
TEST_F(Dispatch, ATensorAssignedAfterItsRealizeSeesLaterRealizes) {
  ref::NdArray a = ref::random({8}, 23), start = ref::random({8}, 24);
  std::vector<Tensor> settled;
  for (int i = 0; i < 100; i++) settled.push_back(kt::make(ref::random({8}, 100 + i)).realize());
  for (int round = 0; round < 3; round++) {
    Tensor x = kt::make(a).realize(), w = kt::make(start).realize();
    Tensor tripled = x * 3.0f;
    w.assign(tripled + 1.0f);
    tripled.realize();
    x.assign(x * 0.0f + 100.0f).realize();  // w must read tripled's buffer, not x again
    EXPECT_TRUE(kt::matches(w, ref::map(a, [](double v) { return 3 * v + 1; }))) << round;
  }
  EXPECT_TRUE(kt::matches(settled[7], ref::random({8}, 107)));
}

}  // namespace
