#pragma once
// Optimizers, as tinygrad's: the learning rate and Adam's bias-correction powers live in tensors,
// so changing the rate never compiles a new kernel; step() realizes every update in one schedule.
#include <vector>

#include "kiln/tensor.h"

namespace kiln::nn::optim {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  void zero_grad();
  // Builds the updates lazily and returns every tensor they assign (parameters and optimizer
  // state), for realizing together with other work (tinygrad's schedule_step).
  std::vector<Tensor> schedule_step();
  void step();  // realize(schedule_step())
  double lr() const;
  void set_lr(double lr);  // a new value in the same buffer shape: no recompile
  std::vector<Tensor> params;
  Tensor lr_tensor;  // shape (1,), float32

 protected:
  Optimizer(std::vector<Tensor> params, double lr);
  // The amount to subtract from each parameter, and the state tensors the step assigned.
  virtual std::vector<Tensor> updates(const std::vector<Tensor>& grads, std::vector<Tensor>& state) = 0;
  std::vector<Tensor> zeros_like_params() const;
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, double lr = 0.001, double momentum = 0, double weight_decay = 0,
      bool nesterov = false);
  double momentum, weight_decay;
  bool nesterov;
  std::vector<Tensor> buf;  // momentum buffers

 protected:
  std::vector<Tensor> updates(const std::vector<Tensor>& grads, std::vector<Tensor>& state) override;
};

// Muon, as tinygrad's: SGD momentum (Nesterov by default), then each parameter's step (as a matrix of
// its first axis by the rest) orthogonalized by ns_steps Newton–Schulz iterations with
// ns_coefficients, and weight decay applied after the momentum, decoupled: p <- p (1 - lr wd) - lr step.
class Muon : public Optimizer {
 public:
  Muon(std::vector<Tensor> params, double lr = 0.001, double momentum = 0.95, double weight_decay = 0.1,
       int ns_steps = 5, std::vector<double> ns_coefficients = {3.4445, -4.775, 2.0315}, bool nesterov = true);
  double momentum, weight_decay;
  int ns_steps;
  std::vector<double> ns_coefficients;
  bool nesterov;
  std::vector<Tensor> buf;  // momentum buffers

 protected:
  std::vector<Tensor> updates(const std::vector<Tensor>& grads, std::vector<Tensor>& state) override;
};

// Parameters that share a weight decay, as an entry of PyTorch's param_groups: e.g. decay on the
// weight matrices, none on norms and biases.
struct ParamGroup {
  std::vector<Tensor> params;
  double weight_decay = 0;
};

// LAMB (layer-wise trust ratio); with adam=true it is AdamW with decoupled weight decay.
class LAMB : public Optimizer {
 public:
  LAMB(std::vector<Tensor> params, double lr = 0.001, double b1 = 0.9, double b2 = 0.999, double eps = 1e-6,
       double weight_decay = 0, bool adam = false);
  // Each group's parameters decay by its weight_decay (a parameter in two groups must have one decay).
  LAMB(const std::vector<ParamGroup>& groups, double lr, double b1, double b2, double eps, bool adam);
  double b1, b2, eps, weight_decay;  // weight_decay: the single-group constructor's
  std::vector<double> weight_decays;  // per parameter, in params' order
  bool adam;
  Tensor b1_t, b2_t;        // b1^t and b2^t, updated each step
  std::vector<Tensor> m, v;  // first and second moments

 protected:
  std::vector<Tensor> updates(const std::vector<Tensor>& grads, std::vector<Tensor>& state) override;
};

class Adam : public LAMB {
 public:
  Adam(std::vector<Tensor> params, double lr = 0.001, double b1 = 0.9, double b2 = 0.999, double eps = 1e-8)
      : LAMB(std::move(params), lr, b1, b2, eps, 0, true) {}
};

class AdamW : public LAMB {
 public:
  AdamW(std::vector<Tensor> params, double lr = 0.001, double b1 = 0.9, double b2 = 0.999, double eps = 1e-8,
        double weight_decay = 0.01)
      : LAMB(std::move(params), lr, b1, b2, eps, weight_decay, true) {}
  explicit AdamW(const std::vector<ParamGroup>& groups, double lr = 0.001, double b1 = 0.9, double b2 = 0.999,
                 double eps = 1e-8)
      : LAMB(groups, lr, b1, b2, eps, true) {}
};

// Learning-rate schedules: call step() once per optimizer step; they set the optimizer's rate.
class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  void step();
  // Continues the schedule at `step` optimizer steps done (after loading a checkpoint).
  void set_step(int64_t step);
  int64_t epoch_counter = 0;

 protected:
  explicit LRScheduler(Optimizer& opt) : opt_(opt) {}
  virtual double rate_at(int64_t step) const = 0;
  Optimizer& opt_;
};

// lr * gamma^(floor(step / step_size))
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& opt, int64_t step_size, double gamma = 0.1);
  int64_t step_size;
  double base_lr, gamma;

 protected:
  double rate_at(int64_t step) const override;
};

// cosine from lr down to eta_min over t_max steps
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& opt, int64_t t_max, double eta_min = 0);
  int64_t t_max;
  double base_lr, eta_min;

 protected:
  double rate_at(int64_t step) const override;
};

// linear warm-up from max_lr/div_factor to max_lr over pct_start of total_steps, then linear decay
// to max_lr/(div_factor*final_div_factor), as tinygrad's OneCycleLR
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& opt, double max_lr, int64_t total_steps, double pct_start = 0.25, double div_factor = 25,
             double final_div_factor = 1e4);
  double max_lr, initial_lr, final_lr, pct_start;
  int64_t total_steps;

 protected:
  double rate_at(int64_t step) const override;
};

// Linear warm-up to the optimizer's rate over warmup_steps (step t < warmup_steps uses
// lr (t + 1) / warmup_steps), then a cosine from lr down to min_lr at total_steps, min_lr after.
class WarmupCosineLR : public LRScheduler {
 public:
  WarmupCosineLR(Optimizer& opt, int64_t warmup_steps, int64_t total_steps, double min_lr = 0);
  int64_t warmup_steps, total_steps;
  double base_lr, min_lr;

 protected:
  double rate_at(int64_t step) const override;
};

}  // namespace kiln::nn::optim
