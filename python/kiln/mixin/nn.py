"""Neural-network ops: convolution, pooling, normalization, activations, attention and losses.
Window arguments (kernel size, stride, dilation, padding) are an int or one value per spatial axis
as tinygrad's; padding may also be 2*dims values, flat as PyTorch's pad."""
from __future__ import annotations
import functools
from kiln._core import _kiln
from kiln.helpers import make_tuple, per_axis, pool_pads
from kiln.mixin.base import TensorBase, raw

def _reduction(reduction: str):
  try: return _kiln.Reduction.__members__[reduction]
  except KeyError: raise ValueError(f"reduction={reduction!r}: expected 'mean', 'sum' or 'none'") from None

class NNMixin(TensorBase):
  __slots__ = ()

  def conv2d(self, weight, bias=None, groups=1, stride=1, dilation=1, padding=0, dtype=None):
    """NCHW input, (out, in/groups, kH, kW) weight; also 1-D and 3-D (any spatial rank)."""
    x = self if dtype is None else self.cast(dtype)
    dims = max(weight.ndim - 2, 0)
    return self._wrap(x._t.conv2d(weight._t, raw(bias), per_axis(stride, dims, "stride"),
                                  pool_pads(padding, dims), per_axis(dilation, dims, "dilation"), groups))
  def conv_transpose2d(self, weight, bias=None, groups=1, stride=1, dilation=1, padding=0, output_padding=0):
    dims = max(weight.ndim - 2, 0)
    return self._wrap(self._t.conv_transpose2d(weight._t, raw(bias), per_axis(stride, dims, "stride"),
                                               pool_pads(padding, dims), per_axis(dilation, dims, "dilation"), groups,
                                               per_axis(output_padding, dims, "output_padding")))
  def _window(self, kernel_size, stride, dilation, padding, op="pool"):
    """A pool's kernel, stride, padding and dilation per spatial axis (as many axes as kernel sizes).
    A one-int padding is PyTorch's form: at most half of each kernel size."""
    k = make_tuple(kernel_size, 2)
    if isinstance(padding, int) and any(padding > ks // 2 for ks in k):
      raise _kiln.KilnError(f"{op}: padding {padding} is more than half the kernel size {min(k)} (at most {min(k) // 2})")
    return (list(k), per_axis(k if stride is None else stride, len(k), "stride"), pool_pads(padding, len(k)),
            per_axis(dilation, len(k), "dilation"))
  def max_pool2d(self, kernel_size=(2, 2), stride=None, dilation=1, padding=0, ceil_mode=False, return_indices=False):
    """With return_indices, also each maximum's index into the flattened spatial axes (int32)."""
    if return_indices:
      values, indices = self._t.max_pool2d_with_indices(*self._window(kernel_size, stride, dilation, padding, "max_pool2d"),
                                                        ceil_mode)
      return self._wrap(values), self._wrap(indices)
    return self._wrap(self._t.max_pool2d(*self._window(kernel_size, stride, dilation, padding, "max_pool2d"), ceil_mode))
  def max_unpool2d(self, indices, kernel_size=(2, 2), stride=None, dilation=1, padding=0, output_size=None):
    """Inverse of max_pool2d(return_indices=True): each value at its index, zeros elsewhere; any number
    of spatial axes (all but the first two)."""
    k = make_tuple(kernel_size, self.ndim - 2)
    return self._wrap(self._t.max_unpool2d(indices._t, list(k), per_axis(k if stride is None else stride, len(k), "stride"),
                                           pool_pads(padding, len(k)), per_axis(dilation, len(k), "dilation"),
                                           [] if output_size is None else list(output_size)))
  def interpolate(self, size, mode: str = "linear", align_corners: bool = False):
    """Resizes the last len(size) axes: 'linear' (bi-, trilinear for more axes), 'nearest' or 'nearest-exact'."""
    if not isinstance(size, (tuple, list)): raise TypeError(f"interpolate: size must be a tuple or list of ints, got {size!r}")
    return self._wrap(self._t.interpolate(list(size), mode, align_corners))
  def avg_pool2d(self, kernel_size=(2, 2), stride=None, dilation=1, padding=0, ceil_mode=False, count_include_pad=True):
    return self._wrap(self._t.avg_pool2d(*self._window(kernel_size, stride, dilation, padding, "avg_pool2d"), ceil_mode,
                                         count_include_pad))

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
  def newton_schulz(self, steps: int, params: tuple, eps: float = 1.0e-7):
    """`steps` iterations of G <- sum_i params[i] * (G G^T)^i G on the last two axes, from self scaled to
    Frobenius norm 1 (Muon's orthogonalization); a tall matrix goes through its transpose so G G^T is the
    smaller product."""
    if self.ndim < 2: raise ValueError(f"newton_schulz: expected a tensor of 2 or more dims, got shape {self.shape}")
    return self._wrap(self._t.newton_schulz(steps, list(params), eps))

  # ***** activations *****
  def gelu(self, approximate: str = "tanh"):
    """approximate="tanh" (tinygrad's default) or "none" (the exact form, with erf)."""
    return self._wrap(self._t.gelu(approximate))
  def hardsigmoid(self, alpha: float = 1/6, beta: float = 0.5): return self._wrap(self._t.hardsigmoid(alpha, beta))
  def softsign(self): return self._wrap(self._t.softsign())
  def celu(self, alpha: float = 1.0): return self._wrap(self._t.celu(alpha))
  def selu(self, alpha: float = 1.67326, gamma: float = 1.0507): return self._wrap(self._t.selu(alpha, gamma))
  def logsigmoid(self): return self._wrap(self._t.logsigmoid())
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

  # ***** losses: reduction='mean' (over the items that count), 'sum' or 'none' *****
  def sparse_categorical_crossentropy(self, Y, ignore_index: int = -1, label_smoothing: float = 0.0, reduction: str = "mean"):
    """self: logits (N, C); Y: class indices (N,), entries equal to ignore_index left out."""
    return self._wrap(self._t.sparse_categorical_crossentropy(Y._t, ignore_index, label_smoothing, _reduction(reduction)))
  def cross_entropy(self, Y, reduction: str = "mean", label_smoothing: float = 0.0):
    """self: logits; Y: class indices or probabilities."""
    return self._wrap(self._t.cross_entropy(Y._t, label_smoothing, _reduction(reduction)))
  def nll_loss(self, Y, weight=None, ignore_index: int | None = None, reduction: str = "mean"):
    """self: log-probabilities; weight: one per class."""
    return self._wrap(self._t.nll_loss(Y._t, -100 if ignore_index is None else ignore_index, _reduction(reduction),
                                       raw(weight)))
  def binary_crossentropy(self, Y, reduction: str = "mean"):
    """self: probabilities."""
    return self._wrap(self._t.binary_crossentropy(Y._t, _reduction(reduction)))
  def binary_crossentropy_logits(self, Y, reduction: str = "mean", pos_weight=None):
    return self._wrap(self._t.binary_crossentropy_logits(Y._t, _reduction(reduction), raw(pos_weight)))
