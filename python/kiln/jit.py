"""TinyJit: the second call captures the kernels the function launches, later calls replay them
over the new input tensors with no scheduling and no codegen (kiln's C++ jit::Core, the same as
C++'s kiln::TinyJit). Tensors the function reads that existed before (weights) are read again at
each replay; tensors it assigns (weights, optimizer state, BatchNorm statistics, the random-number
counter) are updated. Tensor arguments must keep their shapes and dtypes, and are matched by
position, then keyword tensors by name (as tinygrad); other arguments (Python numbers, ...) are
frozen into the captured kernels, so a replay given different ones is an error. Reading tensor data
inside the captured call is an error. JIT=0 runs the function on every call.

Optimizer steps taken inside the function are realized together with the returned tensors, so a
training step computes its forward pass once for both the loss and the updates."""
from __future__ import annotations
import functools
from typing import Callable, Generic, TypeVar
from kiln._core import KilnError, _kiln
from kiln.tensor import Tensor

R = TypeVar("R")
_deferred: list[list[Tensor]] = []  # per running TinyJit call: tensors to realize with its outputs

def realize_or_defer(tensors: list[Tensor]):
  """Realizes `tensors` now, or with the outputs of the TinyJit function running (lazy graphs make
  the later realize give the same values)."""
  if _deferred: _deferred[-1].extend(tensors)
  else: _kiln.Tensor.realize_all([t._t for t in tensors])

def _split_args(args: tuple, kwargs: dict) -> tuple[list[Tensor], list[tuple]]:
  """The tensor arguments in replay order (positional, then keywords sorted by name) and the other
  arguments as (position or name, value)."""
  named = sorted(kwargs.items())
  tensors = [a for a in args if isinstance(a, Tensor)] + [v for _, v in named if isinstance(v, Tensor)]
  others = [(i, a) for i, a in enumerate(args) if not isinstance(a, Tensor)]
  return tensors, others + [(k, v) for k, v in named if not isinstance(v, Tensor)]

def _same(a, b) -> bool:
  if a is b: return True
  try: return type(a) is type(b) and bool(a == b)
  except Exception: return False  # no single truth value (arrays): only the same object is the same

def _flatten(ret) -> list[Tensor]:
  if isinstance(ret, Tensor): return [ret]
  if isinstance(ret, (tuple, list)): return [t for t in ret if isinstance(t, Tensor)]
  return []

def _unflatten(template, tensors: list[Tensor]):
  """`template` (the captured call's result) with its tensors replaced by `tensors`, in order."""
  if isinstance(template, Tensor): return tensors[0]
  if isinstance(template, (tuple, list)):
    it = iter(tensors)
    return type(template)(next(it) if isinstance(x, Tensor) else x for x in template)
  return template

class TinyJit(Generic[R]):
  def __init__(self, fxn: Callable[..., R]):
    self.fxn = fxn
    self.reset()
    functools.update_wrapper(self, fxn)
  def __get__(self, obj, objtype=None): return functools.partial(self.__call__, obj)  # methods
  def reset(self):
    self._core, self._template, self._others = _kiln.JitCore(), None, []

  def _run(self, args, kwargs):
    _deferred.append([])
    try: ret = self.fxn(*args, **kwargs)
    finally: pending = _deferred.pop()
    outs = _flatten(ret)
    realize_or_defer(outs + pending)
    return ret, outs

  def __call__(self, *args, **kwargs) -> R:
    inputs, others = _split_args(args, kwargs)
    _kiln.Tensor.realize_all([t._t for t in inputs])
    if not _kiln.JitCore.enabled(): return self._run(args, kwargs)[0]
    self._core.count_call()
    if self._core.calls >= 3:
      self._check_others(others)
      outs = self._core.replay([t._t for t in inputs])
      return _unflatten(self._template, [Tensor._wrap(t) for t in outs])
    capture = self._core.calls == 2
    if capture: self._core.begin_capture([t._t for t in inputs])
    try:
      ret, outs = self._run(args, kwargs)
      if capture:
        self._core.end_capture([t._t for t in outs])
        self._template, self._others = ret, others
    except BaseException:
      if capture: self._core.abort_capture()
      raise
    return ret

  def _check_others(self, others: list[tuple]):
    """A replay reuses the captured call's non-tensor arguments: different ones are an error."""
    if len(others) == len(self._others) and all(k == ck and _same(v, cv)
                                                for (k, v), (ck, cv) in zip(others, self._others)): return
    captured = dict(self._others)
    for k, v in others:
      if k not in captured or not _same(v, captured[k]):
        raise KilnError(f"TinyJit: argument {k!r} is {v!r} here but was {captured.get(k, '(absent)')!r} in the captured "
                        "call, whose kernels have it built in; pass a Tensor for an argument that changes between calls")
    raise KilnError(f"TinyJit: arguments {[k for k, _ in others]} differ from the captured call's {list(captured)}")
