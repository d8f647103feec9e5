// kiln::llm::Model against a float64 reference written from Hugging Face's LlamaForCausalLM math
// (RMSNorm, rotate_half rotary embeddings, grouped-query attention, SwiGLU), on tiny random
// checkpoints saved as config.json + safetensors; the KV cache's compile-once decode step; the
// sampling modes against float64 reimplementations of their definitions.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <random>

#include "llm_reference.h"
#include "temp_dir.h"
#include "engine/kernel_cache.h"
#include "kiln/counters.h"
#include "kiln/llm.h"
#include "kiln/nn/state.h"
#include "llm/config.h"
#include "llm/rope.h"
#include "llm/sampling.h"

namespace fs = std::filesystem;
using namespace kiln;
using Vec = std::vector<double>;

namespace {

using kt::llm_ref::Arch;
using kt::llm_ref::Checkpoint;
using kt::llm_ref::random_checkpoint;
using kt::llm_ref::reference_logits;

std::string config_json(const Arch& a) {
  std::ostringstream j;
  j << "{\"model_type\": \"" << a.model_type << "\", \"hidden_size\": " << a.dim << ", \"num_hidden_layers\": "
    << a.layers << ", \"num_attention_heads\": " << a.heads << ", \"num_key_value_heads\": " << a.kv_heads
    << ", \"head_dim\": " << a.head_dim << ", \"intermediate_size\": " << a.hidden << ", \"vocab_size\": " << a.vocab
    << ", \"max_position_embeddings\": " << a.max_pos << ", \"rms_norm_eps\": " << a.eps << ", \"rope_theta\": "
    << a.theta << ", \"tie_word_embeddings\": " << (a.tied ? "true" : "false") << ", \"eos_token_id\": 2";
  if (a.window) j << ", \"sliding_window\": " << a.window;
  j << "}";
  return j.str();
}

class LlmModel : public ::testing::Test {
 protected:

  // Saves `c` (split over two safetensors files, as sharded checkpoints are) and a's config.json.
  std::string save(const Arch& a, const Checkpoint& c) const {
    std::ofstream(dir_ / "config.json") << config_json(a);
    nn::state::StateDict first, second;
    for (const auto& [name, v] : c.w) {
      std::vector<float> f(v.begin(), v.end());
      (name < "model.layers.1" ? first : second).emplace(name, Tensor::from_vector(f, c.shapes.at(name)));
    }
    nn::state::safe_save(first, (dir_ / "model-00001-of-00002.safetensors").string());
    nn::state::safe_save(second, (dir_ / "model-00002-of-00002.safetensors").string());
    return dir_.string();
  }

  // kiln's logits for `tokens`: a prefill of the first `prefill`, then one decode step per token,
  // against the reference; tolerance: float32 arithmetic over a few hundred terms.
  void expect_matches_reference(const Arch& a, size_t prefill = 5, size_t total = 9) const {
    Checkpoint c = random_checkpoint(a);
    llm::Model m = llm::Model::from_safetensors(save(a, c));
    std::vector<int32_t> tokens;
    for (size_t i = 0; i < total; i++) tokens.push_back(static_cast<int32_t>((i * 7 + 3) % a.vocab));
    std::vector<Vec> ref = reference_logits(a, c, tokens);
    std::vector<int32_t> head(tokens.begin(), tokens.begin() + static_cast<long>(prefill));
    std::vector<float> got = m.forward(Tensor::from_vector(head, {1, static_cast<int64_t>(prefill)}), 0).to_vector<float>();
    for (size_t t = prefill; t < total; t++) {
      std::vector<float> step = m.forward(Tensor::from_vector(std::vector<int32_t>{tokens[t]}, {1, 1}), static_cast<int64_t>(t)).to_vector<float>();
      got.insert(got.end(), step.begin(), step.end());
    }
    ASSERT_EQ(got.size(), total * static_cast<size_t>(a.vocab));
    for (size_t t = 0; t < total; t++)
      for (size_t i = 0; i < static_cast<size_t>(a.vocab); i++)
        ASSERT_NEAR(got[t * static_cast<size_t>(a.vocab) + i], ref[t][i], 1e-4 * (1 + std::abs(ref[t][i])))
            << "position " << t << ", token " << i << (t < prefill ? " (prefill)" : " (decode)");
  }

  kt::TempDir temp_{"kiln_llm"};
  const fs::path& dir_ = temp_.dir;
};

TEST_F(LlmModel, LlamaPrefillAndDecodeMatchFloat64Reference) { expect_matches_reference(Arch{}); }

TEST_F(LlmModel, Qwen2BiasesAndTiedEmbeddings) {
  expect_matches_reference(Arch{.model_type = "qwen2", .bias = true, .tied = true, .theta = 1e6});
}

TEST_F(LlmModel, Qwen3PerHeadNorms) { expect_matches_reference(Arch{.model_type = "qwen3", .qk_norm = true}); }

TEST_F(LlmModel, MistralSlidingWindow) { expect_matches_reference(Arch{.model_type = "mistral", .window = 3}, 6, 11); }

// A prompt longer than a prefill chunk goes through in several chunks.
TEST_F(LlmModel, LongPromptInChunks) { expect_matches_reference(Arch{.max_pos = 128}, 70, 72); }

TEST_F(LlmModel, DecodeStepsCompileOnceAndReplay) {
  Arch a;
  llm::Model m = llm::Model::from_safetensors(save(a, random_checkpoint(a)));
  auto step = [&](int64_t pos) { m.forward(Tensor::from_vector(std::vector<int32_t>{3}, {1, 1}), pos).realize(); };
  m.forward(Tensor::from_vector(std::vector<int32_t>{1, 2, 3}, {1, 3}), 0).realize();
  for (int64_t pos = 3; pos < 6; pos++) step(pos);  // run, capture, first replay
  const int64_t generated = engine::engine_stats().kernels_generated, scheduled = engine::engine_stats().schedules;
  for (int64_t pos = 6; pos < 12; pos++) step(pos);
  EXPECT_EQ(engine::engine_stats().kernels_generated, generated) << "a decode step compiled new kernels";
  EXPECT_EQ(engine::engine_stats().schedules, scheduled) << "a decode step was scheduled instead of replayed";
  // A prompt of another length reuses the padded chunk's kernels.
  m.reset();
  m.forward(Tensor::from_vector(std::vector<int32_t>{4, 5, 6, 7}, {1, 4}), 0).realize();
  const int64_t after_prompt = engine::engine_stats().kernels_generated;
  m.forward(Tensor::from_vector(std::vector<int32_t>{4, 5, 6}, {1, 3}), 0).realize();
  EXPECT_EQ(engine::engine_stats().kernels_generated, after_prompt);
}

// The KV cache grows with the sequence (64, 128, then the context's 160 positions): decode steps
// across every capacity, and a prompt spanning two, equal the reference.
TEST_F(LlmModel, DecodeAcrossCacheCapacities) {
  expect_matches_reference(Arch{.max_pos = 160}, 1, 150);
  expect_matches_reference(Arch{.max_pos = 160}, 100, 140);
}

// A decode step early in a long context reads the cache's first positions, not all of them; after
// reset() a second sequence replays the steps captured for each capacity.
TEST_F(LlmModel, DecodeReadsOnlyTheCacheInUse) {
  Arch a{.max_pos = 4096};
  llm::Model m = llm::Model::from_safetensors(save(a, random_checkpoint(a)));
  auto step = [&](int64_t pos) { m.forward(Tensor::from_vector(std::vector<int32_t>{3}, {1, 1}), pos).realize(); };
  for (int64_t pos = 0; pos < 3; pos++) step(pos);  // run, capture, first replay
  GlobalCounters::reset();
  step(3);
  const int64_t cache_bytes = 2 * a.layers * a.kv_heads * a.max_pos * a.head_dim * 4;
  EXPECT_LT(GlobalCounters::global_mem, cache_bytes / 8)
      << "bytes one decode step touched; the whole cache: " << cache_bytes;
  // Returns the graphs scheduled by the steps that do not grow the cache (growing copies it: one schedule).
  auto sequence = [&] {
    m.reset();
    int64_t scheduled = 0;
    for (int64_t pos = 0; pos < 140; pos++) {
      const int64_t before = engine::engine_stats().schedules;
      step(pos);
      if (pos != 64 && pos != 128) scheduled += engine::engine_stats().schedules - before;
    }
    return scheduled;
  };
  sequence(), sequence();  // every capacity's step runs and is captured
  const int64_t generated = engine::engine_stats().kernels_generated;
  EXPECT_EQ(sequence(), 0) << "decode steps were scheduled instead of replayed";
  EXPECT_EQ(engine::engine_stats().kernels_generated, generated) << "a decode step compiled new kernels";
}

TEST_F(LlmModel, GreedyGenerationFollowsReferenceArgmax) {
  Arch a;
  Checkpoint c = random_checkpoint(a);
  llm::Model m = llm::Model::from_safetensors(save(a, c));
  std::vector<int32_t> prompt = {5, 11, 1}, expected, seq = prompt;
  for (int i = 0; i < 6; i++) {
    Vec last = reference_logits(a, c, seq).back();
    const int32_t next = static_cast<int32_t>(std::max_element(last.begin(), last.end()) - last.begin());
    expected.push_back(next);
    seq.push_back(next);
    if (next == 2) break;  // eos_token_id
  }
  std::vector<int32_t> streamed;
  EXPECT_EQ(m.generate(prompt, 6, {}, [&](int32_t t) { return streamed.push_back(t), true; }), expected);
  EXPECT_EQ(streamed, expected);
  // on_token returning false stops after that token; a second generate starts afresh
  EXPECT_EQ(m.generate(prompt, 6, {}, [](int32_t) { return false; }), std::vector<int32_t>{expected[0]});
}

TEST_F(LlmModel, BadInputsAreClearErrors) {
  Arch a;
  Checkpoint c = random_checkpoint(a);
  const std::string folder = save(a, c);
  llm::Model m = llm::Model::from_safetensors(folder);
  auto expect_error = [](auto fn, const std::string& part) {
    try {
      fn();
      ADD_FAILURE() << "expected an error mentioning " << part;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  expect_error([&] { m.forward(Tensor::from_vector(std::vector<int32_t>{19}, {1, 1}), 0); }, "outside the vocabulary");
  expect_error([&] { m.forward(Tensor::from_vector(std::vector<int32_t>{1, 2}, {1, 2}), 31); }, "context of 32");
  expect_error([&] { m.forward(Tensor::from_vector(std::vector<float>{1}, {1, 1}), 0); }, "int32");
  expect_error([&] { m.generate({}, 3); }, "at least one token");
  expect_error([&] { llm::Model::from_safetensors((dir_ / "nowhere").string()); }, "expected a folder");
  std::ofstream(dir_ / "config.json") << R"({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]})";
  expect_error([&] { llm::Model::from_safetensors(folder); }, "got \"gpt2\"");
  Arch wrong = a;
  wrong.hidden = 25;  // the checkpoint's MLP is 24 wide
  std::ofstream(dir_ / "config.json") << config_json(wrong);
  expect_error([&] { llm::Model::from_safetensors(folder); }, "mlp.gate_proj.weight: expected shape (25, 16), got (24, 16)");
}

// ---- rotary embeddings: both layouts and both scalings against their definitions
TEST(LlmRope, HalfAndPairLayouts) {
  const int64_t H = 2, T = 3, D = 6;
  std::vector<float> x(static_cast<size_t>(H * T * D));
  for (size_t i = 0; i < x.size(); i++) x[i] = std::sin(0.37 * double(i)) * 2;
  const std::vector<float> inv = {1.0f, 0.3f, 0.05f};
  const std::vector<int32_t> pos = {0, 5, 17};
  auto [cos, sin] = llm::rope_angles(Tensor::from_vector(pos, {T}), Tensor::from_vector(inv, {3}));
  for (llm::RopeLayout layout : {llm::RopeLayout::Half, llm::RopeLayout::Pair}) {
    std::vector<float> got = llm::apply_rope(Tensor::from_vector(x, {1, H, T, D}), cos, sin, layout).to_vector<float>();
    for (int64_t h = 0; h < H; h++)
      for (int64_t t = 0; t < T; t++)
        for (int64_t i = 0; i < D / 2; i++) {
          // Half pairs (i, i + D/2); Pair pairs (2i, 2i + 1)
          const int64_t a = layout == llm::RopeLayout::Half ? i : 2 * i, b = layout == llm::RopeLayout::Half ? i + D / 2 : 2 * i + 1;
          const size_t base = static_cast<size_t>((h * T + t) * D);
          const double angle = double(pos[size_t(t)]) * double(inv[size_t(i)]), x1 = x[base + size_t(a)], x2 = x[base + size_t(b)];
          EXPECT_NEAR(got[base + size_t(a)], x1 * std::cos(angle) - x2 * std::sin(angle), 1e-5);
          EXPECT_NEAR(got[base + size_t(b)], x2 * std::cos(angle) + x1 * std::sin(angle), 1e-5);
        }
  }
}

TEST(LlmRope, ScalingTypes) {
  const std::string base = R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 1, "num_attention_heads": 1,
    "intermediate_size": 8, "vocab_size": 8, "rope_theta": 500000, )";
  llm::Config plain = llm::config_from_hf_json(base + R"("rope_scaling": null})", "t");
  llm::Config linear = llm::config_from_hf_json(base + R"("rope_scaling": {"type": "linear", "factor": 4}})", "t");
  llm::Config llama3 = llm::config_from_hf_json(
      base + R"("rope_scaling": {"rope_type": "llama3", "factor": 8, "low_freq_factor": 1, "high_freq_factor": 4,
      "original_max_position_embeddings": 64}})", "t");
  std::vector<float> f = llm::rope_inv_freq(plain), fl = llm::rope_inv_freq(linear), f3 = llm::rope_inv_freq(llama3);
  ASSERT_EQ(f.size(), 32u);
  int low = 0, mid = 0, high = 0;
  for (size_t i = 0; i < f.size(); i++) {
    EXPECT_NEAR(f[i], std::pow(500000.0, -double(2 * i) / 64), 1e-7 * f[i]);
    EXPECT_NEAR(fl[i], f[i] / 4, 1e-7 * f[i]);
    // Meta's rule: wavelengths above 64 / 1 slow down 8x, below 64 / 4 stay, a linear blend in between
    const double wavelen = 2 * M_PI / f[i], smooth = (64 / wavelen - 1) / (4 - 1);
    const double want = wavelen > 64 ? f[i] / 8 : wavelen < 16 ? f[i] : (1 - smooth) * f[i] / 8 + smooth * f[i];
    (wavelen > 64 ? low : wavelen < 16 ? high : mid)++;
    EXPECT_NEAR(f3[i], want, 1e-6 * f[i]) << i;
  }
  // every branch is exercised
  EXPECT_GT(low, 0);
  EXPECT_GT(mid, 0);
  EXPECT_GT(high, 0);
  EXPECT_THROW(llm::config_from_hf_json(base + R"("rope_scaling": {"type": "yarn", "factor": 4}})", "t"), Error);
}

// ---- sampling: each filter against a float64 reimplementation of its definition
std::vector<double> reference_distribution(const std::vector<float>& logits, const llm::Sampling& s) {
  const size_t n = logits.size();
  std::vector<double> p(n);
  const double top = *std::max_element(logits.begin(), logits.end());
  double z = 0;
  for (size_t i = 0; i < n; i++) z += p[i] = std::exp((logits[i] - top) / s.temperature);
  for (double& x : p) x /= z;
  std::vector<bool> keep(n, true);
  std::vector<size_t> by_p(n);
  std::iota(by_p.begin(), by_p.end(), 0);
  std::stable_sort(by_p.begin(), by_p.end(), [&](size_t a, size_t b) { return p[a] > p[b]; });
  if (s.top_k > 0)  // the k most likely
    for (size_t r = static_cast<size_t>(s.top_k); r < n; r++) keep[by_p[r]] = false;
  double kept = 0;
  for (size_t i = 0; i < n; i++) kept += keep[i] ? p[i] : 0;
  double before = 0;  // top-p: a token stays if the more likely kept ones hold less than top_p of the kept mass
  for (size_t r = 0; r < n; r++) {
    size_t i = by_p[r];
    if (!keep[i]) continue;
    if (r > 0 && before / kept >= s.top_p) keep[i] = false;
    before += p[i];
  }
  for (size_t i = 0; i < n; i++)  // min-p: at least min_p times the most likely token's probability
    if (p[i] < s.min_p * p[by_p[0]]) keep[i] = false;
  double mass = 0;
  for (size_t i = 0; i < n; i++) mass += keep[i] ? p[i] : 0;
  std::vector<double> out(n);
  for (size_t i = 0; i < n; i++) out[i] = keep[i] ? p[i] / mass : 0;
  return out;
}

const std::vector<float> kLogits = {1.5f, -0.3f, 2.2f, 0.0f, 0.9f, 2.0f, -1.7f, 0.4f, 1.1f, -0.8f};

TEST(LlmSampling, DistributionsMatchDefinitions) {
  for (llm::Sampling s : {llm::Sampling{.temperature = 1}, llm::Sampling{.temperature = 0.6f, .top_k = 3},
                          llm::Sampling{.temperature = 1, .top_p = 0.7f}, llm::Sampling{.temperature = 1.3f, .top_k = 5, .top_p = 0.8f},
                          llm::Sampling{.temperature = 1, .min_p = 0.3f}, llm::Sampling{.temperature = 0.8f, .top_p = 0.01f}}) {
    std::vector<double> got = llm::sampling_distribution(kLogits, {}, s), want = reference_distribution(kLogits, s);
    for (size_t i = 0; i < got.size(); i++)
      EXPECT_NEAR(got[i], want[i], 1e-12) << "token " << i << " temperature " << s.temperature << " top_k " << s.top_k
                                          << " top_p " << s.top_p << " min_p " << s.min_p;
  }
}

TEST(LlmSampling, RepetitionPenaltyAndGreedy) {
  const llm::Sampling s{.temperature = 1, .repeat_penalty = 1.5f};
  std::vector<float> penalized = kLogits;
  for (size_t i : {2u, 6u}) penalized[i] = penalized[i] > 0 ? penalized[i] / 1.5f : penalized[i] * 1.5f;
  std::vector<double> got = llm::sampling_distribution(kLogits, {2, 6, 6}, s), want = reference_distribution(penalized, s);
  for (size_t i = 0; i < got.size(); i++) EXPECT_NEAR(got[i], want[i], 1e-12) << i;
  std::mt19937_64 rng(0);
  EXPECT_EQ(llm::sample_token(kLogits, {}, {}, rng), 2);                             // argmax
  EXPECT_EQ(llm::sample_token(kLogits, {2}, {.repeat_penalty = 1.5f}, rng), 5);      // 2.2 / 1.5 < 2.0
  EXPECT_THROW(llm::sample_token(kLogits, {}, {.temperature = -1}, rng), Error);
  EXPECT_THROW(llm::sample_token(kLogits, {}, {.temperature = 1, .top_p = 0}, rng), Error);
}

// Draw frequencies follow the distribution: each within 5 standard errors over 20000 seeded draws;
// the same seed repeats the same draws.
TEST(LlmSampling, DrawFrequenciesAndSeeds) {
  const llm::Sampling s{.temperature = 0.9f, .top_k = 6, .top_p = 0.9f};
  const std::vector<double> p = reference_distribution(kLogits, s);
  const int N = 20000;
  std::vector<int> count(kLogits.size());
  std::mt19937_64 rng(42), again(42);
  std::vector<int32_t> first;
  for (int i = 0; i < N; i++) {
    const int32_t t = llm::sample_token(kLogits, {}, s, rng);
    count[static_cast<size_t>(t)]++;
    if (i < 50) first.push_back(t);
  }
  for (size_t i = 0; i < p.size(); i++) {
    const double se = std::sqrt(p[i] * (1 - p[i]) / N);
    EXPECT_NEAR(double(count[i]) / N, p[i], 5 * se + 1e-12) << "token " << i;
  }
  for (int32_t t : first) EXPECT_EQ(llm::sample_token(kLogits, {}, s, again), t);
}

}  // namespace
