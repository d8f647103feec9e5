// Recurrent layers RNN, GRU and LSTM, unrolled over the sequence as ONNX defines them: gate order
// (GRU z r h, LSTM i o f c), per-direction weights W [dirs, G*H, input], R [dirs, G*H, H] and biases
// B [dirs, 2*G*H] (Wb then Rb), the activations attribute (with activation_alpha/beta), clip on the
// activations' inputs, both layouts, and sequence_lens (steps past a sequence's end keep its state and
// output zeros).
#include <algorithm>
#include <functional>

#include "onnx/op.h"

namespace kiln::onnx {

namespace {

// The activations the recurrent ops accept by name: how many of activation_alpha/activation_beta each
// takes, and their defaults.
struct ActivationDef {
  std::string_view name;
  int params;
  double alpha, beta;
  Tensor (*fn)(const Tensor&, double alpha, double beta);
};
const ActivationDef kActivations[] = {
    {"Relu", 0, 0, 0, [](const Tensor& x, double, double) { return x.relu(); }},
    {"Tanh", 0, 0, 0, [](const Tensor& x, double, double) { return x.tanh(); }},
    {"Sigmoid", 0, 0, 0, [](const Tensor& x, double, double) { return x.sigmoid(); }},
    {"Softsign", 0, 0, 0, [](const Tensor& x, double, double) { return x.softsign(); }},
    {"Softplus", 0, 0, 0, [](const Tensor& x, double, double) { return x.softplus(); }},
    {"LeakyRelu", 1, 0.01, 0, [](const Tensor& x, double a, double) { return x.leaky_relu(a); }},
    {"Elu", 1, 1, 0, [](const Tensor& x, double a, double) { return x.elu(a); }},
    {"ThresholdedRelu", 1, 1, 0, [](const Tensor& x, double a, double) { return x.gt(a).where(x, 0.0); }},
    {"Affine", 2, 1, 0, [](const Tensor& x, double a, double b) { return x * x.const_like(a) + x.const_like(b); }},
    {"ScaledTanh", 2, 1, 1,
     [](const Tensor& x, double a, double b) { return (x * x.const_like(b)).tanh() * x.const_like(a); }},
    {"HardSigmoid", 2, 0.2, 0.5, [](const Tensor& x, double a, double b) { return x.hardsigmoid(a, b); }},
};

const ActivationDef* find_activation(std::string_view name) {
  for (const auto& a : kActivations)
    if (a.name == name) return &a;
  return nullptr;
}

struct Activation {
  const ActivationDef* def;
  double alpha, beta;
  Tensor operator()(const Tensor& x) const { return def->fn(x, alpha, beta); }
};

int num_directions(const NodeAttrs& n) { return n.s("direction", "forward") == "bidirectional" ? 2 : 1; }

// The activations of every direction (`per_dir` each, `defaults` when the attribute is absent), each
// taking its alpha and beta from the lists in order.
std::vector<Activation> activations(const NodeAttrs& n, std::vector<std::string> defaults) {
  const int dirs = num_directions(n);
  std::vector<std::string> names = n.strings("activations");
  const size_t per_dir = defaults.size();
  if (names.empty())
    for (int d = 0; d < dirs; d++) names.insert(names.end(), defaults.begin(), defaults.end());
  if (names.size() != per_dir * dirs)
    n.fail("activations lists ", names.size(), " functions, expected ", per_dir * dirs, " (", per_dir,
           " per direction)");
  std::vector<float> alphas = n.floats("activation_alpha"), betas = n.floats("activation_beta");
  size_t next_alpha = 0, next_beta = 0;
  std::vector<Activation> out;
  for (const auto& name : names) {
    const ActivationDef* def = find_activation(name);
    if (!def) n.fail("activation '", name, "' is not supported");
    Activation a{def, def->alpha, def->beta};
    if (def->params >= 1 && next_alpha < alphas.size()) a.alpha = alphas[next_alpha++];
    if (def->params >= 2 && next_beta < betas.size()) a.beta = betas[next_beta++];
    out.push_back(a);
  }
  return out;
}

void check_recurrent(const NodeAttrs& n, std::vector<std::string> defaults) {
  check_string(n, "direction", "forward", {"forward", "reverse", "bidirectional"});
  if (n.i("layout", 0) != 0 && n.i("layout", 0) != 1) n.fail("layout ", n.i("layout", 0), " is not 0 or 1");
  activations(n, std::move(defaults));
}

// One direction's weights, split as the op's gates need them.
struct DirWeights {
  Tensor r;                          // R[d]: [G*H, H]
  Tensor rb;                         // Rb[d]: [G*H]
  std::optional<Tensor> peepholes;   // LSTM's P[d]: [3*H]
  const Activation* act;             // this direction's activations
};

// A cell step: from x_t·W^T + Wb [batch, G*H] and the states (h, or h and c), the new states.
using Step = std::function<std::vector<Tensor>(const Tensor& xw, const std::vector<Tensor>& states,
                                               const DirWeights& w)>;

// Clips a gate's pre-activation to [-clip, clip] when the clip attribute is given.
Tensor clipped(const NodeAttrs& n, const Tensor& x) {
  if (!n.has("clip")) return x;
  const double c = n.f("clip", 0);
  return x.clip(-c, c);
}

// Runs the layer: inputs X, W, R, B, sequence_lens, then one initial state per state (inputs 5...),
// then LSTM's P (input 7). Returns Y, then each state's final value.
std::vector<Tensor> unroll(const Node& n, int gates, int num_states, std::vector<std::string> default_acts,
                           const Step& step) {
  const bool batch_first = n.i("layout", 0) == 1;
  Tensor x = batch_first ? n.in(0).transpose(0, 1) : n.in(0);  // [seq, batch, input]
  const Tensor &w = n.in(1), &r = n.in(2);
  const int dirs = num_directions(n);
  if (x.ndim() != 3 || w.ndim() != 3 || r.ndim() != 3) n.fail("X, W and R must be 3-D");
  const int64_t seq = x.shape()[0], batch = x.shape()[1], hidden = n.i("hidden_size", r.shape()[2]);
  if (w.shape() != Shape{dirs, gates * hidden, x.shape()[2]} || r.shape() != Shape{dirs, gates * hidden, hidden})
    n.fail("W ", shape_to_string(w.shape()), " and R ", shape_to_string(r.shape()), " do not fit ", dirs,
           " direction(s), ", gates, " gate(s), hidden size ", hidden, " and input size ", x.shape()[2]);
  Tensor b = n.opt(3) ? *n.opt(3) : Tensor::zeros({dirs, 2 * gates * hidden}, x.dtype());
  if (b.shape() != Shape{dirs, 2 * gates * hidden}) n.fail("B has shape ", shape_to_string(b.shape()));

  // Sequences shorter than seq: a mask of the steps inside each, and (reversed) each one's own order.
  std::optional<Tensor> mask, reverse_index;
  if (n.opt(4)) {
    std::vector<int64_t> lens = n.ints_of(4);
    if (static_cast<int64_t>(lens.size()) != batch)
      n.fail("sequence_lens has ", lens.size(), " values for batch ", batch);
    std::vector<int64_t> index(seq * batch);
    std::vector<uint8_t> inside(seq * batch);
    for (int64_t t = 0; t < seq; t++)
      for (int64_t i = 0; i < batch; i++) {
        if (lens[i] < 0 || lens[i] > seq) n.fail("sequence length ", lens[i], " is outside [0, ", seq, "]");
        inside[t * batch + i] = t < lens[i];
        index[t * batch + i] = t < lens[i] ? lens[i] - 1 - t : t;
      }
    if (std::find(inside.begin(), inside.end(), 0) != inside.end()) {
      mask = Tensor::from_vector<uint8_t>(inside, {seq, batch, 1}).cast(dtypes::bool_);
      reverse_index = Tensor::from_vector<int64_t>(index, {seq, batch, 1});
    }
  }
  auto reversed = [&](const Tensor& v) {  // an involution: it also puts reversed outputs back
    return reverse_index ? v.gather(0, reverse_index->expand({seq, batch, v.shape()[2]})) : v.flip({0});
  };

  std::vector<Activation> acts = activations(n, default_acts);
  std::vector<Tensor> ys, finals(num_states * dirs, x);
  for (int d = 0; d < dirs; d++) {
    const bool reverse = d == 1 || n.s("direction", "forward") == "reverse";
    auto row = [&](const Tensor& t) { return t.shrink({{d, d + 1}, {0, t.shape()[1]}}).reshape({-1}); };
    Tensor wd = w.shrink({{d, d + 1}, {0, w.shape()[1]}, {0, w.shape()[2]}}).reshape({gates * hidden, -1});
    Tensor rd = r.shrink({{d, d + 1}, {0, r.shape()[1]}, {0, r.shape()[2]}}).reshape({gates * hidden, hidden});
    Tensor bd = row(b);
    DirWeights dw{rd, bd.shrink({{gates * hidden, 2 * gates * hidden}}), std::nullopt, &acts[d * default_acts.size()]};
    if (n.opt(7)) dw.peepholes = row(*n.opt(7));
    Tensor xs = reverse ? reversed(x) : x;
    Tensor xw = xs.matmul(wd.transpose(0, 1)) + bd.shrink({{0, gates * hidden}});  // every step's input term at once
    std::vector<Tensor> states;
    for (int s = 0; s < num_states; s++) {
      std::optional<Tensor> init = n.opt(5 + s);
      if (!init) {
        states.push_back(Tensor::zeros({batch, hidden}, x.dtype()));
        continue;
      }
      Tensor all = batch_first ? init->transpose(0, 1) : *init;  // [dirs, batch, H]
      if (all.shape() != Shape{dirs, batch, hidden})
        n.fail("initial state ", s, " has shape ", shape_to_string(init->shape()));
      states.push_back(all.shrink({{d, d + 1}, {0, batch}, {0, hidden}}).reshape({batch, hidden}));
    }
    std::vector<Tensor> outs;
    for (int64_t t = 0; t < seq; t++) {
      Tensor xw_t = xw.shrink({{t, t + 1}, {0, batch}, {0, gates * hidden}}).reshape({batch, gates * hidden});
      std::vector<Tensor> next = step(xw_t, states, dw);
      if (mask) {
        Tensor m = mask->shrink({{t, t + 1}, {0, batch}, {0, 1}}).reshape({batch, 1});
        for (int s = 0; s < num_states; s++) next[s] = m.where(next[s], states[s]);
        outs.push_back(m.where(next[0], next[0].zeros_like()));
      } else {
        outs.push_back(next[0]);
      }
      states = std::move(next);
    }
    Tensor y = Tensor::stack(outs, 0);  // [seq, batch, H]
    ys.push_back(reverse ? reversed(y) : y);
    for (int s = 0; s < num_states; s++) finals[s * dirs + d] = states[s];
  }
  Tensor y = Tensor::stack(ys, 1);  // [seq, dirs, batch, H]
  std::vector<Tensor> result{batch_first ? y.permute({2, 0, 1, 3}) : y};
  for (int s = 0; s < num_states; s++) {
    Tensor h = Tensor::stack({finals.begin() + s * dirs, finals.begin() + (s + 1) * dirs}, 0);  // [dirs, batch, H]
    result.push_back(batch_first ? h.transpose(0, 1) : h);
  }
  return result;
}

// h·R^T + Rb: the recurrent term of every gate.
Tensor recurrent_term(const Tensor& h, const DirWeights& w) { return h.matmul(w.r.transpose(0, 1)) + w.rb; }

std::vector<Tensor> rnn(const Node& n) {
  return unroll(n, 1, 1, {"Tanh"}, [&](const Tensor& xw, const std::vector<Tensor>& s, const DirWeights& w) {
    return std::vector<Tensor>{w.act[0](clipped(n, xw + recurrent_term(s[0], w)))};
  });
}
void check_rnn(const NodeAttrs& n) { check_recurrent(n, {"Tanh"}); }

std::vector<Tensor> gru(const Node& n) {
  const bool linear_before_reset = n.i("linear_before_reset", 0) != 0;
  return unroll(n, 3, 1, {"Sigmoid", "Tanh"}, [&](const Tensor& xw, const std::vector<Tensor>& s, const DirWeights& w) {
    const Tensor& h = s[0];
    const int64_t hidden = h.shape()[1];
    std::vector<Tensor> x3 = xw.chunk(3, 1), r3 = w.r.chunk(3, 0), b3 = w.rb.chunk(3, 0);
    // z and r from one matmul; the candidate's recurrent term depends on linear_before_reset
    Tensor zr = xw.shrink({{0, h.shape()[0]}, {0, 2 * hidden}}) +
                h.matmul(Tensor::cat({r3[0], r3[1]}, 0).transpose(0, 1)) + Tensor::cat({b3[0], b3[1]}, 0);
    std::vector<Tensor> gates = w.act[0](clipped(n, zr)).chunk(2, 1);
    const Tensor &z = gates[0], &r = gates[1];
    Tensor rh = linear_before_reset ? r * (h.matmul(r3[2].transpose(0, 1)) + b3[2])
                                    : (r * h).matmul(r3[2].transpose(0, 1)) + b3[2];
    Tensor candidate = w.act[1](clipped(n, x3[2] + rh));
    return std::vector<Tensor>{(z.const_like(1) - z) * candidate + z * h};
  });
}
void check_gru(const NodeAttrs& n) { check_recurrent(n, {"Sigmoid", "Tanh"}); }

std::vector<Tensor> lstm(const Node& n) {
  return unroll(n, 4, 2, {"Sigmoid", "Tanh", "Tanh"},
                [&](const Tensor& xw, const std::vector<Tensor>& s, const DirWeights& w) {
    const Tensor &h = s[0], &c = s[1];
    std::vector<Tensor> g = (xw + recurrent_term(h, w)).chunk(4, 1);  // i o f c
    std::vector<Tensor> p;
    if (w.peepholes) p = w.peepholes->chunk(3, 0);                    // i o f
    auto peep = [&](int k, const Tensor& state) { return p.empty() ? g[k] : g[k] + p[k] * state; };
    Tensor i = w.act[0](clipped(n, peep(0, c))), f = w.act[0](clipped(n, peep(2, c)));
    Tensor c_next = f * c + i * w.act[1](clipped(n, g[3]));
    Tensor o = w.act[0](clipped(n, peep(1, c_next)));
    return std::vector<Tensor>{o * w.act[2](c_next), c_next};
  });
}
void check_lstm(const NodeAttrs& n) {
  check_recurrent(n, {"Sigmoid", "Tanh", "Tanh"});
  if (n.i("input_forget", 0) != 0) n.fail("input_forget=1 is not supported");
}

}  // namespace

OpTable rnn_ops() {
  return {
      {"RNN", rnn, check_rnn},
      {"GRU", gru, check_gru},
      {"LSTM", lstm, check_lstm},
  };
}

}  // namespace kiln::onnx
