#pragma once
// Timing a language model: prompt processing (prefill) and token-by-token decoding, each measured
// after a warm-up run of the same shapes so that kernel compiles are not counted.
#include <cstdint>

#include "kiln/llm.h"

namespace kiln::llm {

struct BenchResult {
  int64_t prefill_tokens = 0;
  double prefill_seconds = 0;
  int64_t decode_tokens = 0;
  double decode_seconds = 0;
  double prefill_tokens_per_s() const { return double(prefill_tokens) / prefill_seconds; }
  double decode_tokens_per_s() const { return double(decode_tokens) / decode_seconds; }
};

// A prompt of prefill_tokens tokens, then decode_tokens single-token steps after it (both at least 1, and
// together within the model's context; kiln::Error otherwise). Empties the KV cache.
BenchResult bench(Model& model, int64_t prefill_tokens, int64_t decode_tokens);

}  // namespace kiln::llm
