"""kiln's Python face: tinygrad's API (names, arguments, defaults) over kiln's C++ engine.

  from kiln import Tensor, dtypes, Device, GlobalCounters, Context, TinyJit, nn
"""
from kiln._core import KilnError, KilnIndexError, KilnNotImplementedError, KilnTypeError, KilnValueError
from kiln.device import Device
from kiln.dtype import DType, dtypes
from kiln.helpers import Context, GlobalCounters, getenv
from kiln.tensor import Tensor
from kiln.jit import TinyJit
from kiln import nn

__all__ = ["Tensor", "dtypes", "DType", "Device", "GlobalCounters", "Context", "TinyJit", "nn", "getenv", "KilnError",
           "KilnIndexError", "KilnValueError", "KilnTypeError", "KilnNotImplementedError"]
