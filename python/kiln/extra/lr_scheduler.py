"""tinygrad's extra/lr_scheduler.py over kiln's C++ schedules: call step() once per optimizer step;
it sets the optimizer's rate (opt.lr), which a TinyJit replay reads like any input."""
from __future__ import annotations
from kiln._core import _kiln
from kiln.nn.optim import Optimizer

class LR_Scheduler:
  def __init__(self, schedule): self._s = schedule
  @property
  def epoch_counter(self) -> int: return self._s.epoch_counter
  def step(self) -> None: self._s.step()
  def set_step(self, step: int) -> None:
    """Continues the schedule at `step` optimizer steps done (after loading a checkpoint)."""
    self._s.set_step(step)

class OneCycleLR(LR_Scheduler):
  """Linear warm-up from max_lr/div_factor to max_lr over pct_start of total_steps, then linear decay
  to max_lr/(div_factor*final_div_factor), as tinygrad's."""
  def __init__(self, optimizer: Optimizer, max_lr: float, div_factor: float, final_div_factor: float, total_steps: int,
               pct_start: float, anneal_strategy: str = "linear", cycle_momentum: bool = False):
    if anneal_strategy != "linear": raise ValueError(f"OneCycleLR: only linear annealing, got {anneal_strategy!r}")
    if cycle_momentum: raise ValueError("OneCycleLR: cycle_momentum is not supported")
    super().__init__(_kiln.nn.OneCycleLR(optimizer._opt, max_lr, total_steps, pct_start, div_factor, final_div_factor))

class CosineAnnealingLR(LR_Scheduler):
  """Cosine from the optimizer's rate down to eta_min over T_max steps, as tinygrad's."""
  def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0):
    super().__init__(_kiln.nn.CosineAnnealingLR(optimizer._opt, T_max, eta_min))

class WarmupCosineLR(LR_Scheduler):
  """Linear warm-up to the optimizer's rate over warmup_steps (step t uses lr (t + 1) / warmup_steps),
  then a cosine down to min_lr at total_steps, min_lr after."""
  def __init__(self, optimizer: Optimizer, warmup_steps: int, total_steps: int, min_lr: float = 0):
    super().__init__(_kiln.nn.WarmupCosineLR(optimizer._opt, warmup_steps, total_steps, min_lr))
