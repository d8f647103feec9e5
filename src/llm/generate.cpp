// Model::generate: the prompt in chunks, then one decode step per new token, sampled on the CPU.
#include <algorithm>
#include <random>

#include "kiln/error.h"
#include "llm/model_impl.h"
#include "llm/sampling.h"

namespace kiln::llm {

std::vector<int32_t> Model::generate(const std::vector<int32_t>& prompt, int max_tokens, const Sampling& s,
                                     const std::function<bool(int32_t)>& on_token) {
  if (prompt.empty()) throw_error("Model::generate: expected a prompt of at least one token, got none");
  if (max_tokens < 0) throw_error("Model::generate: max_tokens must be >= 0, got ", max_tokens);
  Impl& m = *impl_;
  m.check(prompt, 0, static_cast<int64_t>(prompt.size()), "Model::generate");
  m.cache_for(1, 0);
  reset();
  // All but the last prompt token only fill the cache; the last goes through the decode step, whose
  // logits give the first new token.
  if (prompt.size() > 1) m.run({prompt.begin(), prompt.end() - 1}, 1, 0, false);
  std::mt19937_64 rng(s.seed);
  std::vector<int32_t> history = prompt, out;
  const std::vector<int32_t>& eos = m.config.eos_ids;
  for (int64_t pos = static_cast<int64_t>(prompt.size()) - 1; static_cast<int>(out.size()) < max_tokens; pos++) {
    if (pos >= m.config.max_context) break;  // the cache is full
    const int32_t token = sample_token(m.decode({history.back()}, pos).to_vector<float>(), history, s, rng);
    out.push_back(token);
    history.push_back(token);
    if (on_token && !on_token(token)) break;
    if (std::find(eos.begin(), eos.end(), token) != eos.end()) break;
  }
  return out;
}

}  // namespace kiln::llm
