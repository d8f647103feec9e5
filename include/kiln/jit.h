#pragma once
// TinyJit: a function of tensors (a training step, an inference) becomes a replay of its kernels.
// The first call runs normally (it compiles the kernels and realizes lazy state); the second runs
// normally too and captures every kernel launch; from the third on, the captured kernels are
// launched over the new inputs, with no scheduling and no codegen.
//
//   auto step = TinyJit([&](Tensor x, Tensor y) { ...; opt.step(); return loss.realize(); });
//   for (...) Tensor loss = step(batch_x, batch_y);
//
// Rules (what the replay can and cannot know):
// - Arguments are tensors (Tensor or std::vector<Tensor>); other values belong inside the callable.
//   Each call's tensors must have the shapes, dtypes and devices of the captured call (an error
//   otherwise). Lazy arguments are realized first.
// - Tensors the function reads that were realized before the call (weights, optimizer state) are
//   read again at each replay, whatever they hold then; tensors it updates with assign() (weights,
//   optimizer state, running statistics, the random-number counter) are updated at each replay.
// - Results are fresh tensors each call. The function returns a Tensor, a std::vector<Tensor>, a
//   std::pair/std::tuple of Tensors, or nothing.
// - Reading tensor data (to_vector, item) inside a captured call is an error: it would not be replayed.
// - Kernels that depend on no input and no state run once; their results are reused.
// JIT=0 in the environment turns replays off: every call runs the function (for debugging).
#include <cstddef>
#include <memory>
#include <mutex>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/tensor.h"

namespace kiln {

namespace jit {

// The non-template part of TinyJit: capture and replay of one call's kernels.
class Core {
 public:
  Core();
  ~Core();
  Core(Core&&) noexcept;
  Core& operator=(Core&&) noexcept;

  static bool enabled();                // false with JIT=0
  int calls() const { return calls_; }  // calls so far; replays start at the third
  // Called around the second call: records every kernel launched in between.
  void begin_capture(const std::vector<Tensor>& inputs);
  void end_capture(const std::vector<Tensor>& outputs);
  void abort_capture();
  // Runs the captured kernels over `inputs`; returns the outputs' new values.
  std::vector<Tensor> replay(const std::vector<Tensor>& inputs);
  void count_call() { calls_++; }
  size_t kernels() const;  // kernels a replay launches (after dropping input-independent ones)

 private:
  struct Plan;
  std::unique_ptr<Plan> plan_;
  std::unique_ptr<std::unique_lock<std::recursive_mutex>> capture_lock_;
  int calls_ = 0;
};

template <class T>
struct IsTensorArg : std::false_type {};
template <>
struct IsTensorArg<Tensor> : std::true_type {};
template <>
struct IsTensorArg<std::vector<Tensor>> : std::true_type {};

inline void collect(std::vector<Tensor>& out, const Tensor& t) { out.push_back(t); }
inline void collect(std::vector<Tensor>& out, const std::vector<Tensor>& ts) { out.insert(out.end(), ts.begin(), ts.end()); }

// Results as a flat list of tensors, and back.
template <class R>
struct Results {
  static_assert(sizeof(R) == 0, "TinyJit: the function must return a Tensor, std::vector<Tensor>, a pair/tuple of Tensors, or void");
};
template <>
struct Results<Tensor> {
  static std::vector<Tensor> flatten(const Tensor& t) { return {t}; }
  static Tensor unflatten(std::vector<Tensor> v) { return v[0]; }
};
template <>
struct Results<std::vector<Tensor>> {
  static std::vector<Tensor> flatten(const std::vector<Tensor>& v) { return v; }
  static std::vector<Tensor> unflatten(std::vector<Tensor> v) { return v; }
};
template <class... T>
struct Results<std::tuple<T...>> {
  static_assert((std::is_same_v<T, Tensor> && ...), "TinyJit: a returned tuple must hold only Tensors");
  static std::vector<Tensor> flatten(const std::tuple<T...>& t) {
    return std::apply([](const auto&... x) { return std::vector<Tensor>{x...}; }, t);
  }
  static std::tuple<T...> unflatten(std::vector<Tensor> v) {
    return [&]<size_t... I>(std::index_sequence<I...>) { return std::tuple<T...>{v[I]...}; }(std::index_sequence_for<T...>{});
  }
};
template <class A, class B>
struct Results<std::pair<A, B>> {
  static_assert(std::is_same_v<A, Tensor> && std::is_same_v<B, Tensor>, "TinyJit: a returned pair must hold Tensors");
  static std::vector<Tensor> flatten(const std::pair<A, B>& p) { return {p.first, p.second}; }
  static std::pair<A, B> unflatten(std::vector<Tensor> v) { return {v[0], v[1]}; }
};

}  // namespace jit

template <class F>
class TinyJit {
 public:
  explicit TinyJit(F fn) : fn_(std::move(fn)) {}

  template <class... A>
  auto operator()(A&&... args) {
    static_assert((jit::IsTensorArg<std::remove_cvref_t<A>>::value && ...),
                  "TinyJit: arguments must be Tensors or std::vector<Tensor>; put other values inside the callable");
    using R = std::invoke_result_t<F&, A&&...>;
    std::vector<Tensor> inputs;
    (jit::collect(inputs, args), ...);
    Tensor::realize(inputs);
    if (!jit::Core::enabled()) return fn_(std::forward<A>(args)...);
    core_.count_call();
    if (core_.calls() >= 3) {
      std::vector<Tensor> out = core_.replay(inputs);
      if constexpr (!std::is_void_v<R>) return jit::Results<R>::unflatten(std::move(out));
      else return;
    }
    const bool capture = core_.calls() == 2;
    if (capture) core_.begin_capture(inputs);
    try {
      if constexpr (std::is_void_v<R>) {
        fn_(std::forward<A>(args)...);
        if (capture) core_.end_capture({});
      } else {
        R result = fn_(std::forward<A>(args)...);
        std::vector<Tensor> out = jit::Results<R>::flatten(result);
        Tensor::realize(out);
        if (capture) core_.end_capture(out);
        return result;
      }
    } catch (...) {
      if (capture) core_.abort_capture();
      throw;
    }
  }

  size_t captured_kernels() const { return core_.kernels(); }

 private:
  F fn_;
  jit::Core core_;
};

}  // namespace kiln
