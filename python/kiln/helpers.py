"""tinygrad's helpers that scripts import: getenv, Context, GlobalCounters, argument-form helpers,
and a small progress bar (trange)."""
from __future__ import annotations
import contextlib, functools, math, os, sys, time
from typing import Iterable, Iterator, TypeVar
from kiln._core import _kiln

T = TypeVar("T")

# Kernels launched, estimated FLOPs and bytes, device memory in use, kernel time: the C++ counters,
# read and reset as class attributes (GlobalCounters.kernel_count, GlobalCounters.reset()).
GlobalCounters = _kiln.GlobalCounters

@functools.cache
def getenv(key: str, default=0):
  """The environment variable `key` converted to the type of `default` (read once, as tinygrad)."""
  return type(default)(os.getenv(key, default))

class Context(contextlib.ContextDecorator):
  """Overrides kiln's settings (DEBUG, NOOPT, SPLIT_REDUCEOP, ...) while active: `with Context(DEBUG=2): ...`.
  TRAINING=1 turns Tensor.training on for the scope. A name kiln does not know is a KilnError."""
  def __init__(self, **kwargs):
    for k in kwargs: _kiln.check_setting(k)
    self.kwargs, self.scopes = kwargs, []  # a stack: one object may be entered again (a decorated recursion)
  def __enter__(self):
    settings = [(k, str(int(v) if isinstance(v, bool) else v)) for k, v in self.kwargs.items()]
    self.scopes.append(_kiln.ContextScope(settings))
  def __exit__(self, *exc): self.scopes.pop().restore()

def prod(xs: Iterable, start=1): return functools.reduce(lambda a, b: a * b, xs, start)
def flatten(xss: Iterable[Iterable[T]]) -> list[T]: return [x for xs in xss for x in xs]
def dedup(xs: Iterable[T]) -> list[T]: return list(dict.fromkeys(xs))
def all_int(xs: Iterable) -> bool: return all(isinstance(x, int) for x in xs)

def argfix(*x) -> tuple:
  """tinygrad's *args convention: f(2, 3), f((2, 3)) and f([2, 3]) all mean the tuple (2, 3)."""
  if x and isinstance(x[0], (tuple, list)):
    if len(x) != 1: raise ValueError(f"bad arguments {x}: pass either one sequence or several ints")
    return tuple(x[0])
  return x

def make_tuple(x: int | tuple, cnt: int) -> tuple: return (x,) * cnt if isinstance(x, int) else tuple(x)

def pairs_from_flat(flat) -> list[tuple[int, int]]:
  """PyTorch's flat padding, last axis first ((left, right, top, bottom, ...)), as (before, after)
  per axis in axis order."""
  if len(flat) % 2: raise ValueError(f"flat padding needs an even number of values, got {tuple(flat)}")
  return list(zip(flat[-2::-2], flat[::-2]))

def per_axis(x: int | tuple, dims: int, what: str) -> list[int]:
  """A window size given once or per spatial axis, as one per axis."""
  sizes = make_tuple(x, dims)
  if len(sizes) != dims: raise ValueError(f"{what}={x} needs one value or {dims} (one per spatial axis)")
  return list(sizes)

def pool_pads(padding: int | tuple, dims: int) -> list[tuple[int, int]]:
  """tinygrad's conv/pool padding as (before, after) per spatial axis: an int for all sides, one per
  axis (both sides), or 2*dims flat as PyTorch's pad ((left, right, top, bottom) in 2-D). Negative
  amounts crop, as tinygrad's (PyTorch rejects them)."""
  if isinstance(padding, int): return [(padding, padding)] * dims
  if len(padding) == dims: return [(p, p) for p in padding]
  if len(padding) == 2 * dims: return pairs_from_flat(padding)
  raise ValueError(f"padding={padding} needs an int or a sequence of {dims} or {2 * dims} values")

def colored(st: str, color: str | None, background=False) -> str:
  colors = ["black", "red", "green", "yellow", "blue", "magenta", "cyan", "white"]
  return f"\u001b[{10 * background + 60 * (color.upper() == color) + 30 + colors.index(color.lower())}m{st}\u001b[0m" \
    if color is not None else st

class trange:
  """range() with a one-line progress display on stderr and set_description(), as tinygrad's trange."""
  def __init__(self, n: int, desc: str = ""): self.n, self.desc, self.start = n, desc, time.perf_counter()
  def set_description(self, desc: str): self.desc = desc
  def __iter__(self) -> Iterator[int]:
    for i in range(self.n):
      yield i
      self._show(i + 1)
    sys.stderr.write("\n")
  def _show(self, done: int):
    rate = done / max(time.perf_counter() - self.start, 1e-9)
    eta = (self.n - done) / rate if rate > 0 else math.inf
    clear = "\u001b[K" if sys.stderr.isatty() else ""  # no escape codes into pipes and logs
    sys.stderr.write(f"\r{self.desc} {done}/{self.n} [{rate:.2f} it/s, eta {eta:.0f}s]{clear}")
    sys.stderr.flush()
