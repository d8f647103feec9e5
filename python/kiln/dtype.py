"""Scalar types, as tinygrad's `dtypes`: kiln's C++ DType values under tinygrad's names and aliases.

A DType has `.name` ("float32"), `.itemsize` (bytes) and compares by value. Promotion between
tensors is the C++ engine's (tinygrad's lattice); `least_upper_dtype` exposes it.
"""
from __future__ import annotations
import builtins
from kiln._core import _kiln

DType = _kiln.DType

def _named(name: str) -> DType: return _kiln.dtype_from_name(name)

class dtypes:
  bool = _named("bool")
  int8, int16, int32, int64 = _named("int8"), _named("int16"), _named("int32"), _named("int64")
  uint8, uint16, uint32, uint64 = _named("uint8"), _named("uint16"), _named("uint32"), _named("uint64")
  float16, bfloat16, float32, float64 = _named("float16"), _named("bfloat16"), _named("float32"), _named("float64")
  # 8-bit floats: OCP e4m3 (no inf) and e5m2, and the fnuz variants (no inf, no -0, NaN is 0x80)
  fp8e4m3, fp8e5m2, fp8e4m3fnuz, fp8e5m2fnuz = _named("fp8e4m3"), _named("fp8e5m2"), _named("fp8e4m3fnuz"), _named("fp8e5m2fnuz")
  fp8_ocp, fp8_fnuz = (fp8e4m3, fp8e5m2), (fp8e4m3fnuz, fp8e5m2fnuz)
  fp8s = fp8_ocp + fp8_fnuz
  # tinygrad's groups, for `dtype in dtypes.floats` and parametrized tests
  floats = fp8s + (float16, bfloat16, float32, float64)
  uints, sints = (uint8, uint16, uint32, uint64), (int8, int16, int32, int64)
  ints = uints + sints
  int8s, int16s, int32s, int64s = (uint8, int8), (uint16, int16), (uint32, int32), (uint64, int64)
  all = floats + ints + (bool,)  # noqa: A003
  # tinygrad's C-style aliases
  char, short, int, long = int8, int16, int32, int64
  uchar, ushort, uint, ulong = uint8, uint16, uint32, uint64
  half, float, double = float16, float32, float64
  # what Python ints and floats become (the C++ engine's defaults too, so not meant to be changed)
  default_float, default_int = float32, int32

  @staticmethod
  def is_float(x: DType) -> builtins.bool: return x.is_float
  @staticmethod
  def is_int(x: DType) -> builtins.bool: return x.is_int
  @staticmethod
  def is_unsigned(x: DType) -> builtins.bool: return x.is_unsigned
  @staticmethod
  def is_bool(x: DType) -> builtins.bool: return x.is_bool
  @staticmethod
  def from_py(x) -> DType:
    """The dtype a Python scalar becomes (an int that int32 cannot hold: see int_dtype_for)."""
    if isinstance(x, builtins.bool): return dtypes.bool
    if isinstance(x, builtins.int): return int_dtype_for(x, x)
    if isinstance(x, builtins.float): return dtypes.default_float
    raise TypeError(f"no dtype for a Python {type(x).__name__}")
  @staticmethod
  def finfo(x: DType) -> tuple[builtins.int, builtins.int]:
    """(exponent bits, mantissa bits) of a float dtype, as tinygrad's."""
    return _kiln.finfo(x)
  @staticmethod
  def fields() -> dict[str, DType]: return {d.name: d for d in _kiln.all_dtypes()}
  @staticmethod
  def min(x: DType): return x.min
  @staticmethod
  def max(x: DType): return x.max

def to_dtype(x: DType | str) -> DType:
  """A DType from a DType or a name (kiln's "float32" or tinygrad's aliases like "float", "half"). Anything
  else is an AttributeError, as tinygrad's lookup of the name on dtypes gives."""
  if isinstance(x, DType): return x
  if isinstance(x, str) and isinstance(d := getattr(dtypes, x, None), DType): return d
  raise AttributeError(f"not a dtype: {x!r} (expected a DType or the name of one, such as 'float32')")

def int_range(x: DType) -> tuple[int, int]:
  """The smallest and largest value of the integer dtype `x`."""
  bits = 8 * x.itemsize
  return (0, (1 << bits) - 1) if x.is_unsigned else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)

def fits(v: int, x: DType) -> builtins.bool:
  lo, hi = int_range(x)
  return lo <= v <= hi

def wrap_int(v: int, x: DType) -> int:
  """`v` modulo 2**bits in the integer dtype `x`'s range, as a C cast: -1 in uint8 is 255, 2**32 in int32 is 0."""
  bits = 8 * x.itemsize
  v &= (1 << bits) - 1
  return v - (1 << bits) if not x.is_unsigned and v >> (bits - 1) else v

def int_dtype_for(lo: int, hi: int) -> DType:
  """The dtype Python ints from `lo` to `hi` become: default_int, else int64, else uint64 (NumPy's
  rule). Beyond those it is an error: the value would wrap."""
  for d in (dtypes.default_int, dtypes.int64, dtypes.uint64):
    if fits(lo, d) and fits(hi, d): return d
  raise OverflowError(f"Python int {hi if lo >= 0 else lo} does not fit int64 or uint64")

def least_upper_dtype(*ds: DType) -> DType:
  """The smallest dtype all of `ds` convert to without loss (the promotion binary ops use)."""
  out = ds[0]
  for d in ds[1:]: out = _kiln.least_upper_dtype(out, d)
  return out

def to_numpy_dtype(x: DType):
  """NumPy's dtype of the same name (None for bfloat16 and the fp8s, which NumPy lacks)."""
  import numpy as np
  return None if x == dtypes.bfloat16 or x in dtypes.fp8s else np.dtype(x.name)

def storage_dtype(x: DType) -> DType:
  """The unsigned integer dtype of x's size: how a dtype NumPy lacks travels as bits (pickling)."""
  return {1: dtypes.uint8, 2: dtypes.uint16, 4: dtypes.uint32, 8: dtypes.uint64}[x.itemsize]
