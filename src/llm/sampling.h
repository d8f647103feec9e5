#pragma once
// Choosing the next token from one position's logits, on the CPU (a vocabulary's worth of floats).
#include <cstdint>
#include <random>
#include <vector>

#include "kiln/llm.h"

namespace kiln::llm {

// Throws kiln::Error naming the first setting out of its range (temperature < 0, top_p outside (0, 1], ...).
void check_sampling(const Sampling& s);

// The distribution Sampling `s` draws from, over the whole vocabulary (zeros for filtered tokens),
// in double precision. `history`: the tokens the repetition penalty applies to. Not for greedy.
std::vector<double> sampling_distribution(std::vector<float> logits, const std::vector<int32_t>& history,
                                          const Sampling& s);

// Greedy (temperature 0) or one draw from sampling_distribution, using `rng`.
int32_t sample_token(const std::vector<float>& logits, const std::vector<int32_t>& history, const Sampling& s,
                     std::mt19937_64& rng);

}  // namespace kiln::llm
