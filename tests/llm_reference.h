#pragma once
// A tiny random LLaMA-family checkpoint in Hugging Face's names and layout, and a float64 reference
// forward written from Hugging Face's LlamaForCausalLM math (RMSNorm, rotate_half rotary embeddings,
// grouped-query attention, SwiGLU), shared by the tests that load it from safetensors and from GGUF.
#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "kiln/tensor.h"

namespace kt::llm_ref {

using kiln::Shape;
using Vec = std::vector<double>;

struct Arch {
  std::string model_type = "llama";
  int64_t dim = 16, layers = 2, heads = 4, kv_heads = 2, head_dim = 4, hidden = 24, vocab = 19, max_pos = 32;
  bool bias = false, qk_norm = false, tied = false;
  int64_t window = 0;  // mistral's sliding_window
  double eps = 1e-5, theta = 10000;
};

// Named weights (row-major, nn.Linear's (out, in)) drawn at random, and their shapes.
struct Checkpoint {
  std::map<std::string, Vec> w;
  std::map<std::string, Shape> shapes;
  std::mt19937 rng{7};
  void add(const std::string& name, Shape shape, double scale, double offset = 0) {
    std::normal_distribution<float> n(0.f, 1.f);
    int64_t size = 1;
    for (int64_t d : shape) size *= d;
    Vec v(static_cast<size_t>(size));
    for (double& x : v) x = static_cast<float>(offset + scale * n(rng));  // float32 values, as stored
    w[name] = v, shapes[name] = shape;
  }
};

inline Checkpoint random_checkpoint(const Arch& a) {
  Checkpoint c;
  const int64_t q = a.heads * a.head_dim, kv = a.kv_heads * a.head_dim;
  c.add("model.embed_tokens.weight", {a.vocab, a.dim}, 1.0);
  for (int64_t i = 0; i < a.layers; i++) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    c.add(p + "input_layernorm.weight", {a.dim}, 0.1, 1.0);
    c.add(p + "post_attention_layernorm.weight", {a.dim}, 0.1, 1.0);
    c.add(p + "self_attn.q_proj.weight", {q, a.dim}, 0.5);
    c.add(p + "self_attn.k_proj.weight", {kv, a.dim}, 0.5);
    c.add(p + "self_attn.v_proj.weight", {kv, a.dim}, 0.5);
    c.add(p + "self_attn.o_proj.weight", {a.dim, q}, 0.3);
    if (a.bias)
      for (auto [n, size] : {std::pair{"q", q}, {"k", kv}, {"v", kv}}) c.add(p + "self_attn." + n + "_proj.bias", {size}, 0.3);
    if (a.qk_norm)
      for (const char* n : {"q_norm", "k_norm"}) c.add(p + "self_attn." + n + ".weight", {a.head_dim}, 0.1, 1.0);
    c.add(p + "mlp.gate_proj.weight", {a.hidden, a.dim}, 0.3);
    c.add(p + "mlp.up_proj.weight", {a.hidden, a.dim}, 0.3);
    c.add(p + "mlp.down_proj.weight", {a.dim, a.hidden}, 0.3);
  }
  c.add("model.norm.weight", {a.dim}, 0.1, 1.0);
  if (!a.tied) c.add("lm_head.weight", {a.vocab, a.dim}, 0.3);
  return c;
}

// ---- the float64 reference: the whole sequence at once, causal (and windowed) attention
inline Vec rms_norm(const Vec& x, const Vec& w, double eps) {
  double ms = 0;
  for (double v : x) ms += v * v / static_cast<double>(x.size());
  Vec out(x.size());
  for (size_t i = 0; i < x.size(); i++) out[i] = x[i] / std::sqrt(ms + eps) * w[i];
  return out;
}
inline Vec linear(const Vec& x, const Vec& w, const Vec* b = nullptr) {
  Vec out(w.size() / x.size());
  for (size_t o = 0; o < out.size(); o++) {
    double s = b ? (*b)[o] : 0;
    for (size_t i = 0; i < x.size(); i++) s += w[o * x.size() + i] * x[i];
    out[o] = s;
  }
  return out;
}
// rotate_half: feature i pairs with i + d/2
inline void rope(Vec& x, size_t head, size_t d, double pos, double theta) {
  for (size_t i = 0; i < d / 2; i++) {
    const double angle = pos / std::pow(theta, 2.0 * static_cast<double>(i) / static_cast<double>(d));
    double& a = x[head * d + i];
    double& b = x[head * d + i + d / 2];
    const double x1 = a, x2 = b;
    a = x1 * std::cos(angle) - x2 * std::sin(angle), b = x2 * std::cos(angle) + x1 * std::sin(angle);
  }
}

inline std::vector<Vec> reference_logits(const Arch& a, const Checkpoint& c, const std::vector<int32_t>& tokens) {
  auto W = [&](const std::string& n) -> const Vec& { return c.w.at(n); };
  const size_t T = tokens.size(), D = static_cast<size_t>(a.head_dim), G = static_cast<size_t>(a.heads / a.kv_heads);
  std::vector<Vec> h;
  for (int32_t t : tokens) {
    const Vec& e = W("model.embed_tokens.weight");
    h.emplace_back(e.begin() + t * a.dim, e.begin() + (t + 1) * a.dim);
  }
  for (int64_t l = 0; l < a.layers; l++) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    std::vector<Vec> q(T), k(T), v(T);
    for (size_t t = 0; t < T; t++) {
      Vec x = rms_norm(h[t], W(p + "input_layernorm.weight"), a.eps);
      auto bias = [&](const char* n) { return a.bias ? &W(p + "self_attn." + n + "_proj.bias") : nullptr; };
      q[t] = linear(x, W(p + "self_attn.q_proj.weight"), bias("q"));
      k[t] = linear(x, W(p + "self_attn.k_proj.weight"), bias("k"));
      v[t] = linear(x, W(p + "self_attn.v_proj.weight"), bias("v"));
      for (auto [vec, heads, norm] : {std::tuple{&q[t], a.heads, "q_norm"}, {&k[t], a.kv_heads, "k_norm"}})
        for (size_t hd = 0; hd < static_cast<size_t>(heads); hd++) {
          if (a.qk_norm) {
            Vec one(vec->begin() + hd * D, vec->begin() + (hd + 1) * D);
            one = rms_norm(one, W(p + "self_attn." + norm + ".weight"), a.eps);
            std::copy(one.begin(), one.end(), vec->begin() + hd * D);
          }
          rope(*vec, hd, D, static_cast<double>(t), a.theta);
        }
    }
    for (size_t t = 0; t < T; t++) {
      Vec attn(static_cast<size_t>(a.heads) * D, 0.0);
      for (size_t hd = 0; hd < static_cast<size_t>(a.heads); hd++) {
        const size_t kvh = hd / G;
        std::vector<double> score;
        size_t first = a.window ? static_cast<size_t>(std::max<int64_t>(0, int64_t(t) - a.window + 1)) : 0;
        for (size_t s = first; s <= t; s++) {
          double dot = 0;
          for (size_t i = 0; i < D; i++) dot += q[t][hd * D + i] * k[s][kvh * D + i];
          score.push_back(dot / std::sqrt(static_cast<double>(D)));
        }
        const double top = *std::max_element(score.begin(), score.end());
        double total = 0;
        for (double& x : score) total += x = std::exp(x - top);
        for (size_t s = first; s <= t; s++)
          for (size_t i = 0; i < D; i++) attn[hd * D + i] += score[s - first] / total * v[s][kvh * D + i];
      }
      Vec o = linear(attn, W(p + "self_attn.o_proj.weight"));
      for (size_t i = 0; i < o.size(); i++) h[t][i] += o[i];
    }
    for (size_t t = 0; t < T; t++) {
      Vec x = rms_norm(h[t], W(p + "post_attention_layernorm.weight"), a.eps);
      Vec g = linear(x, W(p + "mlp.gate_proj.weight")), u = linear(x, W(p + "mlp.up_proj.weight"));
      for (size_t i = 0; i < g.size(); i++) g[i] = g[i] / (1 + std::exp(-g[i])) * u[i];
      Vec d = linear(g, W(p + "mlp.down_proj.weight"));
      for (size_t i = 0; i < d.size(); i++) h[t][i] += d[i];
    }
  }
  std::vector<Vec> logits;
  for (size_t t = 0; t < T; t++)
    logits.push_back(linear(rms_norm(h[t], W("model.norm.weight"), a.eps), W(a.tied ? "model.embed_tokens.weight" : "lm_head.weight")));
  return logits;
}

}  // namespace kt::llm_ref
