"""Tensor: tinygrad's Python Tensor over kiln's C++ Tensor.

A Tensor holds one C++ tensor handle (`_t`); copies of a handle share the tensor, so a parameter
seen through a layer, an optimizer or a state dict is the same tensor. Every op is the C++ op: this
layer only turns tinygrad's argument forms (shapes as *args or tuples, Python scalars, axis=None,
...) into the C++ arguments. The ops live in mixins by area (kiln/mixin/); creation, data,
autograd and the class-level switches live here.
"""
from __future__ import annotations
from contextlib import ContextDecorator
from typing import Callable
from kiln._core import _kiln
from kiln.device import Device
from kiln.dtype import DType, dtypes, int_dtype_for, storage_dtype, to_dtype, to_numpy_dtype, wrap_int
from kiln.helpers import argfix
from kiln.indexing import getitem
from kiln.mixin.elementwise import ElementwiseMixin
from kiln.mixin.hashing import HashingMixin
from kiln.mixin.movement import MovementMixin
from kiln.mixin.nn import NNMixin
from kiln.mixin.rearrange import RearrangeMixin
from kiln.mixin.reduce import ReduceMixin
from kiln.mixin.sort import SortMixin

class _TensorMeta(type):
  # Tensor.training and Tensor.no_grad are class attributes in tinygrad; here they read and set the
  # C++ engine's switches, so C++ layers (BatchNorm, dropout) see them.
  @property
  def training(cls) -> bool: return _kiln.get_training()
  @training.setter
  def training(cls, on: bool): _kiln.set_training(bool(on))
  @property
  def no_grad(cls) -> bool: return _kiln.get_no_grad()
  @no_grad.setter
  def no_grad(cls, on: bool): _kiln.set_no_grad(bool(on))

def _from_python(data, dtype: DType | None) -> _kiln.Tensor:
  """A tensor holding `data` (a scalar, nested lists, bytes or a NumPy array), converted to `dtype`
  if given. A C-ordered, aligned NumPy array in native byte order is not copied on the CPU: the
  tensor reads its memory in place (later changes to the array show in the tensor); anything else
  is copied into a new buffer."""
  import numpy as np
  if data is None: data = []  # tinygrad's Tensor(None): empty, of shape (0,)
  if isinstance(data, np.generic): data = np.asarray(data)
  if isinstance(data, bytes): data = np.frombuffer(data, dtype=np.uint8)
  if isinstance(data, (bool, int, float, list, tuple)):
    dtype = _data_dtype(data, dtype)
    if dtype.is_int: data = _wrap_ints(data, dtype)
    # bfloat16 and the fp8s have no NumPy type: go through float32 and cast on the device
    data = np.array(data, dtype=to_numpy_dtype(dtype) or np.float32)
  if not isinstance(data, np.ndarray): raise TypeError(f"can't create a Tensor from {type(data).__name__}")
  if dtype is not None and (np_dtype := to_numpy_dtype(dtype)) is not None: data = data.astype(np_dtype, copy=False)
  # the C++ side takes C-ordered data in the machine's byte order (a no-op for most arrays)
  data = np.asarray(data, dtype=data.dtype.newbyteorder("="), order="C")
  t = _kiln.Tensor.from_numpy(data)
  return t if dtype is None else t.cast(dtype)

def _data_dtype(data, dtype: DType | None) -> DType:
  """`dtype`, or tinygrad's rule for Python data: all bools -> bool, all ints -> default_int (int64 or
  uint64 for ints it cannot hold), else default_float."""
  if dtype is not None: return dtype
  flat, stack = [], [data]
  while stack:
    x = stack.pop()
    if isinstance(x, (list, tuple)): stack.extend(x)
    else: flat.append(x)
  ints = [int(x) for x in flat if isinstance(x, int)]  # bools among ints count as 0 and 1
  if flat and all(isinstance(x, bool) for x in flat): return dtypes.bool
  return int_dtype_for(min(ints), max(ints)) if flat and len(ints) == len(flat) else dtypes.default_float

def _wrap_ints(data, dtype: DType):
  """Python ints of `data` (nested lists) wrapped into the integer dtype as tinygrad's (a C cast): Tensor([-1],
  dtype=uint8) holds 255. NumPy would raise for them instead."""
  if isinstance(data, (list, tuple)): return [_wrap_ints(x, dtype) for x in data]
  return wrap_int(data, dtype) if type(data) is int else data

class Tensor(ElementwiseMixin, ReduceMixin, MovementMixin, RearrangeMixin, SortMixin, NNMixin, HashingMixin,
             metaclass=_TensorMeta):
  # _requires_grad: tinygrad's three states. The C++ flag is on or off; None ("not said", which an
  # optimizer turns on) and False ("not a parameter", e.g. running statistics) live here.
  __slots__ = ("_t", "_requires_grad", "__weakref__")

  def __init__(self, data, device: str | None = None, dtype: DType | str | None = None, requires_grad: bool | None = None):
    t = _from_python(data, None if dtype is None else to_dtype(dtype))
    self._t, self._requires_grad = Tensor._finish(t, device, requires_grad), requires_grad

  @classmethod
  def _wrap(cls, t: _kiln.Tensor, requires_grad: bool | None = None) -> Tensor:
    """A Tensor around a C++ result, without __init__'s conversions."""
    out = cls.__new__(cls)
    out._t, out._requires_grad = t, requires_grad
    return out

  @staticmethod
  def _finish(t: _kiln.Tensor, device: str | None, requires_grad: bool | None) -> _kiln.Tensor:
    """The device and requires_grad keywords every creation function takes."""
    if device is not None: t = t.to(Device.canonicalize(device))
    if requires_grad is not None: t.requires_grad_(requires_grad)
    return t

  # ***** properties *****

  @property
  def shape(self) -> tuple[int, ...]: return self._t.shape
  @property
  def dtype(self) -> DType: return self._t.dtype
  @property
  def device(self) -> str: return self._t.device
  @property
  def ndim(self) -> int: return self._t.ndim
  def numel(self) -> int: return self._t.numel()
  def size(self, dim: int | None = None):
    """The shape, or the length along dim."""
    return self.shape if dim is None else self.shape[dim]
  def element_size(self) -> int: return self.dtype.itemsize
  def nbytes(self) -> int: return self.numel() * self.element_size()
  def is_floating_point(self) -> bool: return self.dtype.is_float
  @property
  def uop(self):
    """The graph behind this tensor (read-only; prints as DEBUG=5 does)."""
    return self._t.uop

  @property
  def requires_grad(self) -> bool | None:
    """True if a gradient flows to this tensor; else False or None (None: an optimizer turns it on)."""
    return True if self._t.requires_grad else self._requires_grad
  @requires_grad.setter
  def requires_grad(self, on: bool | None): self.requires_grad_(on)
  @property
  def is_param(self) -> bool:
    """tinygrad's newer name for "may be trained": every tensor but those with requires_grad False."""
    return self.requires_grad is not False
  def is_param_(self, is_param: bool = True) -> Tensor:
    """False: never trained (requires_grad False); True: trainable again, keeping requires_grad True if set."""
    if not is_param: return self.requires_grad_(False)
    return self if self.is_param else self.requires_grad_(None)
  @property
  def grad(self) -> Tensor | None: return None if (g := self._t.grad) is None else Tensor._wrap(g)
  @grad.setter
  def grad(self, g: Tensor | None): self._t.grad = None if g is None else g._t

  def __repr__(self) -> str:
    grad = None if (g := self._t.grad) is None else f"<Tensor {g.shape}>"
    return f"<Tensor {self.shape} {self.dtype!r} on {self.device} with grad {grad}>"
  def __reduce__(self):
    """Pickling and copy.deepcopy: the data's bytes with dtype, shape, device and requires_grad."""
    # NumPy has no bfloat16 or fp8: their bits travel as unsigned integers
    data = (self if to_numpy_dtype(self.dtype) else self.bitcast(storage_dtype(self.dtype))).numpy()
    return Tensor._unpickle, (data.tobytes(), self.dtype.name, self.shape, self.device, self.requires_grad)
  @staticmethod
  def _unpickle(data: bytes, dtype: str, shape: tuple, device: str, requires_grad: bool | None) -> Tensor:
    import numpy as np
    dtype = to_dtype(dtype)
    native = to_numpy_dtype(dtype)
    t = _from_python(np.frombuffer(data, dtype=native or to_numpy_dtype(storage_dtype(dtype))).reshape(shape), None)
    return Tensor._create(t if native else t.bitcast(dtype), device, requires_grad)
  def __hash__(self): return id(self)  # __eq__ builds a tensor, so hash by identity as tinygrad
  def __bool__(self): raise TypeError("__bool__ on Tensor is not defined")
  def __len__(self) -> int:
    if not self.shape: raise TypeError("len() of a 0-d tensor")
    return self.shape[0]
  def __getitem__(self, indices) -> Tensor: return getitem(self, indices)
  def __setitem__(self, indices, v) -> None:
    """`self[indices] = v` for every index __getitem__ takes: the flat positions the indices select
    (read the same way from an arange) receive `v`, broadcast to the selection; then assign."""
    positions = Tensor.arange(self.numel(), dtype=dtypes.int32).reshape(self.shape)[indices]
    if not isinstance(v, Tensor): v = Tensor(v, dtype=self.dtype)
    v = v.cast(self.dtype).expand(positions.shape).flatten() if positions.ndim else v.cast(self.dtype).reshape(1)
    if positions.numel() == 0: return  # an empty selection takes nothing (after v was checked to broadcast, as NumPy)
    self.assign(self.flatten().scatter(0, positions.flatten(), v).reshape(self.shape))

  # ***** data *****

  def realize(self, *lst: Tensor) -> Tensor:
    """Runs the kernels these tensors need (one schedule for all of them)."""
    if lst: _kiln.Tensor.realize_all([self._t] + [t._t for t in lst])
    else: self._t.realize()
    return self
  def schedule(self) -> list:
    """The kernels realize() would run now, in order: ScheduleItems (name, ast, buffers; str() prints
    them). Runs nothing."""
    return self._t.schedule()
  def numpy(self):
    if to_numpy_dtype(self.dtype) is None: return self.float().numpy()  # bfloat16, fp8s: as tinygrad, float32
    return self._t.numpy()
  def data(self) -> memoryview: return memoryview(self.numpy())
  def tolist(self): return self.numpy().tolist()
  def item(self):
    if self.numel() != 1: raise ValueError(f"item: expected a tensor with one element, got shape {self.shape}")
    return self.numpy().reshape(()).item()
  def contiguous(self) -> Tensor: return self._wrap(self._t.contiguous())
  def clone(self, device: str | None = None) -> Tensor:
    """A copy of the data, with a copy of its grad (tinygrad's), on `device` if given."""
    out = (self if device is None else self.to(device)).contiguous()
    if (g := self.grad) is not None: out.grad = (g if device is None else g.to(device)).contiguous()
    return out
  def detach(self) -> Tensor: return self._wrap(self._t.detach())
  def to(self, device: str | None) -> Tensor: return self._wrap(self._t.to(Device.canonicalize(device)))
  def to_(self, device: str | None) -> Tensor:
    """to() in place: this tensor, every handle to it (an optimizer's state, a layer's weight) and its grad
    now live on `device`."""
    self._t.to_(Device.canonicalize(device))
    return self
  def cast(self, dtype: DType | str) -> Tensor: return self._wrap(self._t.cast(to_dtype(dtype)))
  def bitcast(self, dtype: DType | str) -> Tensor: return self._wrap(self._t.bitcast(to_dtype(dtype)))
  def float(self) -> Tensor: return self.cast(dtypes.float32)
  def half(self) -> Tensor: return self.cast(dtypes.float16)
  def double(self) -> Tensor: return self.cast(dtypes.float64)
  def bfloat16(self) -> Tensor: return self.cast(dtypes.bfloat16)
  def int(self) -> Tensor: return self.cast(dtypes.int32)
  def long(self) -> Tensor: return self.cast(dtypes.int64)
  def bool(self) -> Tensor: return self.cast(dtypes.bool)

  def assign(self, x) -> Tensor:
    """In-place update: this tensor (and every handle to it) now holds `x`, broadcast to its shape.
    The dtype must match; Python data is converted to it."""
    if not isinstance(x, Tensor): x = Tensor(x, dtype=self.dtype)
    if x.shape != self.shape: x = x.expand(self.shape)
    self._t.assign(x._t)
    return self

  # ***** creation *****

  @staticmethod
  def empty(*shape, device: str | None = None, dtype: DType | str | None = None, **kwargs) -> Tensor:
    return Tensor._create(_kiln.Tensor.empty(list(argfix(*shape)), to_dtype(dtype or dtypes.default_float)), device, **kwargs)

  @staticmethod
  def from_blob(ptr: int, shape: tuple[int, ...], device: str | None = None, dtype: DType | str | None = None,
                **kwargs) -> Tensor:
    """A tensor over the host memory at address `ptr` (e.g. `arr.ctypes.data`), as tinygrad's: it reads
    the memory in place without taking ownership, so the memory must outlive the tensor. Where the
    device cannot read host memory in place, the bytes are copied at once."""
    t = _kiln.Tensor.from_blob(ptr, list(argfix(shape)), to_dtype(dtype or dtypes.default_float))
    return Tensor._create(t, device, **kwargs)

  @staticmethod
  def full(shape, fill_value, device: str | None = None, dtype: DType | str | None = None, requires_grad: bool | None = None) -> Tensor:
    if hasattr(fill_value, "item"): fill_value = fill_value.item()  # NumPy scalars, as Python's
    dtype = to_dtype(dtype) if dtype is not None else dtypes.from_py(fill_value)
    shape = list(argfix(shape))
    if requires_grad:  # a constant is a shared graph node: a tensor that will own a gradient gets a buffer
      import numpy as np
      t = _from_python(np.full(shape, fill_value), dtype)
    else:
      t = _kiln.Tensor.full(shape, fill_value, dtype)
    return Tensor._create(t, device, requires_grad)

  @staticmethod
  def zeros(*shape, **kwargs) -> Tensor: return Tensor.full(argfix(*shape), 0.0, **{"dtype": dtypes.default_float, **kwargs})
  @staticmethod
  def ones(*shape, **kwargs) -> Tensor: return Tensor.full(argfix(*shape), 1.0, **{"dtype": dtypes.default_float, **kwargs})

  @staticmethod
  def arange(start, stop=None, step=1, **kwargs) -> Tensor:
    if stop is None: start, stop = 0, start
    lo, hi = (start, stop - step) if step > 0 else (stop - step, start)
    default = dtypes.default_float if any(isinstance(x, float) for x in (start, stop, step)) else dtypes.default_int
    # integer ranges past default_int take int64, as tinygrad's
    if default == dtypes.default_int and (lo < dtypes.min(default) or dtypes.max(default) < hi): default = dtypes.int64
    dtype = to_dtype(kwargs.pop("dtype", default))
    if dtype.is_int and (lo < dtypes.min(dtype) or dtypes.max(dtype) < hi):
      raise OverflowError(f"arange [{start}, {stop}) is not representable in dtype {dtype}")
    return Tensor._create(_kiln.Tensor.arange(start, stop, step, dtype), **kwargs)

  @staticmethod
  def linspace(start: int | float, stop: int | float, steps: int, **kwargs) -> Tensor:
    if steps < 0: raise ValueError("linspace: the number of steps must be non-negative")
    dtype = to_dtype(kwargs.pop("dtype", dtypes.default_float))
    if dtype == dtypes.bool: raise ValueError("linspace with bool dtype is not supported")
    if steps == 1: return Tensor([start], dtype=dtype, **kwargs)
    return (Tensor.arange(steps, **kwargs) * ((stop - start) / (steps - 1)) + start).cast(dtype)

  @staticmethod
  def eye(n: int, m: int | None = None, dtype: DType | str | None = None, device: str | None = None,
          requires_grad: bool | None = None) -> Tensor:
    m = n if m is None else m
    if n < 0 or m < 0: raise ValueError(f"eye: cannot have negative n={n}, m={m}")
    t = _kiln.Tensor.eye(max(n, m), to_dtype(dtype or dtypes.default_float))
    if m != n: t = t.shrink([(0, n), (0, m)]).contiguous()
    return Tensor._create(t, device, requires_grad)

  @staticmethod
  def _create(t: _kiln.Tensor, device: str | None = None, requires_grad: bool | None = None) -> Tensor:
    return Tensor._wrap(Tensor._finish(t, device, requires_grad), requires_grad)

  @staticmethod
  def manual_seed(seed: int = 0):
    """Makes the random functions below reproducible from here on."""
    _kiln.Tensor.manual_seed(seed)

  @staticmethod
  def _random(make: Callable, shape: tuple, dtype, *args, device: str | None = None, requires_grad: bool | None = None) -> Tensor:
    """A C++ random creation function `make(shape, *args, dtype)` with tinygrad's arguments."""
    return Tensor._create(make(list(argfix(*shape)), *args, to_dtype(dtype or dtypes.default_float)), device, requires_grad)

  @staticmethod
  def rand(*shape, dtype: DType | str | None = None, **kwargs) -> Tensor:
    return Tensor._random(_kiln.Tensor.rand, shape, dtype, **kwargs)
  @staticmethod
  def randn(*shape, dtype: DType | str | None = None, **kwargs) -> Tensor:
    """Standard normal draws; a non-float dtype gets them cast from default_float, as tinygrad's."""
    if dtype is not None and not (dtype := to_dtype(dtype)).is_float:
      return Tensor._random(_kiln.Tensor.randn, shape, None, **kwargs).cast(dtype)
    return Tensor._random(_kiln.Tensor.randn, shape, dtype, **kwargs)
  @staticmethod
  def normal(*shape, mean=0.0, std=1.0, dtype: DType | str | None = None, **kwargs) -> Tensor:
    return Tensor._random(_kiln.Tensor.normal, shape, dtype, mean, std, **kwargs)

  @staticmethod
  def uniform(*shape, low=0.0, high=1.0, dtype: DType | str | None = None, **kwargs) -> Tensor:
    dtype = to_dtype(dtype or dtypes.default_float)
    if dtype.is_float: return Tensor._random(_kiln.Tensor.uniform, shape, dtype, low, high, **kwargs)
    # integers, as tinygrad: scaled float draws rounded down
    return (Tensor.rand(*shape, **kwargs) * (high - low)).cast(dtype) + low

  @staticmethod
  def randint(*shape, low=0, high=10, dtype: DType | str = dtypes.int32, **kwargs) -> Tensor:
    if not isinstance(low, int) or not isinstance(high, int): raise TypeError(f"low={low} and high={high} must be integers")
    if not (dtype := to_dtype(dtype)).is_int: raise TypeError(f"randint: dtype={dtype!r} must be an integer type")
    # from integer bits (C++): exact over any range, where scaled float draws round
    return Tensor._random(_kiln.Tensor.randint, shape, dtype, low, high, **kwargs)
  @staticmethod
  def randperm(n: int, device: str | None = None, dtype: DType | str = dtypes.int32, **kwargs) -> Tensor:
    """A random permutation of 0..n-1 (the argsort of n uniform draws)."""
    return Tensor._create(_kiln.Tensor.randperm(n, to_dtype(dtype)), device, kwargs.get("requires_grad"))

  # initializers, as tinygrad's (fan-in: the product of all but the first dimension)
  @staticmethod
  def scaled_uniform(*shape, dtype: DType | str | None = None, **kwargs) -> Tensor:
    return Tensor._random(_kiln.Tensor.scaled_uniform, shape, dtype, **kwargs)
  @staticmethod
  def glorot_uniform(*shape, dtype: DType | str | None = None, **kwargs) -> Tensor:
    return Tensor._random(_kiln.Tensor.glorot_uniform, shape, dtype, **kwargs)
  @staticmethod
  def kaiming_uniform(*shape, a: float = 0.01, dtype: DType | str | None = None, **kwargs) -> Tensor:
    return Tensor._random(_kiln.Tensor.kaiming_uniform, shape, dtype, a, **kwargs)
  @staticmethod
  def kaiming_normal(*shape, a: float = 0.01, dtype: DType | str | None = None, **kwargs) -> Tensor:
    return Tensor._random(_kiln.Tensor.kaiming_normal, shape, dtype, a, **kwargs)

  def full_like(self, fill_value, **kwargs) -> Tensor:
    return Tensor.full(self.shape, fill_value, **{"dtype": self.dtype, **kwargs})
  def zeros_like(self, **kwargs) -> Tensor: return self.full_like(0, **kwargs)
  def ones_like(self, **kwargs) -> Tensor: return self.full_like(1, **kwargs)
  def empty_like(self, **kwargs) -> Tensor: return Tensor.empty(self.shape, **{"dtype": self.dtype, **kwargs})
  def rand_like(self, **kwargs) -> Tensor:
    return Tensor.rand(self.shape, **{"dtype": self.dtype if self.dtype.is_float else None, **kwargs})
  def randn_like(self, **kwargs) -> Tensor:
    return Tensor.randn(self.shape, **{"dtype": self.dtype if self.dtype.is_float else None, **kwargs})

  # ***** autograd *****

  def requires_grad_(self, requires_grad: bool | None = True) -> Tensor:
    self._t.requires_grad_(None if requires_grad is None else bool(requires_grad))
    self._requires_grad = requires_grad
    return self

  def backward(self, gradient: Tensor | None = None) -> Tensor:
    """Adds d self / d t to t.grad for every live float tensor t it depends on (tinygrad's rule: no
    requires_grad needed), except those with requires_grad False."""
    self._t.backward(None if gradient is None else gradient._t, every_live=True)
    return self

  def gradient(self, *targets: Tensor, gradient: Tensor | None = None) -> list[Tensor]:
    """d self / d each target (self: one element), without touching their .grad."""
    if gradient is not None: raise NotImplementedError("gradient: an explicit `gradient` is not supported yet")
    return [Tensor._wrap(g) for g in self._t.gradient([t._t for t in targets])]

  class train(ContextDecorator):
    """Tensor.training on (or `mode`) inside a with-block or a decorated function."""
    def __init__(self, mode: bool = True): self.mode = mode
    def __enter__(self): self.prev, Tensor.training = Tensor.training, self.mode
    def __exit__(self, *exc): Tensor.training = self.prev

  class test(ContextDecorator):
    """Tensor.no_grad on (or `mode`) inside a with-block or a decorated function."""
    def __init__(self, mode: bool = True): self.mode = mode
    def __enter__(self): self.prev, Tensor.no_grad = Tensor.no_grad, self.mode
    def __exit__(self, *exc): Tensor.no_grad = self.prev
