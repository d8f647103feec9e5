"""Elementwise ops and Python operators. A Python scalar next to a tensor becomes a constant by
tinygrad's rule (below); the C++ op then broadcasts and promotes both sides."""
from __future__ import annotations
import math
from kiln._core import _kiln
from kiln.dtype import DType, dtypes, fits, wrap_int
from kiln.mixin.base import TensorBase

def _python_scalar(x):
  if hasattr(x, "item"): x = x.item()  # NumPy scalars
  if not isinstance(x, (bool, int, float)): raise TypeError(f"expected a Tensor or a Python scalar, got {type(x).__name__}")
  return x

def _scalar(x, dtype: DType | None = None) -> _kiln.Tensor:
  x = _python_scalar(x)
  return _kiln.Tensor.full([], x, dtype or dtypes.from_py(x))

def _binary(name: str, doc: str | None = None):
  """The method `name(x, reverse=False)`, calling the C++ op itself: an operator such as `a + b`
  is this one Python frame and one C++ call (tensors first: the hot path)."""
  cpp = getattr(_kiln.Tensor, name)
  def op(self, x, reverse=False):
    b = x._t if isinstance(x, TensorBase) else self._operand(x)
    return self._wrap(cpp(b, self._t) if reverse else cpp(self._t, b))
  op.__name__ = op.__qualname__ = name
  op.__doc__ = doc
  return op

def _reversed(op):
  """The reflected operator (`2 - t` is t.__rsub__(2)) of a method made by _binary."""
  def reflected(self, x): return op(self, x, True)
  return reflected

def _bitwise(name: str):
  """The bitwise op `name`. A Python int next to an integer tensor gives its low bits in the tensor's dtype
  (int32 | 0xFFFFFFFF is -1, as tinygrad's), where arithmetic would widen the dtype to hold it."""
  op = _binary(name)
  def bitwise(self, x, reverse=False):
    if type(x) is int and self.dtype.is_int: x = self._wrap(_scalar(wrap_int(x, self.dtype), self.dtype))
    return op(self, x, reverse)
  bitwise.__name__ = bitwise.__qualname__ = name
  return bitwise

_tensor_pow = _binary("pow")  # Tensor.pow's case of a tensor exponent or base

class ElementwiseMixin(TensorBase):
  __slots__ = ()

  def _operand(self, x) -> _kiln.Tensor:
    """`x` as a C++ tensor to combine with self. A scalar takes self's dtype when self is float, or
    when both are integers and self's dtype holds it; otherwise its own (int -> default_int, or int64
    if it needs it; float -> default_float), so `int_tensor * 0.5` is float, `float_tensor * 2` stays
    float16/32/64 and `int32_tensor + 2**40` is int64 (never a wrapped value)."""
    if isinstance(x, TensorBase): return x._t
    x = _python_scalar(x)
    own = self.dtype.is_float or (self.dtype.is_int and isinstance(x, int) and fits(x, self.dtype))
    return _scalar(x, self.dtype if own else None)

  # ***** binary *****
  add, sub, mul = _binary("add"), _binary("sub"), _binary("mul")
  _true_div = _binary("div", "True division: integer inputs give a float result.")
  def div(self, x, reverse=False, rounding_mode=None):
    """True division (integer inputs give a float result), or with rounding_mode "trunc" (toward zero)
    or "floor" (as //), where integer inputs keep their dtype."""
    if rounding_mode is None: return self._true_div(x, reverse)
    a, b = self._t, x._t if isinstance(x, TensorBase) else self._operand(x)
    return self._wrap(b.div(a, rounding_mode) if reverse else a.div(b, rounding_mode))
  fmod = _binary("fmod", "C's remainder: it takes the dividend's sign (torch.fmod).")
  copysign = _binary("copysign", "|self| with the sign of x (-0.0 counts as negative).")
  logaddexp = _binary("logaddexp", "log(exp(self) + exp(x)), without overflow.")
  def lerp(self, end, weight):
    """self + (end - self) * weight (weight: a tensor or a number)."""
    return self._wrap(self._t.lerp(end._t, weight._t if isinstance(weight, TensorBase) else float(weight)))
  def isclose(self, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan=False):
    """|self - other| <= atol + rtol * |other| (bool); infinities are close to equal ones, NaNs only with equal_nan."""
    return self._wrap(self._t.isclose(self._operand(other), rtol, atol, equal_nan))
  def allclose(self, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan=False):
    return self._wrap(self._t.allclose(self._operand(other), rtol, atol, equal_nan))
  idiv = _binary("idiv", "Floor division (Python's and PyTorch's //); integer division by zero gives 0.")
  mod = _binary("mod", "The remainder with the divisor's sign (Python's and PyTorch's %).")
  def pow(self, x, reverse=False):
    if not reverse and not isinstance(x, TensorBase):  # x**2, x**0.5 are cheap
      base = self if self.dtype.is_float or isinstance(x, int) else self.cast(dtypes.default_float)  # int ** 2.0 is float
      return self._wrap(base._t.pow(float(x)))
    return _tensor_pow(self, x, reverse)
  def isnan(self): return self._wrap(self._t.isnan())
  def isinf(self, detect_positive=True, detect_negative=True): return self._wrap(self._t.isinf(detect_positive, detect_negative))
  def isfinite(self): return self._wrap(self._t.isfinite())
  bitwise_and, bitwise_or, bitwise_xor = _bitwise("bitwise_and"), _bitwise("bitwise_or"), _bitwise("bitwise_xor")
  def bitwise_not(self): return self._wrap(self._t.bitwise_not())
  def _shift(self, name: str, x, reverse: bool):
    if isinstance(x, int) and not isinstance(x, bool) and not reverse: return self._wrap(getattr(self._t, name)(x))
    a, b = self._t, self._operand(x)
    return self._wrap(getattr(b, name)(a) if reverse else getattr(a, name)(b))
  def lshift(self, x, reverse=False):
    """self << x for integer tensors; x is a number or a tensor of shifts."""
    return self._shift("lshift", x, reverse)
  def rshift(self, x, reverse=False):
    """self >> x for integer tensors (arithmetic for signed ones); x is a number or a tensor of shifts."""
    return self._shift("rshift", x, reverse)
  maximum, minimum = _binary("maximum"), _binary("minimum")
  def clip(self, min_=None, max_=None):
    if min_ is None and max_ is None: raise RuntimeError("clip: at least one of min_ or max_ must not be None")
    if self.dtype.is_float and not isinstance(min_, TensorBase) and not isinstance(max_, TensorBase):
      return self._wrap(self._t.clip(-math.inf if min_ is None else float(min_), math.inf if max_ is None else float(max_)))
    out = self.maximum(min_) if min_ is not None else self
    return out.minimum(max_) if max_ is not None else out
  clamp = clip

  def where(self, x, y):
    """x where self is true, else y (self is the condition; x and y may be scalars)."""
    if isinstance(x, TensorBase): xt, yt = x._t, x._operand(y)
    elif isinstance(y, TensorBase): xt, yt = y._operand(x), y._t
    else: xt, yt = _scalar(x), _scalar(y)
    return self._wrap(self._t.where(xt, yt))

  lt, gt, le, ge, eq, ne = (_binary(name) for name in ("lt", "gt", "le", "ge", "eq", "ne"))

  # ***** unary *****
  def neg(self): return self._wrap(self._t.neg())
  def logical_not(self): return self._wrap(self._t.logical_not())
  def relu(self): return self._wrap(self._t.relu())
  def exp(self): return self._wrap(self._t.exp())
  def exp2(self): return self._wrap(self._t.exp2())
  def log(self): return self._wrap(self._t.log())
  def log2(self): return self._wrap(self._t.log2())
  def sqrt(self): return self._wrap(self._t.sqrt())
  def rsqrt(self): return self._wrap(self._t.rsqrt())
  def sin(self): return self._wrap(self._t.sin())
  def cos(self): return self._wrap(self._t.cos())
  def tan(self): return self._wrap(self._t.tan())
  def tanh(self): return self._wrap(self._t.tanh())
  def sigmoid(self): return self._wrap(self._t.sigmoid())
  def abs(self): return self._wrap(self._t.abs())
  def reciprocal(self): return self._wrap(self._t.reciprocal())
  def square(self): return self._wrap(self._t.square())
  def sign(self): return self._wrap(self._t.sign())
  def trunc(self): return self._wrap(self._t.trunc())
  def floor(self): return self._wrap(self._t.floor())
  def ceil(self): return self._wrap(self._t.ceil())
  def round(self): return self._wrap(self._t.round())
  def log10(self): return self._wrap(self._t.log10())
  def sinh(self): return self._wrap(self._t.sinh())
  def cosh(self): return self._wrap(self._t.cosh())
  def asinh(self): return self._wrap(self._t.asinh())
  def acosh(self): return self._wrap(self._t.acosh())
  def atanh(self): return self._wrap(self._t.atanh())
  def asin(self): return self._wrap(self._t.asin())
  def acos(self): return self._wrap(self._t.acos())
  def atan(self): return self._wrap(self._t.atan())

  # ***** operators *****
  def __neg__(self): return self.neg()
  __add__, __radd__ = add, _reversed(add)
  __sub__, __rsub__ = sub, _reversed(sub)
  __mul__, __rmul__ = mul, _reversed(mul)
  __truediv__, __rtruediv__ = _true_div, _reversed(_true_div)
  __floordiv__, __rfloordiv__ = idiv, _reversed(idiv)
  __mod__, __rmod__ = mod, _reversed(mod)
  __and__, __rand__ = bitwise_and, _reversed(bitwise_and)
  __or__, __ror__ = bitwise_or, _reversed(bitwise_or)
  __xor__, __rxor__ = bitwise_xor, _reversed(bitwise_xor)
  def __invert__(self): return self.bitwise_not()
  def __lshift__(self, x): return self.lshift(x)
  def __rshift__(self, x): return self.rshift(x)
  def __rlshift__(self, x): return self.lshift(x, True)
  def __rrshift__(self, x): return self.rshift(x, True)
  def __pow__(self, x): return self.pow(x)
  def __rpow__(self, x): return self.pow(x, True)
  __lt__, __le__, __gt__, __ge__ = lt, le, gt, ge
  __eq__, __ne__ = eq, ne  # type: ignore[assignment]
  # in place, as tinygrad: the result is assigned to self (same shape and dtype)
  def __iadd__(self, x): return self.assign(self.add(x))
  def __isub__(self, x): return self.assign(self.sub(x))
  def __imul__(self, x): return self.assign(self.mul(x))
  def __itruediv__(self, x): return self.assign(self.div(x))
  def __ipow__(self, x): return self.assign(self.pow(x))
  def __ifloordiv__(self, x): return self.assign(self.idiv(x))
  def __imod__(self, x): return self.assign(self.mod(x))
