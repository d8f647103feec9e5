"""Sorting and sampling by weight: a bitonic network of movement and where ops (lazy, any length).
Ties keep their order; NaN sorts above +inf. Indices are int32, as tinygrad's."""
from __future__ import annotations
from kiln.mixin.base import TensorBase

class SortMixin(TensorBase):
  __slots__ = ()

  def sort(self, dim: int = -1, descending: bool = False) -> tuple:
    """(sorted values, the int32 indices they came from) along dim."""
    return tuple(self._wrap(t) for t in self._t.sort(dim, descending))
  def argsort(self, dim: int = -1, descending: bool = False): return self._wrap(self._t.argsort(dim, descending))
  def topk(self, k: int, dim: int = -1, largest: bool = True, sorted_: bool = True) -> tuple:
    """The k largest (or smallest) values along dim and their indices, in sorted order."""
    return tuple(self._wrap(t) for t in self._t.topk(k, dim, largest, sorted_))
  def multinomial(self, num_samples: int = 1, replacement: bool = False):
    """int32 indices drawn with weights self (1-D, or 2-D with one row per draw set)."""
    return self._wrap(self._t.multinomial(num_samples, replacement))
