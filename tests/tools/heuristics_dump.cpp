// Prints, for a fixed list of representative kernels (matmuls of several sizes, convolutions and
// their gradients, Winograd pieces, softmax, sums and reductions over each axis, elementwise
// kernels, transposes, stacks, gathers, integer and float64 reductions), the opts the hand-written
// heuristics choose and the rendered source, for an AVX2-like and an AVX-512-like CPU target and
// for OpenCL- and CUDA-like targets with work-groups. Two runs' outputs are diffed to show that a
// change to the heuristics (heuristics/*.cpp) changes no kernel, or which ones it changes.
//   heuristics_dump > kernels.txt
#include <cstdio>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "kiln/kiln.h"

using namespace kiln;

namespace {

struct NamedTarget {
  const char* name;
  codegen::Target target;
};

std::vector<NamedTarget> targets() {
  constexpr int64_t kCache = int64_t{32} << 20;
  return {
      {"avx2", {.renderer = &renderer::c_renderer(), .max_threads = 8, .vector_bytes = 32, .vector_registers = 16,
                .cache_bytes = kCache}},
      {"avx512", {.renderer = &renderer::c_renderer(), .max_threads = 8, .vector_bytes = 64, .vector_registers = 32,
                  .cache_bytes = kCache}},
      {"opencl", {.renderer = &renderer::opencl_renderer(), .max_threads = 1 << 20, .max_local_size = 256,
                  .local_memory_bytes = 32 << 10}},
      {"cuda", {.renderer = &renderer::cuda_renderer(), .max_threads = 108 * 2048, .max_local_size = 1024,
                .local_memory_bytes = 48 << 10}},
  };
}

Tensor input(Shape shape, DType dtype = dtypes::float32) { return Tensor::empty(std::move(shape), dtype); }

Tensor with_grad(Shape shape) {
  Tensor t = input(std::move(shape));
  t.requires_grad_();
  return t;
}

// Every kernel of each program: (label, tensors whose schedules hold them).
std::vector<std::pair<std::string, std::vector<Tensor>>> programs() {
  std::vector<std::pair<std::string, std::vector<Tensor>>> out;
  auto add = [&](std::string label, std::vector<Tensor> ts) { out.emplace_back(std::move(label), std::move(ts)); };
  for (auto [m, k, n] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {64, 64, 64}, {24, 40, 20}, {256, 512, 128}, {512, 576, 10}, {1, 512, 512}, {1024, 1024, 1024}, {33, 35, 7}})
    add("matmul " + std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n),
        {input({m, k}).matmul(input({k, n}))});
  add("batched matmul", {input({3, 16, 8}).matmul(input({3, 8, 12}))});
  add("conv 1->32 5x5", {input({512, 1, 28, 28}).conv2d(input({32, 1, 5, 5}))});
  add("conv 32->32 5x5", {input({512, 32, 24, 24}).conv2d(input({32, 32, 5, 5}))});
  add("conv 32->64 3x3 winograd", {input({64, 32, 12, 12}).conv2d(input({64, 32, 3, 3}))});
  add("conv padded strided", {input({8, 16, 17, 17}).conv2d(input({24, 16, 3, 3}), input({24}), 2, 1)});
  {
    Tensor x = with_grad({64, 32, 12, 12}), w = with_grad({32, 32, 5, 5});
    add("conv backward", x.conv2d(w).relu().sum().gradient({x, w}));
    Tensor x3 = with_grad({64, 32, 10, 10}), w3 = with_grad({64, 32, 3, 3});
    add("winograd backward", x3.conv2d(w3).relu().sum().gradient({x3, w3}));
  }
  add("softmax 4096x1024", {input({4096, 1024}).softmax()});
  add("softmax 64x256", {input({64, 256}).softmax()});
  add("log_softmax", {input({128, 10}).log_softmax()});
  add("layernorm", {input({32, 64, 96}).layernorm()});
  const Tensor cube = input({16, 32, 64});
  add("sum all", {input({4096, 1024}).sum()});
  for (int axis = 0; axis < 3; axis++) {
    add("sum axis " + std::to_string(axis), {cube.sum({axis})});
    add("max axis " + std::to_string(axis), {cube.max({axis})});
  }
  add("sum axes 0 2", {cube.sum({0, 2})});
  add("mean keepdim", {cube.mean({1}, true)});
  add("argmax", {input({64, 1000}).argmax(1)});
  add("cumsum", {input({16, 300}).cumsum(1)});
  add("column sum", {input({256, 25000}).sum({0})});
  add("gathering sum", {(input({4, 32, 8, 8}) * input({4, 8, 8, 32}).permute({0, 3, 1, 2})).sum({2, 3})});
  add("int sum", {input({12, 30}, dtypes::int32).sum({1})});
  add("float64 sum", {input({64, 100}, dtypes::float64).sum({0})});
  add("elementwise", {input({33, 64}).exp() + 1.0f});
  add("cast", {input({1000, 64}).cast(dtypes::int32)});
  add("transpose NHWC->NCHW", {input({512, 20, 20, 32}).permute({0, 3, 1, 2}) + input({1, 32, 1, 1})});
  add("small transpose", {input({32, 4}).transpose(0, 1).contiguous()});
  add("max_pool2d", {input({512, 32, 20, 20}).max_pool2d(2)});
  const Tensor scaled = input({3, 4, 10, 10}) * input({1, 4, 1, 1});
  add("pool windows", {scaled.reshape({3, 4, 5, 2, 5, 2}).permute({0, 1, 2, 4, 3, 5}).contiguous()});
  {
    Tensor x = input({8, 32, 10, 10});
    add("batchnorm relu", {x.batchnorm(input({32}), input({32}), input({32}), input({32})).relu()});
  }
  add("stack", {Tensor::stack({input({6, 32}), input({6, 32}) * 2.0f, input({6, 32}).exp()}, 1)});
  add("cat", {Tensor::cat({input({5, 20}), input({7, 20})}, 0)});
  add("pad", {input({2, 3, 6, 6}).pad({{0, 0}, {0, 0}, {1, 1}, {1, 1}})});
  add("gather", {input({100, 64}).gather(0, Tensor::zeros({30, 64}, dtypes::int32))});
  add("index_select", {input({1000, 48}).index_select(0, Tensor::zeros({64}, dtypes::int32))});
  {
    Tensor x = with_grad({128, 576});
    Tensor w = with_grad({576, 10});
    Tensor labels = Tensor::zeros({128}, dtypes::int32);
    add("linear + cross entropy backward", x.matmul(w).sparse_categorical_crossentropy(labels).gradient({x, w}));
  }
  return out;
}

}  // namespace

int main() {
  const auto tgs = targets();
  for (const auto& [label, tensors] : programs())
    for (size_t t = 0; t < tensors.size(); t++) {
      const std::vector<ScheduleItem> items = tensors[t].schedule();
      for (size_t i = 0; i < items.size(); i++) {
        if (items[i].is_copy()) continue;
        for (const NamedTarget& nt : tgs) {
          std::printf("=== %s, output %zu, kernel %zu, %s\n", label.c_str(), t, i, nt.name);
          try {
            const codegen::Program p = codegen::to_program(items[i].ast, nt.target);
            std::printf("opts: %s\n%s\n", codegen::opts_to_string(p.opts).c_str(), p.source.c_str());
          } catch (const std::exception& e) {
            std::printf("error: %s\n", e.what());
          }
        }
      }
    }
  return 0;
}
