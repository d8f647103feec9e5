// Optimizers and learning-rate schedules (tinygrad's formulas). Every update is lazy until step()
// realizes all parameters and state in one schedule.
#include "kiln/nn/optim.h"

#include <cmath>
#include <numbers>
#include <unordered_map>
#include <unordered_set>

#include "kiln/error.h"

namespace kiln::nn::optim {
namespace {

Tensor scalar_buffer(double v) { return Tensor::from_vector(std::vector<float>{static_cast<float>(v)}, {1}); }

// SGD's momentum (tinygrad's "popular" form): buf <- momentum buf + g; the step is buf, or with
// Nesterov g + momentum buf. The assigned buffer joins `state`.
Tensor momentum_step(Tensor& buf, const Tensor& g, double momentum, bool nesterov, std::vector<Tensor>& state) {
  buf.assign(momentum * buf + g);
  state.push_back(buf);
  return nesterov ? g + momentum * buf : buf;
}

std::vector<Tensor> flatten(const std::vector<ParamGroup>& groups) {
  std::vector<Tensor> out;
  for (const ParamGroup& g : groups) out.insert(out.end(), g.params.begin(), g.params.end());
  return out;
}

// Each parameter's group decay, in the order of `params` (the optimizer's, duplicates dropped).
std::vector<double> decays_by_param(const std::vector<ParamGroup>& groups, const std::vector<Tensor>& params) {
  std::unordered_map<const UOp*, double> decay;
  for (const ParamGroup& g : groups)
    for (const Tensor& p : g.params) {
      auto [it, fresh] = decay.emplace(p.uop().get(), g.weight_decay);
      if (!fresh && it->second != g.weight_decay)
        throw_error("optimizer: a parameter of shape ", shape_to_string(p.shape()),
                    " is in two groups with different weight decays (", it->second, " and ", g.weight_decay, ")");
    }
  std::vector<double> out;
  for (const Tensor& p : params) out.push_back(decay.at(p.uop().get()));
  return out;
}

}  // namespace

Optimizer::Optimizer(std::vector<Tensor> ps, double lr) : lr_tensor(scalar_buffer(lr)) {
  std::unordered_set<const UOp*> seen;
  for (Tensor& p : ps) {
    if (!p.dtype().is_float())
      throw_error("optimizer: parameters must be float tensors, got one of dtype ", p.dtype().name());
    if (!seen.insert(p.uop().get()).second) continue;  // the same tensor twice
    p.requires_grad_();
    params.push_back(p);
  }
  if (params.empty()) throw_error("optimizer: expected at least one parameter");
}

std::vector<Tensor> Optimizer::zeros_like_params() const {
  std::vector<Tensor> out;
  for (const Tensor& p : params) out.push_back(Tensor::zeros(p.shape(), p.dtype()).contiguous().realize());
  return out;
}

void Optimizer::zero_grad() {
  for (Tensor& p : params) p.set_grad(std::nullopt);
}

std::vector<Tensor> Optimizer::schedule_step() {
  std::vector<Tensor> grads;
  for (size_t i = 0; i < params.size(); i++) {
    auto g = params[i].grad();
    if (!g) throw_error("optimizer step: parameter ", i, " (shape ", shape_to_string(params[i].shape()),
                        ") has no gradient; call backward() on the loss first");
    grads.push_back(*g);
  }
  std::vector<Tensor> state;
  std::vector<Tensor> delta = updates(grads, state);
  std::vector<Tensor> out;
  for (size_t i = 0; i < params.size(); i++) {
    params[i].assign((params[i].detach() - delta[i]).cast(params[i].dtype()));
    out.push_back(params[i]);
  }
  out.insert(out.end(), state.begin(), state.end());
  return out;
}

void Optimizer::step() { Tensor::realize(schedule_step()); }

double Optimizer::lr() const { return lr_tensor.item<float>(); }
void Optimizer::set_lr(double lr) { lr_tensor.assign(scalar_buffer(lr)); }

// ---- SGD

SGD::SGD(std::vector<Tensor> ps, double lr, double momentum, double weight_decay, bool nesterov)
    : Optimizer(std::move(ps), lr), momentum(momentum), weight_decay(weight_decay), nesterov(nesterov) {
  if (momentum) buf = zeros_like_params();
}

std::vector<Tensor> SGD::updates(const std::vector<Tensor>& grads, std::vector<Tensor>& state) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < params.size(); i++) {
    Tensor g = grads[i];
    if (weight_decay != 0) g = g + weight_decay * params[i].detach();
    if (momentum != 0) g = momentum_step(buf[i], g, momentum, nesterov, state);
    out.push_back(g * lr_tensor.reshape({}));
  }
  return out;
}

// ---- Muon

Muon::Muon(std::vector<Tensor> ps, double lr, double momentum, double weight_decay, int ns_steps,
           std::vector<double> ns_coefficients, bool nesterov)
    : Optimizer(std::move(ps), lr), momentum(momentum), weight_decay(weight_decay), ns_steps(ns_steps),
      ns_coefficients(std::move(ns_coefficients)), nesterov(nesterov) {
  if (momentum < 0) throw_error("Muon: momentum must be >= 0, got ", momentum);
  if (ns_steps < 0) throw_error("Muon: ns_steps must be >= 0, got ", ns_steps);
  if (this->ns_coefficients.empty()) throw_error("Muon: expected at least one Newton-Schulz coefficient");
  if (momentum) buf = zeros_like_params();
}

std::vector<Tensor> Muon::updates(const std::vector<Tensor>& grads, std::vector<Tensor>& state) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < params.size(); i++) {
    Tensor g = grads[i];
    if (momentum != 0) g = momentum_step(buf[i], g, momentum, nesterov, state);
    const Shape& shape = params[i].shape();
    g = g.reshape({shape.empty() ? 1 : shape[0], -1}).newton_schulz(ns_steps, ns_coefficients).reshape(shape);
    if (weight_decay != 0) g = g + weight_decay * params[i].detach();
    out.push_back(g * lr_tensor.reshape({}));
  }
  return out;
}

// ---- LAMB / Adam / AdamW

LAMB::LAMB(std::vector<Tensor> ps, double lr, double b1, double b2, double eps, double weight_decay, bool adam)
    : Optimizer(std::move(ps), lr), b1(b1), b2(b2), eps(eps), weight_decay(weight_decay),
      weight_decays(params.size(), weight_decay), adam(adam), b1_t(scalar_buffer(1)), b2_t(scalar_buffer(1)),
      m(zeros_like_params()), v(zeros_like_params()) {}

LAMB::LAMB(const std::vector<ParamGroup>& groups, double lr, double b1, double b2, double eps, bool adam)
    : Optimizer(flatten(groups), lr), b1(b1), b2(b2), eps(eps), weight_decay(0),
      weight_decays(decays_by_param(groups, params)), adam(adam), b1_t(scalar_buffer(1)), b2_t(scalar_buffer(1)),
      m(zeros_like_params()), v(zeros_like_params()) {}

std::vector<Tensor> LAMB::updates(const std::vector<Tensor>& grads, std::vector<Tensor>& state) {
  b1_t.assign(b1_t * b1);
  b2_t.assign(b2_t * b2);
  state.insert(state.end(), {b1_t, b2_t});
  std::vector<Tensor> out;
  for (size_t i = 0; i < params.size(); i++) {
    const Tensor& g = grads[i];
    m[i].assign(b1 * m[i] + (1.0 - b1) * g);
    v[i].assign(b2 * v[i] + (1.0 - b2) * (g * g));
    state.insert(state.end(), {m[i], v[i]});
    Tensor m_hat = m[i] / (1.0 - b1_t.reshape({})), v_hat = v[i] / (1.0 - b2_t.reshape({}));
    Tensor up = m_hat / (v_hat.sqrt() + eps);
    if (weight_decays[i] != 0) up = up + weight_decays[i] * params[i].detach();
    if (!adam) {  // trust ratio ||p|| / ||update||, 1 where either is zero
      Tensor r1 = params[i].detach().square().sum().sqrt(), r2 = up.square().sum().sqrt();
      up = up * r1.gt(0.0f).where(r2.gt(0.0f).where(r1 / r2, 1.0f), 1.0f);
    }
    out.push_back(lr_tensor.reshape({}) * up);
  }
  return out;
}

// ---- schedules

void LRScheduler::step() { opt_.set_lr(rate_at(++epoch_counter)); }

void LRScheduler::set_step(int64_t step) {
  if (step < 0) throw_error("LRScheduler::set_step: expected a step >= 0, got ", step);
  epoch_counter = step;
  opt_.set_lr(rate_at(step));
}

StepLR::StepLR(Optimizer& opt, int64_t step_size, double gamma)
    : LRScheduler(opt), step_size(step_size), base_lr(opt.lr()), gamma(gamma) {
  if (step_size < 1) throw_error("StepLR: step_size must be >= 1, got ", step_size);
}
double StepLR::rate_at(int64_t step) const {
  return base_lr * std::pow(gamma, static_cast<double>(step / step_size));
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& opt, int64_t t_max, double eta_min)
    : LRScheduler(opt), t_max(t_max), base_lr(opt.lr()), eta_min(eta_min) {
  if (t_max < 1) throw_error("CosineAnnealingLR: t_max must be >= 1, got ", t_max);
}
double CosineAnnealingLR::rate_at(int64_t step) const {
  return eta_min + (base_lr - eta_min) * (1 + std::cos(std::numbers::pi * static_cast<double>(step) / t_max)) / 2;
}

OneCycleLR::OneCycleLR(Optimizer& opt, double max_lr, int64_t total_steps, double pct_start, double div_factor,
                       double final_div_factor)
    : LRScheduler(opt), max_lr(max_lr), initial_lr(max_lr / div_factor),
      final_lr(max_lr / (div_factor * final_div_factor)), pct_start(pct_start), total_steps(total_steps) {
  if (total_steps < 1) throw_error("OneCycleLR: total_steps must be >= 1, got ", total_steps);
  opt.set_lr(initial_lr);
}
double OneCycleLR::rate_at(int64_t step) const {
  double warm = pct_start * static_cast<double>(total_steps), t = static_cast<double>(step);
  if (t < warm) return initial_lr + (max_lr - initial_lr) * t / warm;
  double frac = std::min(1.0, (t - warm) / std::max(1.0, static_cast<double>(total_steps) - warm));
  return max_lr + (final_lr - max_lr) * frac;
}

WarmupCosineLR::WarmupCosineLR(Optimizer& opt, int64_t warmup_steps, int64_t total_steps, double min_lr)
    : LRScheduler(opt), warmup_steps(warmup_steps), total_steps(total_steps), base_lr(opt.lr()), min_lr(min_lr) {
  if (warmup_steps < 0) throw_error("WarmupCosineLR: warmup_steps must be >= 0, got ", warmup_steps);
  if (total_steps < warmup_steps)
    throw_error("WarmupCosineLR: total_steps (", total_steps, ") must be >= warmup_steps (", warmup_steps, ")");
  opt.set_lr(rate_at(0));
}
double WarmupCosineLR::rate_at(int64_t step) const {
  if (step < warmup_steps) return base_lr * static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
  if (step >= total_steps) return min_lr;
  double progress = static_cast<double>(step - warmup_steps) / static_cast<double>(total_steps - warmup_steps);
  return min_lr + (base_lr - min_lr) * (1 + std::cos(std::numbers::pi * progress)) / 2;
}

}  // namespace kiln::nn::optim
