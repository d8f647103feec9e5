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

_tensor_pow = _binary("pow")  # Tensor.pow's case of a tensor exponent or base

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

  # ***** binary *****
  add, sub, mul = _binary("add"), _binary("sub"), _binary("mul")
  div = _binary("div", "True division: integer inputs give a float result.")
  idiv = _binary("idiv", "Floor division (Python's and PyTorch's //); integer division by zero gives 0.")
  mod = _binary("mod", "The remainder with the divisor's sign (Python's and PyTorch's %).")
  def pow(self, x, reverse=False):
    if not reverse and not isinstance(x, TensorBase): return self._wrap(self._t.pow(float(x)))  # x**2, x**0.5 are cheap
    return _tensor_pow(self, x, reverse)
  def isnan(self): return self._wrap(self._t.isnan())
  def isinf(self, detect_positive=True, detect_negative=True): return self._wrap(self._t.isinf(detect_positive, detect_negative))
  def isfinite(self): return self._wrap(self._t.isfinite())
  bitwise_and, bitwise_or, bitwise_xor = _binary("bitwise_and"), _binary("bitwise_or"), _binary("bitwise_xor")
  def bitwise_not(self): return self._wrap(self._t.bitwise_not())
  def lshift(self, x: int): return self._wrap(self._t.lshift(x))
  def rshift(self, x: int): return self._wrap(self._t.rshift(x))
  maximum, minimum = _binary("maximum"), _binary("minimum")
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

  # ***** operators *****
  def __neg__(self): return self.neg()
  __add__, __radd__ = add, _reversed(add)
  __sub__, __rsub__ = sub, _reversed(sub)
  __mul__, __rmul__ = mul, _reversed(mul)
  __truediv__, __rtruediv__ = div, _reversed(div)
  __floordiv__, __rfloordiv__ = idiv, _reversed(idiv)
  __mod__, __rmod__ = mod, _reversed(mod)
  __and__, __rand__ = bitwise_and, _reversed(bitwise_and)
  __or__, __ror__ = bitwise_or, _reversed(bitwise_or)
  __xor__, __rxor__ = bitwise_xor, _reversed(bitwise_xor)
  def __invert__(self): return self.bitwise_not()
  def __lshift__(self, x: int): return self.lshift(x)
  def __rshift__(self, x: int): return self.rshift(x)
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
