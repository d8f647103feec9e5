"""Movement ops (free views until a kernel needs the data) and combining/splitting. Shapes and axis
lists come as *args or one sequence, as tinygrad's (`reshape(2, 3)` or `reshape((2, 3))`)."""
from __future__ import annotations
from kiln._core import _kiln
from kiln.dtype import dtypes
from kiln.helpers import argfix, pairs_from_flat
from kiln.mixin.base import TensorBase

class MovementMixin(TensorBase):
  __slots__ = ()

  def reshape(self, shape, *args):
    """One dimension may be -1 (inferred); None keeps that dimension."""
    new = argfix(shape, *args)
    return self._wrap(self._t.reshape([self.shape[i] if s is None else s for i, s in enumerate(new)]))
  def view(self, shape, *args): return self.reshape(shape, *args)
  def permute(self, order, *args): return self._wrap(self._t.permute(list(argfix(order, *args))))
  def expand(self, shape, *args):
    """Broadcasts size-1 axes (and new leading ones); -1 or None keeps a dimension."""
    return self._wrap(self._t.expand([-1 if s is None else s for s in argfix(shape, *args)]))
  def flip(self, axis, *args): return self._wrap(self._t.flip(list(argfix(axis, *args))))
  def transpose(self, dim0=1, dim1=0): return self._wrap(self._t.transpose(dim0, dim1))
  @property
  def T(self): return self.transpose()
  def flatten(self, start_dim=0, end_dim=-1): return self._wrap(self._t.flatten(start_dim, end_dim))
  def unflatten(self, dim: int, sizes: tuple[int, ...]):
    dim %= max(self.ndim, 1)
    return self.reshape(self.shape[:dim] + tuple(sizes) + self.shape[dim + 1:])
  def squeeze(self, dim: int | None = None):
    """Drops axis `dim` if it has size 1 (every size-1 axis when dim is None)."""
    if dim is None: return self.reshape(tuple(s for s in self.shape if s != 1))
    return self._wrap(self._t.squeeze(dim))
  def unsqueeze(self, dim: int): return self._wrap(self._t.unsqueeze(dim))

  def shrink(self, arg):
    """Keeps [begin, end) of each axis; None keeps the whole axis."""
    return self._wrap(self._t.shrink([(0, s) if a is None else tuple(a) for a, s in zip(arg, self.shape)]))

  def _sizes_to(self, op: str, shape, args) -> list:
    sizes = list(argfix(shape, *args))
    if len(sizes) != self.ndim:
      raise ValueError(f"{op}: expected {self.ndim} sizes for shape {self.shape}, got {len(sizes)}")
    return sizes
  def shrink_to(self, shape, *args):
    """Cuts each axis at its end to the given size (None keeps it), as tinygrad's: t.shrink_to(2, None)."""
    return self._wrap(self._t.shrink_to(self._sizes_to("shrink_to", shape, args)))
  def pad_to(self, shape, *args, value: float = 0):
    """Pads each axis at its end with `value` to the given size (None keeps it), as tinygrad's."""
    return self._wrap(self._t.pad_to(self._sizes_to("pad_to", shape, args), value))

  def pad(self, padding, mode: str = "constant", value: float = 0.0):
    """Pads each axis: with `value` (mode 'constant'), its mirror image without the edge ('reflect'),
    the edge repeated ('replicate') or the other end ('circular'). `padding` is per axis ((before,
    after) or None) or flat as PyTorch's (last axis first: (left, right, top, bottom, ...));
    negative amounts crop."""
    if mode not in _kiln.PadMode.__members__:
      raise _kiln.KilnNotImplementedError(f"pad: mode={mode!r}: expected 'constant', 'reflect', 'replicate' or 'circular'")
    if all(isinstance(p, int) for p in padding):
      pairs = pairs_from_flat(padding)
      if len(pairs) > self.ndim: raise ValueError(f"pad: padding {tuple(padding)} is for more than {self.ndim} dims")
      pairs = [(0, 0)] * (self.ndim - len(pairs)) + pairs
    else: pairs = [(0, 0) if p is None else tuple(p) for p in padding]
    if len(pairs) != self.ndim: raise ValueError(f"pad: padding {padding} does not fit {self.ndim} dims")
    return self._wrap(self._t.pad(pairs, _kiln.PadMode.__members__[mode], value))

  # ***** combining and splitting *****
  # Tensor.cat(a, b), a.cat(b) and Tensor.cat([a, b]) all work, as tinygrad's
  def cat(self, *args, dim: int = 0):
    ts = argfix(self, *args)
    for i, t in enumerate(ts):  # an IndexError, as tinygrad's
      if t.ndim == 0: raise IndexError(f"cat: zero-dimensional tensor (at position {i}) cannot be concatenated")
    return ts[0]._wrap(_kiln.Tensor.cat([t._t for t in ts], dim))
  def stack(self, *args, dim: int = 0):
    ts = argfix(self, *args)
    return ts[0]._wrap(_kiln.Tensor.stack([t._t for t in ts], dim))
  def repeat(self, repeats, *args): return self._wrap(self._t.repeat(list(argfix(repeats, *args))))
  def split(self, sizes: int | list[int], dim: int = 0) -> tuple:
    """Pieces of `sizes` along dim (the last may be shorter), or of each size in a list."""
    return tuple(self._wrap(t) for t in self._t.split(sizes if isinstance(sizes, int) else list(sizes), dim))
  def chunk(self, chunks: int, dim: int = 0) -> list: return [self._wrap(t) for t in self._t.chunk(chunks, dim)]

  # ***** indexing with tensors *****
  def gather(self, dim: int, index): return self._wrap(self._t.gather(dim, index._t))
  def scatter(self, dim: int, index, src, reduce: str | None = None):
    """A copy with `src` (a tensor or a scalar) placed at `index` along dim; a later index wins, or
    with reduce='add' / 'multiply' each combines a scalar src with the value already there (for a tensor
    src, as tinygrad: scatter_reduce)."""
    if not isinstance(src, TensorBase): src = index.full_like(src, dtype=self.dtype)
    elif reduce is not None:
      raise _kiln.KilnTypeError(f"scatter: a tensor src does not go with reduce={reduce!r}; use scatter_reduce")
    if reduce is None: return self._wrap(self._t.scatter(dim, index._t, src._t))
    return self._wrap(self._t.scatter(dim, index._t, src._t, reduce))
  def scatter_reduce(self, dim: int, index, src, reduce: str, include_self: bool = True):
    """src combined into the positions `index` names along dim: 'sum', 'prod', 'mean', 'amax' or 'amin'."""
    return self._wrap(self._t.scatter_reduce(dim, index._t, src._t, reduce, include_self))
  def masked_select(self, mask, size: int | None = None, fill_value=0):
    """The elements where `mask` is true, as one axis. Without `size` the mask is read to count them
    (not jittable); with it, the first `size` of them padded with fill_value."""
    return self._wrap(self._t.masked_select(mask._t, size, fill_value))
  def nonzero(self, size: int | None = None, fill_value: int | float = 0):
    """(n, ndim) int32 coordinates of the nonzero elements; `size` as masked_select's. A float fill_value
    is truncated: the coordinates stay integers (tinygrad)."""
    return self._wrap(self._t.nonzero(size, int(fill_value)))
  def masked_fill(self, mask, value):
    """value (a number, or a tensor broadcast against self) where mask is true: tinygrad's
    mask.where(value, self), so the dtypes promote as in `self + value` (an int tensor filled with -inf is float)."""
    return (mask if mask.dtype == dtypes.bool else mask.bool()).where(value, self)
  def one_hot(self, num_classes: int | None = None):
    """int32 with a new last axis; without num_classes, the largest value + 1 (reads the data). A negative
    num_classes is a ValueError (tinygrad's rule; torch's -1 is spelled by leaving it out)."""
    if num_classes is None: num_classes = int(self.max().item()) + 1
    return self._wrap(self._t.one_hot(num_classes))
  def cumsum(self, axis: int = 0): return self._wrap(self._t.cumsum(axis))
  def cumprod(self, axis: int): return self._wrap(self._t.cumprod(axis))
  def cummax(self, axis: int = 0):
    """(running max, int32 index of the element it came from: the last among equals, as PyTorch)."""
    return tuple(self._wrap(t) for t in self._t.cummax(axis))
  def cummin(self, axis: int = 0): return tuple(self._wrap(t) for t in self._t.cummin(axis))
  def logcumsumexp(self, axis: int = 0): return self._wrap(self._t.logcumsumexp(axis))
  def tril(self, diagonal: int = 0): return self._wrap(self._t.tril(diagonal))
  def triu(self, diagonal: int = 0): return self._wrap(self._t.triu(diagonal))
