"""Optimizers, as tinygrad's nn.optim: the C++ optimizers with tinygrad's signatures. The learning
rate is a tensor (`opt.lr`), so assigning it never compiles a new kernel; step() realizes every
update in one schedule.

As tinygrad's, an optimizer takes every tensor of get_parameters(model): those whose requires_grad
is True or None (turned on here) are trained; the others (requires_grad False, like BatchNorm's
running statistics, which the forward pass assigns) are realized with each step."""
from __future__ import annotations
from kiln._core import _kiln
from kiln.jit import realize_or_defer
from kiln.tensor import Tensor

def _own_buffers(params: list[Tensor]):
  """Gives each parameter a device buffer of its own. kiln's autograd knows a tensor by its graph
  node, and equal graphs are one node: `Tensor.zeros(3)` made twice is one constant (which takes no
  gradient), and equal graphs realized together share a buffer. tinygrad makes such tensors unique."""
  seen = set()
  for p in params:
    node = p.uop.src[0] if p.uop.op == _kiln.Ops.RESHAPE else p.uop
    if node.op != _kiln.Ops.BUFFER or node in seen: p.assign(Tensor(p.numpy(), dtype=p.dtype))  # a copy in a new buffer
    else: seen.add(node)

class Optimizer:
  def __init__(self, make, params: list[Tensor], *args):
    trained = [p for p in params if p.requires_grad is not False]
    self.buffers = [p for p in params if p.requires_grad is False]
    _own_buffers(trained)
    self._opt = make([p._t for p in trained], *args)
  @property
  def params(self) -> list[Tensor]: return [Tensor._wrap(p) for p in self._opt.params]
  @property
  def lr(self) -> Tensor: return Tensor._wrap(self._opt.lr_tensor)
  def zero_grad(self): self._opt.zero_grad()
  def step(self):
    """Realizes the updates (inside a TinyJit function: with its outputs, in one schedule)."""
    realize_or_defer(self.schedule_step())
  def schedule_step(self) -> list[Tensor]:
    """The updates, built lazily: every tensor they assign and the buffers, for realizing with other work."""
    if not Tensor.training:  # as tinygrad's: a step in eval mode is almost always a forgotten Tensor.train()
      raise RuntimeError("Optimizer.step: Tensor.training is False; set Tensor.training = True (or use "
                         "`with Tensor.train():`) before stepping")
    return [Tensor._wrap(t) for t in self._opt.schedule_step()] + self.buffers

class SGD(Optimizer):
  def __init__(self, params: list[Tensor], lr=0.001, momentum=0.0, weight_decay=0.0, nesterov=False):
    super().__init__(_kiln.nn.SGD, params, lr, momentum, weight_decay, nesterov)

class LAMB(Optimizer):
  """Layer-wise trust ratio; with adam=True it is AdamW (decoupled weight decay)."""
  def __init__(self, params: list[Tensor], lr=0.001, b1=0.9, b2=0.999, eps=1e-6, weight_decay=0.0, adam=False):
    super().__init__(_kiln.nn.LAMB, params, lr, b1, b2, eps, weight_decay, adam)
  # the moments and the powers b1^t, b2^t, as tinygrad names them
  @property
  def m(self) -> list[Tensor]: return [Tensor._wrap(t, False) for t in self._opt.m]
  @property
  def v(self) -> list[Tensor]: return [Tensor._wrap(t, False) for t in self._opt.v]
  @property
  def b1_t(self) -> Tensor: return Tensor._wrap(self._opt.b1_t, False)
  @property
  def b2_t(self) -> Tensor: return Tensor._wrap(self._opt.b2_t, False)

class Adam(LAMB):
  """LAMB without the trust ratio (tinygrad's Adam is a LAMB too)."""
  def __init__(self, params: list[Tensor], lr=0.001, b1=0.9, b2=0.999, eps=1e-8):
    Optimizer.__init__(self, _kiln.nn.Adam, params, lr, b1, b2, eps)

class AdamW(LAMB):
  def __init__(self, params: list[Tensor], lr=0.001, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.01):
    Optimizer.__init__(self, _kiln.nn.AdamW, params, lr, b1, b2, eps, weight_decay)

class Muon(Optimizer):
  """SGD momentum whose step is orthogonalized by `ns_steps` Newton–Schulz iterations (each parameter as
  a matrix of its first axis by the rest), with decoupled weight decay: p <- p (1 - lr wd) - lr step.
  `ns_params` is older tinygrad's name for ns_coefficients."""
  def __init__(self, params: list[Tensor], lr=0.001, momentum=0.95, weight_decay=0.1, ns_steps=5,
               ns_coefficients=(3.4445, -4.775, 2.0315), nesterov=True, fused=False, ns_params=None):
    if fused: raise ValueError("Muon: fused=True is not supported (tinygrad's Muon refuses FUSE_OPTIM too)")
    coefficients = list(ns_params if ns_params is not None else ns_coefficients)
    super().__init__(_kiln.nn.Muon, params, lr, momentum, weight_decay, ns_steps, coefficients, nesterov)
