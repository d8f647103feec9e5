"""Tensor.__getitem__, as tinygrad's (and NumPy's basic and advanced indexing), built from C++
movement ops and index_select (an indexed load: O(index), not O(source)).

Basic indices (ints, slices with any step, None, Ellipsis) become one shrink, flips, a strided
view and a reshape. Integer tensors (or lists) index as NumPy's advanced indexing: they broadcast
together, the indexed axes are replaced by the broadcast shape (moved to the front when they are not
adjacent), and out-of-range entries read 0, as tinygrad does.
"""
from __future__ import annotations
from kiln.helpers import prod

def getitem(x, indices):
  from kiln.tensor import Tensor
  # one list of ints is one advanced index; a tuple holds one index per axis, where a list or tuple
  # (of ints, nested) is an advanced index as a tensor is (tinygrad's rule)
  if not isinstance(indices, tuple) or not indices: indices = (indices,)
  indices = [Tensor(i) if isinstance(i, (list, tuple)) else i for i in indices]
  if sum(i is Ellipsis for i in indices) > 1: raise IndexError("an index can only have a single ellipsis ('...')")
  consumed = sum(i is not None and i is not Ellipsis for i in indices)
  if consumed > x.ndim: raise IndexError(f"too many indices ({consumed}) for a tensor of {x.ndim} dims")
  fill = next((k for k, i in enumerate(indices) if i is Ellipsis), len(indices))
  indices[fill:fill + 1] = [slice(None)] * (x.ndim - consumed)

  # per input axis: the [begin, end) kept and the step; per output axis: where it comes from
  bounds, steps, out_shape, tensor_axes, dim = [], [], [], [], 0
  for index in indices:
    if index is None:
      out_shape.append(1)
      continue
    size = x.shape[dim]
    if isinstance(index, Tensor):
      if not index.dtype.is_int: raise IndexError(f"tensors used as indices must be integers, got {index.dtype!r}")
      bounds.append((0, size))
      steps.append(1)
      tensor_axes.append((len(out_shape), index))
      out_shape.append(size)
    elif isinstance(index, int) and not isinstance(index, bool):
      if not -size <= index < size: raise IndexError(f"index {index} is out of bounds for axis {dim} of size {size}")
      index %= size
      bounds.append((index, index + 1))
      steps.append(1)
    elif isinstance(index, slice):
      if index.step == 0: raise ValueError("slice step cannot be zero")
      start, stop, step = index.indices(size)
      n = len(range(start, stop, step))
      # the elements taken, as a [begin, end) range walked forward or (negative step) backward
      begin, end = (start, start + n * step - step + 1) if step > 0 else (start + (n - 1) * step, start + 1)
      bounds.append((begin, end) if n else (0, 0))
      steps.append(step)
      out_shape.append(n)
    else: raise IndexError(f"{type(index).__name__} indexing is not supported")
    dim += 1

  x = x.shrink(bounds).flip([d for d, s in enumerate(steps) if s < 0])
  if any(abs(s) != 1 for s in steps):  # every |step|-th element: pad to a multiple, split the axis, keep the first
    strides = [abs(s) for s in steps]
    x = x.pad([(0, -n % s) for n, s in zip(x.shape, strides)])
    x = x.reshape([v for n, s in zip(x.shape, strides) for v in (n // s, s)])
    x = x.shrink([r for n in x.shape[::2] for r in ((0, n), (0, 1))]).reshape(x.shape[::2])
  x = x.reshape(out_shape)
  return _take(x, tensor_axes) if tensor_axes else x

def _take(x, tensor_axes):
  """Advanced indexing of x by integer tensors at the given axes (NumPy's rule for the result axes)."""
  axes = [a for a, _ in tensor_axes]
  sizes = [x.shape[a] for a in axes]
  index_shape = _broadcast_shapes([t.shape for _, t in tensor_axes])
  # negative indices count from the end (index_select wraps one index itself: wrapping twice would
  # bring an index below -n back into range)
  idx = [t.expand(index_shape) for _, t in tensor_axes]
  if len(idx) > 1: idx = [(t < 0).where(t + n, t) for t, n in zip(idx, sizes)]
  if axes != list(range(axes[0], axes[0] + len(axes))):  # not adjacent: the indexed axes go first
    x = x.permute(axes + [a for a in range(x.ndim) if a not in axes])
    axes = list(range(len(axes)))
  first = axes[0]
  # the indexed axes as one axis, indexed by one flat position
  x = x.reshape(x.shape[:first] + (prod(sizes),) + x.shape[first + len(axes):])
  position = idx[0]
  for t, n in zip(idx[1:], sizes[1:]): position = position * n + t
  picked = x._wrap(x._t.index_select(first, position.reshape(-1)._t))
  out = picked.reshape(x.shape[:first] + index_shape + x.shape[first + 1:])
  if len(idx) == 1: return out  # one index: index_select reads 0 outside [-n, n)
  inside = idx[0].ge(0) * idx[0].lt(sizes[0])
  for t, n in zip(idx[1:], sizes[1:]): inside = inside * t.ge(0) * t.lt(n)
  return inside.reshape((1,) * first + index_shape + (1,) * (out.ndim - first - len(index_shape))).where(out, 0)

def _broadcast_shapes(shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
  n = max(len(s) for s in shapes)
  out = []
  for i in range(n):
    dims = {s[i - n + len(s)] for s in shapes if i - n + len(s) >= 0} - {1}
    if len(dims) > 1: raise IndexError(f"index tensors of shapes {shapes} do not broadcast together")
    out.append(dims.pop() if dims else 1)
  return tuple(out)
