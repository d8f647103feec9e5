"""What the mixins share: a Tensor holds its C++ tensor in `_t` and wraps C++ results with `_wrap`."""
from __future__ import annotations

class TensorBase:
  __slots__ = ()

def raw(x: TensorBase | None):
  """The C++ tensor of `x` (None stays None), for optional tensor arguments."""
  return None if x is None else x._t
