// bench: Model::forward over a fixed prompt, then decode steps, timed on their second run.
#include <chrono>
#include <vector>

#include "kiln/error.h"
#include "kiln/llm_bench.h"

namespace kiln::llm {

BenchResult bench(Model& model, int64_t prefill_tokens, int64_t decode_tokens) {
  if (prefill_tokens < 1 || decode_tokens < 1 || prefill_tokens + decode_tokens > model.max_context())
    throw_error("llm::bench: expected at least 1 prompt and 1 decode token, ", model.max_context(),
                " in all (the context), got ", prefill_tokens, " and ", decode_tokens);
  using Clock = std::chrono::steady_clock;
  const auto seconds_since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  std::vector<int32_t> prompt(static_cast<size_t>(prefill_tokens));
  for (size_t i = 0; i < prompt.size(); i++) prompt[i] = static_cast<int32_t>((i * 7 + 3) % model.vocab_size());
  const Tensor tokens = Tensor::from_vector(prompt, {1, prefill_tokens});
  const auto decode = [&](int64_t steps) {
    for (int64_t i = 0; i < steps; i++) {
      const int32_t token = static_cast<int32_t>((i * 5 + 1) % model.vocab_size());
      model.forward(Tensor::from_vector(std::vector<int32_t>{token}, {1, 1}), prefill_tokens + i).realize();
    }
  };
  BenchResult r{.prefill_tokens = prefill_tokens, .decode_tokens = decode_tokens};
  for (int run = 0; run < 2; run++) {  // the first run compiles
    model.reset();
    Clock::time_point t = Clock::now();
    model.forward(tokens, 0).realize();
    r.prefill_seconds = seconds_since(t);
    t = Clock::now();
    // all the steps on the first run too: each KV-cache capacity the steps reach compiles and captures its own step
    decode(decode_tokens);
    r.decode_seconds = seconds_since(t);
  }
  model.reset();
  return r;
}

}  // namespace kiln::llm
