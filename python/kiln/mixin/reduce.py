"""Reductions, softmax and matrix products. tinygrad's `axis` is None (every axis), an int or a
tuple; the C++ ops take a list of axes, where an empty list means every axis."""
from __future__ import annotations
from kiln._core import _kiln
from kiln.dtype import DType, to_dtype
from kiln.helpers import argfix
from kiln.mixin.base import TensorBase, raw

class ReduceMixin(TensorBase):
  __slots__ = ()

  def _reduce(self, op: str, axis, keepdim: bool, *args):
    if axis is None: return self._wrap(getattr(self._t, op)([], keepdim, *args))
    axes = [axis] if isinstance(axis, int) else list(axis)
    if not axes:  # axis=() reduces nothing: reduce a new axis of size 1 instead, which keeps the op's dtype rule
      return self._wrap(getattr(self._t.unsqueeze(0), op)([0], False, *args))
    return self._wrap(getattr(self._t, op)(axes, keepdim, *args))

  def _with_dtype(self, dtype: DType | str | None): return self if dtype is None else self.cast(to_dtype(dtype))

  def sum(self, axis=None, keepdim=False, dtype: DType | str | None = None):
    """Bools and small integers sum in 32 bits; `dtype` casts the input first."""
    return self._with_dtype(dtype)._reduce("sum", axis, keepdim)
  def prod(self, axis=None, keepdim=False, dtype: DType | str | None = None):
    return self._with_dtype(dtype)._reduce("prod", axis, keepdim)
  def max(self, axis=None, keepdim=False): return self._reduce("max", axis, keepdim)
  def min(self, axis=None, keepdim=False): return self._reduce("min", axis, keepdim)
  def mean(self, axis=None, keepdim=False): return self._reduce("mean", axis, keepdim)
  def any(self, axis=None, keepdim=False): return self._reduce("any", axis, keepdim)
  def all(self, axis=None, keepdim=False): return self._reduce("all", axis, keepdim)
  def var(self, axis=None, keepdim=False, correction=1): return self._reduce("var", axis, keepdim, correction)
  def std(self, axis=None, keepdim=False, correction=1): return self._reduce("std", axis, keepdim, correction)
  def var_mean(self, axis=None, keepdim=False, correction=1):
    return self.var(axis, keepdim, correction), self.mean(axis, keepdim)
  def std_mean(self, axis=None, keepdim=False, correction=1):
    return self.std(axis, keepdim, correction), self.mean(axis, keepdim)
  def normalize(self, p: float = 2.0, dim: int = 1, eps: float = 1e-12):
    """self divided by its p-norm along dim (at least eps), as torch.nn.functional.normalize."""
    return self._wrap(self._t.normalize(p, dim, eps))

  def argmax(self, axis=None, keepdim=False):
    """The first index of the maximum (int32); axis=None: of the flattened tensor."""
    if axis is None: return self._wrap(self._t.flatten(0, -1).argmax(0, False))
    return self._wrap(self._t.argmax(axis, keepdim))
  def argmin(self, axis=None, keepdim=False):
    if axis is None: return self._wrap(self._t.flatten(0, -1).argmin(0, False))
    return self._wrap(self._t.argmin(axis, keepdim))

  def softmax(self, axis=-1, dtype: DType | str | None = None): return self._wrap(self._with_dtype(dtype)._t.softmax(axis))
  def softmin(self, axis=-1, dtype: DType | str | None = None): return self._wrap(self._with_dtype(dtype)._t.softmin(axis))
  def log_softmax(self, axis=-1, dtype: DType | str | None = None):
    return self._wrap(self._with_dtype(dtype)._t.log_softmax(axis))
  def logsumexp(self, axis=None, keepdim=False):
    if axis is None or not isinstance(axis, int):
      # several axes: move them last and merge them into one
      axes = list(range(self.ndim)) if axis is None else [a % self.ndim for a in axis]
      rest = [a for a in range(self.ndim) if a not in axes]
      merged = self._t.permute(rest + axes).reshape([self.shape[a] for a in rest] + [-1])
      out = merged.logsumexp(-1, False)
      return self._wrap(out.reshape([1 if a in axes else s for a, s in enumerate(self.shape)]) if keepdim else out)
    return self._wrap(self._t.logsumexp(axis, keepdim))

  # ***** matrix products *****
  def dot(self, w, dtype: DType | str | None = None):
    """Matrix product as NumPy's matmul (vectors, batches broadcast); `dtype` casts both sides first."""
    return self._wrap(self._with_dtype(dtype)._t.matmul(w._with_dtype(dtype)._t))
  def matmul(self, x, reverse=False, dtype: DType | str | None = None):
    return x.dot(self, dtype=dtype) if reverse else self.dot(x, dtype=dtype)
  def __matmul__(self, x): return self.matmul(x)
  def __rmatmul__(self, x): return self.matmul(x, True)

  def linear(self, weight, bias=None, dtype: DType | str | None = None):
    """self @ weight + bias, as tinygrad (weight is (in, out); a 1-D weight multiplies elementwise)."""
    x = self._with_dtype(dtype)
    w = weight._t.transpose(-1, -2) if weight.ndim > 1 else weight._t  # the C++ op takes (out, in)
    return self._wrap(x._t.linear(w, raw(bias)))

  @staticmethod
  def einsum(formula: str, *operands, dtype: DType | str | None = None):
    """Einstein summation as NumPy's ("ij,jk->ik", implicit outputs, "..." for broadcast dims)."""
    xs = [x._with_dtype(dtype) for x in argfix(*operands)]
    return xs[0]._wrap(_kiln.Tensor.einsum(formula, [x._t for x in xs]))
