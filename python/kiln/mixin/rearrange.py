"""Rearranging views built from movement ops: roll, repeat_interleave, diag, diagonal, meshgrid,
unfold and einops-style rearrange, with tinygrad's arguments."""
from __future__ import annotations
from kiln.mixin.base import TensorBase

def _ints(x) -> list[int]: return list(x) if isinstance(x, (tuple, list)) else [x]

class RearrangeMixin(TensorBase):
  __slots__ = ()

  def roll(self, shifts, dims=None):
    """Rotates along each of dims by its shift (elements leaving one end come back at the other);
    dims=None rolls the flattened tensor."""
    return self._wrap(self._t.roll(_ints(shifts), [] if dims is None else _ints(dims)))
  def repeat_interleave(self, repeats: int, dim: int | None = None):
    return self._wrap(self._t.repeat_interleave(repeats, dim))
  def diag(self): return self._wrap(self._t.diag())
  def diagonal(self, offset: int = 0, dim1: int = 0, dim2: int = 1):
    return self._wrap(self._t.diagonal(offset, dim1, dim2))
  def meshgrid(self, *args, indexing: str = "ij") -> tuple:
    return tuple(self._wrap(t) for t in type(self._t).meshgrid([self._t] + [a._t for a in args], indexing))
  def unfold(self, dim: int, size: int, step: int):
    """dim replaced by (windows, size): windows of `size` starting every `step` elements."""
    return self._wrap(self._t.unfold(dim, size, step))
  def rearrange(self, formula: str, **sizes):
    """einops' rearrange: rearrange("b (h w) -> b h w", h=4)."""
    return self._wrap(self._t.rearrange(formula, list(sizes.items())))
