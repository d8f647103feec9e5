// generate_text: Model::generate with each token turned into text by a TextStream.
#include <algorithm>
#include <chrono>

#include "kiln/llm_text.h"
#include "llm/text_stream.h"

namespace kiln::llm {

TextGeneration generate_text(Model& model, const Tokenizer& tokenizer, const std::vector<int32_t>& prompt,
                             int max_tokens, const Sampling& sampling, const std::vector<std::string>& stops,
                             const std::function<bool(const std::string&)>& on_text) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  TextGeneration g;
  g.prompt_tokens = static_cast<int64_t>(prompt.size());
  TextStream stream(tokenizer, prompt.empty() ? -1 : prompt.back(), stops);
  bool eos_seen = false, cancelled = false;
  const auto emit = [&](const std::string& piece) {
    if (piece.empty()) return true;
    g.text += piece;
    return !on_text || on_text(piece);
  };
  const std::vector<int32_t>& eos = model.eos_ids();
  model.generate(prompt, max_tokens, sampling, [&](int32_t token) {
    if (g.completion_tokens++ == 0) g.prompt_seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (token == tokenizer.eos() || std::find(eos.begin(), eos.end(), token) != eos.end()) return !(eos_seen = true);
    cancelled = !emit(stream.push(token));
    return !cancelled && !stream.stopped();
  });
  if (!cancelled) emit(stream.finish());  // text held back for a stop string that never came
  g.finish_reason = eos_seen || cancelled || stream.stopped() ? "stop" : "length";
  g.total_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return g;
}

}  // namespace kiln::llm
