// Sampling in Hugging Face's order: repetition penalty, temperature, top-k, top-p, min-p, then a draw.
#include "llm/sampling.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kiln/error.h"

namespace kiln::llm {
namespace {

// CTRL's rule (Hugging Face's and llama.cpp's): a seen token's logit moves toward "less likely"
// whatever its sign.
void penalize(std::vector<float>& logits, const std::vector<int32_t>& history, float penalty) {
  if (penalty == 1.f) return;
  std::vector<bool> seen(logits.size());
  for (int32_t t : history)
    if (t >= 0 && static_cast<size_t>(t) < logits.size()) seen[static_cast<size_t>(t)] = true;
  for (size_t i = 0; i < logits.size(); i++)
    if (seen[i]) logits[i] = logits[i] > 0 ? logits[i] / penalty : logits[i] * penalty;
}

void check(const Sampling& s, size_t vocab) {
  if (vocab == 0) throw_error("sampling: expected a non-empty logits vector");
  check_sampling(s);
}

}  // namespace

void check_sampling(const Sampling& s) {
  if (s.temperature < 0) throw_error("sampling: temperature must be >= 0, got ", s.temperature);
  if (s.top_k < 0) throw_error("sampling: top_k must be >= 0 (0: off), got ", s.top_k);
  if (!(s.top_p > 0 && s.top_p <= 1)) throw_error("sampling: top_p must be in (0, 1], got ", s.top_p);
  if (!(s.min_p >= 0 && s.min_p <= 1)) throw_error("sampling: min_p must be in [0, 1], got ", s.min_p);
  if (!(s.repeat_penalty > 0)) throw_error("sampling: repeat_penalty must be > 0, got ", s.repeat_penalty);
}

std::vector<double> sampling_distribution(std::vector<float> logits, const std::vector<int32_t>& history,
                                          const Sampling& s) {
  check(s, logits.size());
  if (s.temperature == 0) throw_error("sampling_distribution: temperature 0 is greedy, not a distribution");
  penalize(logits, history, s.repeat_penalty);
  // Candidates by decreasing logit (ties: the lower id first), softmax over all of them.
  std::vector<size_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return logits[a] > logits[b]; });
  const double top = logits[order[0]];
  std::vector<double> p(logits.size());
  double total = 0;
  for (size_t i : order) total += p[i] = std::exp((logits[i] - top) / s.temperature);
  for (double& x : p) x /= total;
  // How many of `order` each filter keeps; each keeps at least the most likely token.
  size_t keep = s.top_k > 0 ? std::min(order.size(), static_cast<size_t>(s.top_k)) : order.size();
  // top-p over the top-k survivors renormalized, as Hugging Face's warpers chain
  double kept_mass = 0;
  for (size_t j = 0; j < keep; j++) kept_mass += p[order[j]];
  double cumulative = 0;
  for (size_t j = 0; j < keep; j++) {
    if (j > 0 && cumulative >= s.top_p * kept_mass) {
      keep = j;
      break;
    }
    cumulative += p[order[j]];
  }
  while (keep > 1 && p[order[keep - 1]] < s.min_p * p[order[0]]) keep--;
  std::vector<double> out(logits.size());
  double mass = 0;
  for (size_t j = 0; j < keep; j++) mass += p[order[j]];
  for (size_t j = 0; j < keep; j++) out[order[j]] = p[order[j]] / mass;
  return out;
}

int32_t sample_token(const std::vector<float>& logits, const std::vector<int32_t>& history, const Sampling& s,
                     std::mt19937_64& rng) {
  check(s, logits.size());
  if (s.temperature == 0) {
    std::vector<float> penalized = logits;
    penalize(penalized, history, s.repeat_penalty);
    return static_cast<int32_t>(std::max_element(penalized.begin(), penalized.end()) - penalized.begin());
  }
  std::vector<double> p = sampling_distribution(logits, history, s);
  // 53 random bits as a double in [0, 1): the same on every platform, unlike std::uniform_real_distribution
  const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
  double cumulative = 0;
  size_t last = 0;
  for (size_t i = 0; i < p.size(); i++) {
    if (p[i] == 0) continue;
    last = i;
    cumulative += p[i];
    if (u < cumulative) return static_cast<int32_t>(i);
  }
  return static_cast<int32_t>(last);  // u beyond the rounded total
}

}  // namespace kiln::llm
