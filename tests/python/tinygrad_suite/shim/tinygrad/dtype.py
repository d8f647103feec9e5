"""tinygrad.dtype's names over kiln.dtype. The scalar conversions (truncate, fp8) are written here
from the formats' definitions, independent of kiln's C++ casts, since tests compute expected values
with them."""
import ctypes, math, struct
import numpy as np
from kiln.dtype import *  # noqa: F401,F403
from kiln.dtype import DType, dtypes, least_upper_dtype, to_dtype  # noqa: F401

DTYPES_DICT = {k: v for k, v in vars(dtypes).items() if isinstance(v, DType) and not k.startswith("default")}

def strong_dtype(d: DType) -> DType: return d

# fp8: (exponent bits, mantissa bits, bias, has inf, fnuz)
_FP8 = {"fp8e4m3": (4, 3, 7, False, False), "fp8e5m2": (5, 2, 15, True, False),
        "fp8e4m3fnuz": (4, 3, 8, False, True), "fp8e5m2fnuz": (5, 2, 16, False, True)}

def fp8_to_float(x: int, dtype: DType) -> float:
  e_bits, m_bits, bias, has_inf, fnuz = _FP8[dtype.name]
  sign, e, m = (x >> 7) & 1, (x >> m_bits) & ((1 << e_bits) - 1), x & ((1 << m_bits) - 1)
  if fnuz and x == 0x80: return math.nan
  e_max = (1 << e_bits) - 1
  if not fnuz and e == e_max:
    if has_inf: return math.copysign(math.inf if m == 0 else math.nan, -1 if sign else 1)
    if m == (1 << m_bits) - 1: return math.nan
  v = (m / (1 << m_bits)) * 2.0 ** (1 - bias) if e == 0 else (1 + m / (1 << m_bits)) * 2.0 ** (e - bias)
  return -v if sign else v

def _fp8_table(dtype: DType):
  vals = [(b, fp8_to_float(b, dtype)) for b in range(256)]
  return sorted([(v, b) for b, v in vals if math.isfinite(v) and not (v == 0 and b & 0x80)])

def float_to_fp8(x: float, dtype: DType) -> int:
  """Round to nearest even; out-of-range saturates to the largest finite value (tinygrad's choice)."""
  _, m_bits, _, has_inf, fnuz = _FP8[dtype.name]
  if math.isnan(x): return 0x80 if fnuz else (0x7f if m_bits == 3 else 0x7f) | (0x80 if math.copysign(1, x) < 0 else 0)
  if math.isinf(x):
    if fnuz: return 0x80
    if has_inf: return 0x7c | (0x80 if x < 0 else 0)
    return 0x7f | (0x80 if x < 0 else 0)
  table = _fp8_table(dtype)
  best = min(table, key=lambda vb: (abs(vb[0] - abs(x)), vb[1] & 1))
  if abs(x) > table[-1][0]: best = table[-1]
  b = best[1]
  if x < 0 or (x == 0 and math.copysign(1, x) < 0): b = 0 if (fnuz and best[0] == 0) else b | 0x80
  return b

def _f16(x):
  try: return struct.unpack("e", struct.pack("e", float(x)))[0]
  except OverflowError: return math.copysign(math.inf, x)
def _bf16(x):
  x = float(x)
  if not math.isfinite(x): return x
  u = struct.unpack("I", struct.pack("f", ctypes.c_float(x).value))[0]
  u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
  return struct.unpack("f", struct.pack("I", u))[0]
truncate = {dtypes.bool: bool, dtypes.float16: _f16, dtypes.bfloat16: _bf16,
            **{d: (lambda x, d=d: fp8_to_float(float_to_fp8(x, d), d)) for d in dtypes.fp8s},
            **{getattr(dtypes, n): (lambda x, c=getattr(ctypes, f"c_{n}"): c(x).value)
               for n in ("float", "double", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")}}

def _to_np_dtype(d: DType):
  if d == dtypes.bfloat16 or d in dtypes.fp8s: return np.float32
  return np.dtype(d.name).type
def _from_np_dtype(npd) -> DType: return getattr(dtypes, np.dtype(npd).name)
def _to_torch_dtype(d: DType):
  import torch
  if d == dtypes.bfloat16: return torch.bfloat16
  if d == dtypes.uint64: return torch.uint64 if hasattr(torch, "uint64") else None
  if d in dtypes.fp8s: return torch.uint8
  try: return torch.from_numpy(np.array([], dtype=_to_np_dtype(d))).dtype
  except TypeError: return None
