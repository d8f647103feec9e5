// The schedule cache: the same graph over new input buffers reuses its schedule; results stay
// right (against naive float64 loops, float32 tolerance) and earlier results are never overwritten.
#include <gtest/gtest.h>

#include "engine/dispatch_cache.h"
#include "kiln/kiln.h"
#include "reference.h"
#include "schedule/schedule.h"
#include "support/env.h"

using namespace kiln;

namespace {

ref::NdArray fused(const ref::NdArray& a, const ref::NdArray& b, const ref::NdArray& c) {
  ref::NdArray abc = a;
  for (size_t i = 0; i < abc.data.size(); i++) abc.data[i] = a.data[i] * b.data[i] + c.data[i];
  return ref::sum(abc, {1});
}

// Realizes a cache answered: the dispatch cache (realize's fast path) answers before the schedule
// cache is asked.
int64_t reused() { return schedule::schedule_cache_hits() + engine::dispatch_cache_hits(); }

TEST(ScheduleCache, TheSameGraphOverNewBuffersReusesItsSchedule) {
  ref::NdArray a = ref::random({6, 10}, 1), b = ref::random({6, 10}, 2), c = ref::random({6, 10}, 3);
  Tensor first = (kt::make(a) * kt::make(b) + kt::make(c)).sum({1});
  first.realize();
  const int64_t hits = reused();
  ref::NdArray a2 = ref::random({6, 10}, 4), b2 = ref::random({6, 10}, 5), c2 = ref::random({6, 10}, 6);
  Tensor second = (kt::make(a2) * kt::make(b2) + kt::make(c2)).sum({1});
  second.realize();
  EXPECT_EQ(reused(), hits + 1);
  EXPECT_TRUE(kt::matches(second, fused(a2, b2, c2)));
  EXPECT_TRUE(kt::matches(first, fused(a, b, c))) << "the first result's buffer was reused";
}

TEST(ScheduleCache, AliasedInputsAreAnotherGraph) {
  ref::NdArray a = ref::random({5, 7}, 7), b = ref::random({5, 7}, 8);
  Tensor ta = kt::make(a), tb = kt::make(b);
  Tensor different = (ta * tb + tb).sum({1});  // b read twice
  different.realize();
  Tensor same = (ta * ta + tb).sum({1});       // a read twice: must not reuse the schedule above
  EXPECT_TRUE(kt::matches(different, fused(a, b, b)));
  EXPECT_TRUE(kt::matches(same, fused(a, a, b)));
}

TEST(ScheduleCache, ConstantsArePartOfTheGraph) {
  ref::NdArray a = ref::random({8}, 9);
  Tensor x = kt::make(a);
  ref::NdArray twice = a, thrice = a;
  for (double& v : twice.data) v *= 2;
  for (double& v : thrice.data) v *= 3;
  EXPECT_TRUE(kt::matches(x * 2.0f, twice));
  EXPECT_TRUE(kt::matches(x * 3.0f, thrice));
}

TEST(ScheduleCache, CanBeTurnedOff) {
  env::ScopedEnv off("SCHEDULE_CACHE", "0");
  ref::NdArray a = ref::random({4, 4}, 10);
  (kt::make(a) + 1.0f).realize();
  const int64_t hits = reused();
  Tensor t = kt::make(a) + 1.0f;
  t.realize();
  EXPECT_EQ(reused(), hits);
  ref::NdArray want = a;
  for (double& v : want.data) v += 1;
  EXPECT_TRUE(kt::matches(t, want));
}

}  // namespace
