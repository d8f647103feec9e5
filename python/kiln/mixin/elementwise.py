"""Elementwise ops and Python operators. A Python scalar next to a tensor becomes a constant by
tinygrad's rule (below); the C++ op then broadcasts and promotes both sides."""
from __future__ import annotations
from kiln._core import _kiln
from kiln.dtype import DType, dtypes
from kiln.mixin.base import TensorBase

def _python_scalar(x):
  if hasattr(x, "item"): x = x.item()  # NumPy scalars
  if not isinstance(x, (bool, int, float)): raise TypeError(f"expected a Tensor or a Python scalar, got {type(x).__name__}")
  return x

def _scalar(x, dtype: DType | None = None) -> _kiln.Tensor:
  x = _python_scalar(x)
  return _kiln.Tensor.full([], x, dtype or dtypes.from_py(x))

class ElementwiseMixin(TensorBase):
  __slots__ = ()

  def _operand(self, x) -> _kiln.Tensor:
    """`x` as a C++ tensor to combine with self. A scalar takes self's dtype when self is float, or
    when both are integers; otherwise its own (int -> default_int, float -> default_float), so
    `int_tensor * 0.5` is float and `float_tensor * 2` stays float16/32/64."""
    if isinstance(x, TensorBase): return x._t
    x = _python_scalar(x)
    own = self.dtype.is_float or (self.dtype.is_int and isinstance(x, int))
    return _scalar(x, self.dtype if own else None)

  def _binop(self, op: str, x, reverse: bool = False):
    a, b = self._t, x._t if isinstance(x, TensorBase) else self._operand(x)  # tensors first: the hot path
    return self._wrap(getattr(b, op)(a) if reverse else getattr(a, op)(b))

  # ***** binary *****
  def add(self, x, reverse=False): return self._binop("add", x, reverse)
  def sub(self, x, reverse=False): return self._binop("sub", x, reverse)
  def mul(self, x, reverse=False): return self._binop("mul", x, reverse)
  def div(self, x, reverse=False):
    """True division: integer inputs give a float result."""
    return self._binop("div", x, reverse)
  def pow(self, x, reverse=False):
    if not reverse and not isinstance(x, TensorBase): return self._wrap(self._t.pow(float(x)))  # x**2, x**0.5 are cheap
    return self._binop("pow", x, reverse)
  def idiv(self, x, reverse=False):
    """Floor division (Python's and PyTorch's //); integer division by zero gives 0."""
    return self._binop("idiv", x, reverse)
  def mod(self, x, reverse=False):
    """The remainder with the divisor's sign (Python's and PyTorch's %)."""
    return self._binop("mod", x, reverse)
  def isnan(self): return self._wrap(self._t.isnan())
  def isinf(self, detect_positive=True, detect_negative=True): return self._wrap(self._t.isinf(detect_positive, detect_negative))
  def isfinite(self): return self._wrap(self._t.isfinite())
  def bitwise_and(self, x, reverse=False): return self._binop("bitwise_and", x, reverse)
  def bitwise_or(self, x, reverse=False): return self._binop("bitwise_or", x, reverse)
  def bitwise_xor(self, x, reverse=False): return self._binop("bitwise_xor", x, reverse)
  def bitwise_not(self): return self._wrap(self._t.bitwise_not())
  def lshift(self, x: int): return self._wrap(self._t.lshift(x))
  def rshift(self, x: int): return self._wrap(self._t.rshift(x))
  def maximum(self, x): return self._binop("maximum", x)
  def minimum(self, x): return self._binop("minimum", x)
  def clip(self, min_=None, max_=None):
    if min_ is None and max_ is None: raise RuntimeError("clip: at least one of min_ or max_ must not be None")
    out = self.maximum(min_) if min_ is not None else self
    return out.minimum(max_) if max_ is not None else out
  clamp = clip

  def where(self, x, y):
    """x where self is true, else y (self is the condition; x and y may be scalars)."""
    if isinstance(x, TensorBase): xt, yt = x._t, x._operand(y)
    elif isinstance(y, TensorBase): xt, yt = y._operand(x), y._t
    else: xt, yt = _scalar(x), _scalar(y)
    return self._wrap(self._t.where(xt, yt))

  def lt(self, x): return self._binop("lt", x)
  def gt(self, x): return self._binop("gt", x)
  def le(self, x): return self._binop("le", x)
  def ge(self, x): return self._binop("ge", x)
  def eq(self, x): return self._binop("eq", x)
  def ne(self, x): return self._binop("ne", x)

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

  # ***** operators *****
  def __neg__(self): return self.neg()
  def __add__(self, x): return self.add(x)
  def __radd__(self, x): return self.add(x, True)
  def __sub__(self, x): return self.sub(x)
  def __rsub__(self, x): return self.sub(x, True)
  def __mul__(self, x): return self.mul(x)
  def __rmul__(self, x): return self.mul(x, True)
  def __truediv__(self, x): return self.div(x)
  def __rtruediv__(self, x): return self.div(x, True)
  def __floordiv__(self, x): return self.idiv(x)
  def __rfloordiv__(self, x): return self.idiv(x, True)
  def __mod__(self, x): return self.mod(x)
  def __rmod__(self, x): return self.mod(x, True)
  def __and__(self, x): return self.bitwise_and(x)
  def __rand__(self, x): return self.bitwise_and(x, True)
  def __or__(self, x): return self.bitwise_or(x)
  def __ror__(self, x): return self.bitwise_or(x, True)
  def __xor__(self, x): return self.bitwise_xor(x)
  def __rxor__(self, x): return self.bitwise_xor(x, True)
  def __invert__(self): return self.bitwise_not()
  def __lshift__(self, x: int): return self.lshift(x)
  def __rshift__(self, x: int): return self.rshift(x)
  def __pow__(self, x): return self.pow(x)
  def __rpow__(self, x): return self.pow(x, True)
  def __lt__(self, x): return self.lt(x)
  def __le__(self, x): return self.le(x)
  def __gt__(self, x): return self.gt(x)
  def __ge__(self, x): return self.ge(x)
  def __eq__(self, x): return self.eq(x)  # type: ignore[override]
  def __ne__(self, x): return self.ne(x)  # type: ignore[override]
  # in place, as tinygrad: the result is assigned to self (same shape and dtype)
  def __iadd__(self, x): return self.assign(self.add(x))
  def __isub__(self, x): return self.assign(self.sub(x))
  def __imul__(self, x): return self.assign(self.mul(x))
  def __itruediv__(self, x): return self.assign(self.div(x))
  def __ipow__(self, x): return self.assign(self.pow(x))
  def __ifloordiv__(self, x): return self.assign(self.idiv(x))
  def __imod__(self, x): return self.assign(self.mod(x))
