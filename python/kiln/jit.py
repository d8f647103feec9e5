"""TinyJit, for tinygrad scripts. kiln has no kernel-replay JIT yet: the decorated function runs on
every call (kiln's schedule cache already reuses the schedule of a graph of the same structure,
which is most of what the JIT saves). What it keeps from tinygrad's is one batch of kernels per
call: optimizer steps taken inside the function are realized together with the returned tensors,
so a training step computes its forward pass once for both the loss and the updates."""
from __future__ import annotations
import functools
from typing import Callable, Generic, TypeVar
from kiln._core import _kiln
from kiln.tensor import Tensor

R = TypeVar("R")
_deferred: list[list[Tensor]] = []  # per running TinyJit call: tensors to realize with its outputs

def realize_or_defer(tensors: list[Tensor]):
  """Realizes `tensors` now, or with the outputs of the TinyJit function running (lazy graphs make
  the later realize give the same values)."""
  if _deferred: _deferred[-1].extend(tensors)
  else: _kiln.Tensor.realize_all([t._t for t in tensors])

class TinyJit(Generic[R]):
  def __init__(self, fxn: Callable[..., R]):
    self.fxn = fxn
    functools.update_wrapper(self, fxn)
  def __get__(self, obj, objtype=None): return functools.partial(self.__call__, obj)  # methods
  def __call__(self, *args, **kwargs) -> R:
    _deferred.append([])
    try: ret = self.fxn(*args, **kwargs)
    finally: pending = _deferred.pop()
    outs = [ret] if isinstance(ret, Tensor) else [t for t in ret if isinstance(t, Tensor)] if isinstance(ret, (tuple, list)) else []
    realize_or_defer(outs + pending)
    return ret
  def reset(self): pass  # nothing is captured
