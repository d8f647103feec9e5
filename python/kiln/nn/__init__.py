"""nn layers, as tinygrad's: the C++ layers (kiln::nn) under tinygrad's names, constructor
arguments and attribute names. Parameters require gradients from creation; a layer's tensors are
read and assigned as attributes (`layer.weight`), and belong to the C++ layer, so C++ and Python
see one tensor."""
from __future__ import annotations
import copy
from kiln._core import _kiln
from kiln.helpers import make_tuple, prod
from kiln.tensor import Tensor

def _one_size(kernel_size, *sizes) -> bool:
  """Whether a conv layer's sizes are one int for every axis of a 2-D kernel: the C++ layer's form."""
  k = make_tuple(kernel_size, 2)
  return len(k) == 2 and k[0] == k[1] and all(isinstance(s, int) for s in sizes)

def conv_padding(padding, kernel_size: tuple[int, ...], stride, dilation):
  """A conv layer's padding, with the strings PyTorch accepts resolved: 'valid' is none, 'same' keeps a
  stride-1 output the input's size; an odd total padding puts the extra pixel on the right (bottom),
  as PyTorch. The result is flat, (left, right, top, bottom), as Tensor.conv2d takes it."""
  if not isinstance(padding, str): return padding
  if padding.lower() == "valid": return 0
  if padding.lower() != "same": raise ValueError(f"Invalid padding string {padding!r}, only 'same' and 'valid' are supported")
  if any(s != 1 for s in make_tuple(stride, len(kernel_size))):
    raise ValueError(f"padding='same' is not supported for strided convolutions, got stride={stride}")
  total = [d * (k - 1) for d, k in zip(make_tuple(dilation, len(kernel_size)), kernel_size)]
  return tuple(p for t in reversed(total) for p in (t // 2, t - t // 2))

def layer_tensor(t: _kiln.Tensor) -> Tensor:
  """A layer's tensor: a parameter, or state that is explicitly not one (running statistics), so
  an optimizer given it keeps it up to date instead of training it (tinygrad's buffers)."""
  return Tensor._wrap(t, None if t.requires_grad else False)

class Layer:
  """A C++ layer: calling it runs the C++ forward pass; attributes are the C++ layer's, with its
  tensors seen as Tensors. Python subclasses may add attributes of their own."""
  __slots__ = ("_layer",)

  def __init__(self, layer): object.__setattr__(self, "_layer", layer)
  def _state_dict(self) -> dict[str, _kiln.Tensor]:
    """The C++ layer's tensors (a sorted map) in the order its binding declares them: tinygrad's
    attribute order (weight before bias)."""
    rank: dict[str, int] = {}
    for cls in reversed(type(self._layer).__mro__):  # a base layer's attributes first
      for name in cls.__dict__: rank.setdefault(name, len(rank))
    return dict(sorted(self._layer.state_dict().items(), key=lambda kv: rank.get(kv[0], len(rank))))
  def __deepcopy__(self, memo):
    """A layer holding copies of this one's tensors (and of a Python subclass's attributes)."""
    out = memo[id(self)] = object.__new__(type(self))
    object.__setattr__(out, "_layer", self._layer.__copy__())  # shares the tensors until replaced below
    for name, t in self._state_dict().items(): setattr(out._layer, name, copy.deepcopy(layer_tensor(t), memo)._t)
    if hasattr(self, "__dict__"): out.__dict__.update(copy.deepcopy(self.__dict__, memo))
    return out
  def __call__(self, x: Tensor) -> Tensor: return Tensor._wrap(self._layer(x._t))
  def __getattr__(self, name: str):
    if name == "_layer": raise AttributeError(name)  # not constructed yet
    value = getattr(self._layer, name)
    return layer_tensor(value) if isinstance(value, _kiln.Tensor) else value
  def __setattr__(self, name: str, value):
    if not hasattr(self._layer, name): return object.__setattr__(self, name, value)
    setattr(self._layer, name, value._t if isinstance(value, Tensor) else value)

class Linear(Layer):
  """y = x @ weight.T + bias; weight (out_features, in_features)."""
  def __init__(self, in_features: int, out_features: int, bias: bool = True):
    super().__init__(_kiln.nn.Linear(in_features, out_features, bias))

class PerAxisConv(Layer):
  """A convolution layer whose sizes differ per spatial axis (or whose kernel is not 2-D): the C++
  layer holds its weight, created here in the kernel's shape, and the forward pass is the Tensor op
  with tinygrad's attributes (kernel_size as a tuple, the other sizes as given). Only such layers
  have a Python kernel_size attribute: the others run the C++ layer."""
  def _per_axis(self, weight_shape: tuple, bias_features: int | None, fan_in: int, **sizes):
    bound = 1 / fan_in ** 0.5  # as the C++ layers: uniform in +-1/sqrt(fan_in)
    self.weight = Tensor.uniform(*weight_shape, low=-bound, high=bound, requires_grad=True)
    if bias_features: self.bias = Tensor.uniform(bias_features, low=-bound, high=bound, requires_grad=True)
    for name, value in sizes.items(): object.__setattr__(self, name, value)

class Conv2d(PerAxisConv):
  """NCHW convolution; weight (out_channels, in_channels/groups, *kernel_size). Sizes are an int or
  one per spatial axis; padding may also be flat, (left, right, top, bottom)."""
  def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1, groups=1,
               bias: bool = True):
    padding = conv_padding(padding, make_tuple(kernel_size, 2), stride, dilation)
    if _one_size(kernel_size, stride, padding, dilation):
      super().__init__(_kiln.nn.Conv2d(in_channels, out_channels, make_tuple(kernel_size, 2)[0], stride, padding, bias,
                                       dilation, groups))
      return
    k = make_tuple(kernel_size, 2)
    super().__init__(_kiln.nn.Conv2d(in_channels, out_channels, 1, 1, 0, bias, 1, groups))
    self._per_axis((out_channels, in_channels // groups, *k), out_channels if bias else None,
                   in_channels // groups * prod(k), kernel_size=k, stride=stride, padding=padding, dilation=dilation)
  def __call__(self, x: Tensor) -> Tensor:
    if "kernel_size" not in self.__dict__: return super().__call__(x)
    return x.conv2d(self.weight, self.bias, self.groups, self.stride, self.dilation, self.padding)

def Conv1d(in_channels: int, out_channels: int, kernel_size: int, stride=1, padding=0, dilation=1, groups=1,
           bias: bool = True) -> Conv2d:
  """(N, C, L) convolution: as tinygrad's, a Conv2d with a one-axis kernel."""
  return Conv2d(in_channels, out_channels, (kernel_size,), stride, padding, dilation, groups, bias)

class ConvTranspose2d(PerAxisConv):
  """Weight (in_channels, out_channels/groups, *kernel_size); sizes as Conv2d's."""
  def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0, dilation=1,
               groups=1, bias: bool = True):
    if _one_size(kernel_size, stride, padding, output_padding, dilation):
      super().__init__(_kiln.nn.ConvTranspose2d(in_channels, out_channels, make_tuple(kernel_size, 2)[0], stride, padding,
                                                output_padding, bias, dilation, groups))
      return
    k = make_tuple(kernel_size, 2)
    super().__init__(_kiln.nn.ConvTranspose2d(in_channels, out_channels, 1, 1, 0, 0, bias, 1, groups))
    self._per_axis((in_channels, out_channels // groups, *k), out_channels if bias else None,
                   out_channels // groups * prod(k), kernel_size=k, stride=stride, padding=padding,
                   output_padding=output_padding, dilation=dilation)
  def __call__(self, x: Tensor) -> Tensor:
    if "kernel_size" not in self.__dict__: return super().__call__(x)
    return x.conv_transpose2d(self.weight, self.bias, self.groups, self.stride, self.dilation, self.padding,
                              self.output_padding)

def ConvTranspose1d(in_channels: int, out_channels: int, kernel_size: int, stride=1, padding=0, output_padding=0,
                    dilation=1, groups=1, bias: bool = True) -> ConvTranspose2d:
  return ConvTranspose2d(in_channels, out_channels, (kernel_size,), stride, padding, output_padding, dilation, groups,
                         bias)

class BatchNorm(Layer):
  """Normalizes axis 1 of (N, C, ...): batch statistics while Tensor.training (updating the running
  statistics), the running statistics otherwise."""
  def __init__(self, sz: int, eps=1e-5, affine=True, track_running_stats=True, momentum=0.1):
    super().__init__(_kiln.nn.BatchNorm(sz, eps, momentum, affine, track_running_stats))
BatchNorm2d = BatchNorm3d = BatchNorm

class LayerNorm(Layer):
  _make = _kiln.nn.LayerNorm
  def __init__(self, normalized_shape: int | tuple[int, ...], eps=1e-5, elementwise_affine=True):
    shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    super().__init__(self._make(shape, eps, elementwise_affine))

class LayerNorm2d(LayerNorm):
  """LayerNorm over the channel axis of (N, C, H, W) inputs."""
  _make = _kiln.nn.LayerNorm2d

class GroupNorm(Layer):
  def __init__(self, num_groups: int, num_channels: int, eps=1e-5, affine=True):
    super().__init__(_kiln.nn.GroupNorm(num_groups, num_channels, eps, affine))

class InstanceNorm(Layer):
  """Normalizes each sample's channel of (N, C, ...) over its other axes (a GroupNorm of a group per channel)."""
  def __init__(self, num_features: int, eps=1e-5, affine=True):
    super().__init__(_kiln.nn.InstanceNorm(num_features, eps, affine))
  @property
  def num_features(self) -> int: return self.num_channels

class LSTMCell(Layer):
  """One LSTM step: x (N, input_size) and the previous (h, c) (zeros when None) give the next (h, c)."""
  def __init__(self, input_size: int, hidden_size: int, bias: bool = True):
    super().__init__(_kiln.nn.LSTMCell(input_size, hidden_size, bias))
  def __call__(self, x: Tensor, hc: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
    h, c = self._layer(x._t, None if hc is None else (hc[0]._t, hc[1]._t))
    return Tensor._wrap(h), Tensor._wrap(c)

class RMSNorm(Layer):
  def __init__(self, dim: int, eps=1e-6, elementwise_affine=True):
    super().__init__(_kiln.nn.RMSNorm(dim, eps, elementwise_affine))

class Embedding(Layer):
  """Integer indices (...) -> rows of weight (..., embed_size)."""
  def __init__(self, vocab_size: int, embed_size: int):
    super().__init__(_kiln.nn.Embedding(vocab_size, embed_size))

# kiln.nn.optim, kiln.nn.state and kiln.nn.datasets, as tinygrad's (after Layer: state uses it)
from kiln.nn import datasets, optim, state  # noqa: E402,F401
