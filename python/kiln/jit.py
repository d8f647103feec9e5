"""TinyJit, for tinygrad scripts. kiln has no kernel-replay JIT yet: the decorated function runs on
every call. kiln's schedule cache already reuses the schedule of a graph of the same structure,
which is most of what the JIT saves; like tinygrad's, the returned tensors come back realized."""
from __future__ import annotations
import functools
from typing import Callable, Generic, TypeVar
from kiln.tensor import Tensor

R = TypeVar("R")

class TinyJit(Generic[R]):
  def __init__(self, fxn: Callable[..., R]):
    self.fxn = fxn
    functools.update_wrapper(self, fxn)
  def __get__(self, obj, objtype=None): return functools.partial(self.__call__, obj)  # methods
  def __call__(self, *args, **kwargs) -> R:
    ret = self.fxn(*args, **kwargs)
    outs = [ret] if isinstance(ret, Tensor) else [t for t in ret if isinstance(t, Tensor)] if isinstance(ret, (tuple, list)) else []
    if outs: outs[0].realize(*outs[1:])
    return ret
  def reset(self): pass  # nothing is captured
