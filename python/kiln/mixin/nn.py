"""Neural-network ops: convolution, pooling, normalization, activations, attention and losses.
kiln's C++ ops take one int for kernel sizes, strides, padding and dilation; tinygrad's tuples are
accepted when all their entries are equal."""
from __future__ import annotations
import functools
from kiln.helpers import make_tuple
from kiln.mixin.base import TensorBase, raw

def _one(x, what: str) -> int:
  """A size that may be given per spatial axis; kiln's ops take the same size for all of them."""
  if isinstance(x, int): return x
  if len(set(x)) != 1: raise NotImplementedError(f"{what}={tuple(x)}: different sizes per axis are not supported yet")
  return x[0]

def _mean_only(reduction: str, what: str):
  if reduction != "mean": raise NotImplementedError(f"{what}: reduction={reduction!r} is not supported yet (only 'mean')")

class NNMixin(TensorBase):
  __slots__ = ()

  def conv2d(self, weight, bias=None, groups=1, stride=1, dilation=1, padding=0, dtype=None):
    """NCHW input, (out, in/groups, kH, kW) weight; also 1-D and 3-D (any spatial rank)."""
    x = self if dtype is None else self.cast(dtype)
    return self._wrap(x._t.conv2d(weight._t, raw(bias), _one(stride, "stride"), _one(padding, "padding"),
                                  _one(dilation, "dilation"), groups))
  def conv_transpose2d(self, weight, bias=None, groups=1, stride=1, dilation=1, padding=0, output_padding=0):
    return self._wrap(self._t.conv_transpose2d(weight._t, raw(bias), _one(stride, "stride"), _one(padding, "padding"),
                                               _one(dilation, "dilation"), groups, _one(output_padding, "output_padding")))
  def max_pool2d(self, kernel_size=(2, 2), stride=None, dilation=1, padding=0, ceil_mode=False, return_indices=False):
    if return_indices: raise NotImplementedError("max_pool2d: return_indices is not supported yet")
    return self._wrap(self._t.max_pool2d(_one(kernel_size, "kernel_size"), None if stride is None else _one(stride, "stride"),
                                         _one(padding, "padding"), _one(dilation, "dilation"), ceil_mode))
  def avg_pool2d(self, kernel_size=(2, 2), stride=None, dilation=1, padding=0, ceil_mode=False, count_include_pad=True):
    return self._wrap(self._t.avg_pool2d(_one(kernel_size, "kernel_size"), None if stride is None else _one(stride, "stride"),
                                         _one(padding, "padding"), _one(dilation, "dilation"), ceil_mode, count_include_pad))

  def batchnorm(self, weight, bias, mean, invstd, axis: int | tuple[int, ...] = 1):
    """(self - mean) * invstd * weight + bias, with the statistics along `axis`."""
    return self._wrap(self._t.batchnorm(raw(weight), raw(bias), mean._t, invstd._t, list(make_tuple(axis, 1))))
  def layernorm(self, axis: int | tuple[int, ...] = -1, eps: float = 1e-5):
    return self._wrap(self._t.layernorm(list(make_tuple(axis, 1)), eps))
  def dropout(self, p: float = 0.5):
    """Zeroes elements with probability p and scales the rest by 1/(1-p), only while Tensor.training."""
    return self._wrap(self._t.dropout(p))
  def scaled_dot_product_attention(self, key, value, attn_mask=None, dropout_p: float = 0.0, is_causal: bool = False):
    if dropout_p != 0: raise NotImplementedError("scaled_dot_product_attention: dropout_p is not supported yet")
    return self._wrap(self._t.scaled_dot_product_attention(key._t, value._t, raw(attn_mask), is_causal))
  def sequential(self, ll: list):
    """Applies each callable of `ll` in turn."""
    return functools.reduce(lambda x, f: f(x), ll, self)

  # ***** activations *****
  def gelu(self): return self._wrap(self._t.gelu())
  def quick_gelu(self): return self._wrap(self._t.quick_gelu())
  def silu(self): return self._wrap(self._t.silu())
  def swish(self): return self._wrap(self._t.swish())
  def relu6(self): return self._wrap(self._t.relu6())
  def hardswish(self): return self._wrap(self._t.hardswish())
  def mish(self): return self._wrap(self._t.mish())
  def erf(self): return self._wrap(self._t.erf())
  def softplus(self, beta: float = 1.0): return self._wrap(self._t.softplus(beta))
  def elu(self, alpha: float = 1.0): return self._wrap(self._t.elu(alpha))
  def leaky_relu(self, neg_slope: float = 0.01): return self._wrap(self._t.leaky_relu(neg_slope))
  def hardtanh(self, min_val: float = -1, max_val: float = 1): return self._wrap(self._t.hardtanh(min_val, max_val))

  # ***** losses (mean over the batch) *****
  def sparse_categorical_crossentropy(self, Y, ignore_index: int = -1, label_smoothing: float = 0.0, reduction: str = "mean"):
    """self: logits (N, C); Y: class indices (N,), entries equal to ignore_index left out."""
    _mean_only(reduction, "sparse_categorical_crossentropy")
    return self._wrap(self._t.sparse_categorical_crossentropy(Y._t, ignore_index, label_smoothing))
  def cross_entropy(self, Y, reduction: str = "mean", label_smoothing: float = 0.0):
    """self: logits; Y: class indices or probabilities."""
    _mean_only(reduction, "cross_entropy")
    return self._wrap(self._t.cross_entropy(Y._t, label_smoothing))
  def nll_loss(self, Y, weight=None, ignore_index: int | None = None, reduction: str = "mean"):
    """self: log-probabilities."""
    _mean_only(reduction, "nll_loss")
    if weight is not None: raise NotImplementedError("nll_loss: weight is not supported yet")
    return self._wrap(self._t.nll_loss(Y._t, -100 if ignore_index is None else ignore_index))
  def binary_crossentropy(self, Y, reduction: str = "mean"):
    """self: probabilities."""
    _mean_only(reduction, "binary_crossentropy")
    return self._wrap(self._t.binary_crossentropy(Y._t))
  def binary_crossentropy_logits(self, Y, reduction: str = "mean", pos_weight=None):
    _mean_only(reduction, "binary_crossentropy_logits")
    if pos_weight is not None: raise NotImplementedError("binary_crossentropy_logits: pos_weight is not supported yet")
    return self._wrap(self._t.binary_crossentropy_logits(Y._t))
