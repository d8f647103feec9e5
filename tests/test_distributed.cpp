// kiln::distributed against values the test computes itself: every rank fills rank-dependent data
// (value_at(rank, i)), so the expected sum, mean, max, min, gather and gradient mean over all ranks are
// plain loops over the ranks here. ctest runs this binary under `mpirun -np 2` (test_distributed_mpi)
// and, test by test, as a single process (a world of one). Tolerances: kt::tol_for(dtype), exact for
// integers; the data are small integers, exact in every dtype (fp8 too).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "error_message.h"
#include "kiln/distributed.h"
#include "kiln/nn/optim.h"
#include "reference.h"

namespace dist = kiln::distributed;
using kiln::DType;
using kiln::Tensor;
using ref::NdArray;
namespace dtypes = kiln::dtypes;

namespace {

// Rank r's i-th value: small integers in [-4, 4] (in [0, 8] for unsigned dtypes, {0, 1} for bool).
double value_at(int r, int64_t i, DType dt) {
  const int64_t v = (i * 7 + r * 5) % 9;
  if (dt.is_bool()) return static_cast<double>(v % 2);
  return static_cast<double>(dt.is_unsigned() ? v : v - 4);
}

NdArray rank_data(int r, const ref::Shape& shape, DType dt) {
  NdArray a(shape);
  for (int64_t i = 0; i < a.size(); i++) a.data[static_cast<size_t>(i)] = value_at(r, i, dt);
  return a;
}

class Distributed : public ::testing::Test {
 protected:
  void SetUp() override { dist::init(); }
  static int world() { return dist::world_size(); }
};

class DistributedDtype : public Distributed, public ::testing::WithParamInterface<DType> {};

// ---- all_reduce, every dtype and op

TEST_P(DistributedDtype, AllReduceEveryOp) {
  const DType dt = GetParam();
  const ref::Shape shape{3, 5};
  const Tensor mine = kt::make(rank_data(dist::rank(), shape, dt), dt);
  NdArray sum(shape), mx(shape, -1e9), mn(shape, 1e9);
  for (int r = 0; r < world(); r++) {
    NdArray d = rank_data(r, shape, dt);
    for (size_t i = 0; i < d.data.size(); i++) {
      sum.data[i] += d.data[i];
      mx.data[i] = std::max(mx.data[i], d.data[i]);
      mn.data[i] = std::min(mn.data[i], d.data[i]);
    }
  }
  EXPECT_TRUE(kt::matches(dist::all_reduce(mine, "max"), mx)) << dt.name();
  EXPECT_TRUE(kt::matches(dist::all_reduce(mine, "min"), mn)) << dt.name();
  if (dt.is_bool()) {
    EXPECT_NE(kt::error_of([&] { dist::all_reduce(mine, "sum"); }).find("a bool tensor takes op \"max\""),
              std::string::npos);
    return;
  }
  const Tensor summed = dist::all_reduce(mine);
  EXPECT_EQ(summed.dtype(), dt);
  EXPECT_EQ(summed.device(), mine.device());
  EXPECT_TRUE(kt::matches(summed, sum)) << dt.name();
  if (dt.is_float()) {
    NdArray mean = sum;
    for (double& v : mean.data) v /= world();
    EXPECT_TRUE(kt::matches(dist::all_reduce(mine, "mean"), mean)) << dt.name();
  } else {
    EXPECT_NE(kt::error_of([&] { dist::all_reduce(mine, "mean"); }).find("op \"mean\" needs a float tensor, got " +
                                                                        dt.name()),
              std::string::npos);
  }
}

// ---- broadcast and all_gather move bytes: every dtype

TEST_P(DistributedDtype, BroadcastFromLastRank) {
  const DType dt = GetParam();
  const int root = world() - 1;
  Tensor got = dist::broadcast(kt::make(rank_data(dist::rank(), {4, 3}, dt), dt), root);
  EXPECT_EQ(got.dtype(), dt);
  EXPECT_TRUE(kt::matches(got, rank_data(root, {4, 3}, dt))) << dt.name();
}

TEST_P(DistributedDtype, AllGatherEveryAxis) {
  const DType dt = GetParam();
  const ref::Shape shape{2, 3};
  const Tensor mine = kt::make(rank_data(dist::rank(), shape, dt), dt);
  for (int axis : {0, 1, -1}) {
    const int a = axis < 0 ? axis + 2 : axis;
    ref::Shape out_shape = shape;
    out_shape[static_cast<size_t>(a)] *= world();
    NdArray want(out_shape);
    for (int r = 0; r < world(); r++) {  // rank r's block starts at r * shape[a] along the axis
      NdArray d = rank_data(r, shape, dt);
      for (int64_t i = 0; i < shape[0]; i++)
        for (int64_t j = 0; j < shape[1]; j++) {
          ref::Index at{i, j};
          at[static_cast<size_t>(a)] += r * shape[static_cast<size_t>(a)];
          want.at(at) = d.at({i, j});
        }
    }
    EXPECT_TRUE(kt::matches(dist::all_gather(mine, axis), want)) << dt.name() << " axis " << axis;
  }
}

std::vector<DType> every_dtype() { return kiln::dtypes::all(); }
INSTANTIATE_TEST_SUITE_P(Dtypes, DistributedDtype, ::testing::ValuesIn(every_dtype()), kt::dtype_param_name);

// ---- bad calls: the same error on every rank, no hang

TEST_F(Distributed, BadArgumentsAreErrors) {
  const Tensor t = Tensor::ones({3});
  EXPECT_NE(kt::error_of([&] { dist::all_reduce(t, "prod"); })
                .find("op must be \"sum\", \"mean\", \"max\" or \"min\", got \"prod\""),
            std::string::npos);
  EXPECT_NE(kt::error_of([&] { dist::broadcast(t, world()); }).find("root must be a rank in [0, "), std::string::npos);
  EXPECT_NE(kt::error_of([&] { dist::all_gather(Tensor::ones({}), 0); }).find("got a 0-d tensor"), std::string::npos);
  EXPECT_NE(kt::error_of([&] { dist::all_gather(t, 1); }).find("all_gather"), std::string::npos);
  EXPECT_NE(kt::error_of([&] { dist::DistributedSampler(-1); }).find("dataset size >= 0, got -1"), std::string::npos);
}

TEST_F(Distributed, ShapesThatDifferAcrossRanksAreAnErrorOnEveryRank) {
  if (world() == 1) GTEST_SKIP() << "needs two ranks";
  const Tensor t = Tensor::ones({3 + dist::rank()});
  const std::string message = kt::error_of([&] { dist::all_reduce(t); });
  EXPECT_NE(message.find("every rank must make the same call, but rank 0 passed sum float32 (3,) and rank 1 passed "
                         "sum float32 (4,)"),
            std::string::npos)
      << message;
  dist::barrier();  // both ranks are still in step
}

// ---- data parallel

TEST_F(Distributed, AverageGradientsIsTheMeanOverRanks) {
  // Mixed dtypes and sizes; a bucket of 24 bytes puts the parameters in several buckets.
  const std::vector<std::pair<ref::Shape, DType>> specs{
      {{3, 4}, dtypes::float32}, {{5}, dtypes::float32}, {{2, 2}, dtypes::float16}, {{7}, dtypes::float64}};
  std::vector<Tensor> params;
  for (size_t k = 0; k < specs.size(); k++) {
    auto [shape, dt] = specs[k];
    Tensor p = Tensor::zeros(shape, dt).requires_grad_();
    NdArray g = rank_data(dist::rank(), shape, dt);
    for (double& v : g.data) v += static_cast<double>(k);
    p.set_grad(kt::make(g, dt));
    params.push_back(p);
  }
  dist::average_gradients(params, /*bucket_bytes=*/24);
  for (size_t k = 0; k < specs.size(); k++) {
    auto [shape, dt] = specs[k];
    NdArray want(shape);
    for (int r = 0; r < world(); r++) {
      NdArray g = rank_data(r, shape, dt);
      for (size_t i = 0; i < g.data.size(); i++) want.data[i] += (g.data[i] + static_cast<double>(k)) / world();
    }
    ASSERT_TRUE(params[k].grad().has_value());
    EXPECT_EQ(params[k].grad()->dtype(), dt);
    EXPECT_TRUE(kt::matches(*params[k].grad(), want)) << "parameter " << k;
  }
  Tensor no_grad = Tensor::zeros({2}).requires_grad_();
  EXPECT_NE(kt::error_of([&] { dist::average_gradients({no_grad}); }).find("parameter 0 (shape (2,)) has no gradient"),
            std::string::npos);
}

TEST_F(Distributed, BroadcastParametersGivesEveryRankTheRootsValues) {
  Tensor w = kt::make(rank_data(dist::rank(), {2, 3}, dtypes::float32)).requires_grad_();
  Tensor running = kt::make(rank_data(dist::rank(), {3}, dtypes::float32));
  dist::broadcast_parameters({w, running});
  EXPECT_TRUE(kt::matches(w, rank_data(0, {2, 3}, dtypes::float32)));
  EXPECT_TRUE(kt::matches(running, rank_data(0, {3}, dtypes::float32)));
  EXPECT_TRUE(w.requires_grad());
}

TEST_F(Distributed, SamplerSplitsThePermutationAmongRanks) {
  for (bool drop_last : {false, true}) {
    const int64_t size = 11;
    dist::DistributedSampler sampler(size, /*seed=*/7, /*shuffle=*/true, drop_last);
    const std::vector<int64_t> mine = sampler.indices(3);
    EXPECT_EQ(mine, sampler.indices(3));  // deterministic
    ASSERT_EQ(static_cast<int64_t>(mine.size()), sampler.num_samples());
    const Tensor gathered = dist::all_gather(Tensor::from_vector(mine, {sampler.num_samples()}));
    std::vector<int64_t> all = gathered.to_vector<int64_t>();
    std::multiset<int64_t> seen(all.begin(), all.end());
    const int64_t total = sampler.num_samples() * world();
    EXPECT_EQ(total, drop_last ? size / world() * world() : (size + world() - 1) / world() * world());
    for (int64_t i : seen) EXPECT_TRUE(i >= 0 && i < size) << i;
    // Each index once, except the padding (indices repeated from the start of the permutation).
    std::set<int64_t> distinct(all.begin(), all.end());
    EXPECT_EQ(static_cast<int64_t>(distinct.size()), std::min(total, size));
  }
  dist::DistributedSampler in_order(5, 0, /*shuffle=*/false);
  std::vector<int64_t> want;
  for (int64_t j = 0; j < in_order.num_samples(); j++) want.push_back((dist::rank() + j * world()) % 5);
  EXPECT_EQ(in_order.indices(0), want);
  EXPECT_NE(dist::DistributedSampler(50, 1).indices(0), dist::DistributedSampler(50, 1).indices(1));
}

// A small MLP trained for 3 SGD steps on a batch of 12: each rank on its share of the batch with
// gradients averaged, against the same model trained by this process alone on the whole batch.
// Tolerance 1e-5: the two sum the same terms in a different order in float32.
TEST_F(Distributed, DataParallelTrainingEqualsFullBatchTraining) {
  Tensor::manual_seed(1234);
  const Tensor x = Tensor::randn({12, 4}), y = Tensor::randint({12}, 0, 3);
  const std::vector<Tensor> init{Tensor::randn({4, 8}) * 0.5, Tensor::zeros({8}), Tensor::randn({8, 3}) * 0.5};
  auto fresh = [&] {  // each call: parameters in buffers of their own
    std::vector<Tensor> params;
    for (const Tensor& t : init)
      params.push_back(Tensor::from_vector(t.to_vector<float>(), t.shape()).requires_grad_());
    return params;
  };
  auto loss_of = [](const std::vector<Tensor>& p, const Tensor& xb, const Tensor& yb) {
    return (xb.matmul(p[0]) + p[1]).relu().matmul(p[2]).sparse_categorical_crossentropy(yb);
  };
  std::vector<Tensor> alone = fresh(), parallel = fresh();
  // Ranks would start apart without the broadcast: perturb the others first.
  if (dist::rank() != 0) parallel[0].assign(parallel[0].detach() + 1.0).realize();
  dist::broadcast_parameters(parallel);
  kiln::nn::optim::SGD opt_alone(alone, 0.1), opt_parallel(parallel, 0.1);
  const int64_t share = 12 / world();
  std::vector<int32_t> rows;
  for (int64_t j = 0; j < share; j++) rows.push_back(static_cast<int32_t>(dist::rank() + j * world()));
  const Tensor my_rows = Tensor::from_vector(rows, {share});
  for (int step = 0; step < 3; step++) {
    opt_alone.zero_grad();
    loss_of(alone, x, y).backward();
    opt_alone.step();
    opt_parallel.zero_grad();
    loss_of(parallel, x.index_select(0, my_rows), y.index_select(0, my_rows)).backward();
    dist::average_gradients(parallel);
    opt_parallel.step();
  }
  for (size_t k = 0; k < alone.size(); k++) {
    NdArray want(alone[k].shape(), kt::read(alone[k]));
    EXPECT_TRUE(kt::matches(parallel[k], want, kt::Tol{1e-5, 1e-5})) << "parameter " << k;
  }
}

}  // namespace
