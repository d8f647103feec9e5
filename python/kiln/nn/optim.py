"""Optimizers, as tinygrad's nn.optim: the C++ optimizers with tinygrad's signatures. The learning
rate is a tensor (`opt.lr`), so assigning it never compiles a new kernel; step() realizes every
update in one schedule."""
from __future__ import annotations
from kiln._core import _kiln
from kiln.tensor import Tensor

class Optimizer:
  def __init__(self, opt): self._opt = opt
  @property
  def params(self) -> list[Tensor]: return [Tensor._wrap(p) for p in self._opt.params]
  @property
  def lr(self) -> Tensor: return Tensor._wrap(self._opt.lr_tensor)
  def zero_grad(self): self._opt.zero_grad()
  def step(self): self._opt.step()
  def schedule_step(self) -> list[Tensor]:
    """The updates, built lazily: every tensor they assign, for realizing with other work."""
    return [Tensor._wrap(t) for t in self._opt.schedule_step()]

def _raw(params) -> list:
  # tinygrad turns requires_grad on for the tensors it is given; so does the C++ optimizer
  return [p._t for p in params]

class SGD(Optimizer):
  def __init__(self, params: list[Tensor], lr=0.001, momentum=0.0, weight_decay=0.0, nesterov=False):
    super().__init__(_kiln.nn.SGD(_raw(params), lr, momentum, weight_decay, nesterov))

class LAMB(Optimizer):
  """Layer-wise trust ratio; with adam=True it is AdamW (decoupled weight decay)."""
  def __init__(self, params: list[Tensor], lr=0.001, b1=0.9, b2=0.999, eps=1e-6, weight_decay=0.0, adam=False):
    super().__init__(_kiln.nn.LAMB(_raw(params), lr, b1, b2, eps, weight_decay, adam))

class Adam(Optimizer):
  def __init__(self, params: list[Tensor], lr=0.001, b1=0.9, b2=0.999, eps=1e-8):
    super().__init__(_kiln.nn.Adam(_raw(params), lr, b1, b2, eps))

class AdamW(Optimizer):
  def __init__(self, params: list[Tensor], lr=0.001, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.01):
    super().__init__(_kiln.nn.AdamW(_raw(params), lr, b1, b2, eps, weight_decay))
