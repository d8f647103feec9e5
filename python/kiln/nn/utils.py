"""Training utilities under PyTorch's names (torch.nn.utils)."""
from __future__ import annotations
from kiln._core import _kiln
from kiln.tensor import Tensor

def clip_grad_norm_(parameters: Tensor | list[Tensor], max_norm: float) -> Tensor:
  """Scales every parameter's .grad in place so that their joint L2 norm is at most max_norm (by
  min(1, max_norm / (norm + 1e-6)), PyTorch's formula) and returns the norm before clipping.
  Parameters without a gradient are skipped. Lazy: the clip fuses into the optimizer step."""
  params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
  return Tensor._wrap(_kiln.nn.clip_grad_norm_([p._t for p in params], float(max_norm)), False)
