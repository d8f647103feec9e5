"""nn layers, as tinygrad's: the C++ layers (kiln::nn) under tinygrad's names, constructor
arguments and attribute names. Parameters require gradients from creation; a layer's tensors are
read and assigned as attributes (`layer.weight`), and belong to the C++ layer, so C++ and Python
see one tensor."""
from __future__ import annotations
from kiln._core import _kiln
from kiln.tensor import Tensor

def _one(x, what: str) -> int:
  if isinstance(x, int): return x
  if len(set(x)) != 1: raise NotImplementedError(f"{what}={tuple(x)}: different sizes per axis are not supported yet")
  return x[0]

def layer_tensor(t: _kiln.Tensor) -> Tensor:
  """A layer's tensor: a parameter, or state that is explicitly not one (running statistics), so
  an optimizer given it keeps it up to date instead of training it (tinygrad's buffers)."""
  return Tensor._wrap(t, None if t.requires_grad else False)

class Layer:
  """A C++ layer: calling it runs the C++ forward pass; attributes are the C++ layer's, with its
  tensors seen as Tensors. Python subclasses may add attributes of their own."""
  __slots__ = ("_layer",)

  def __init__(self, layer): object.__setattr__(self, "_layer", layer)
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

class Conv2d(Layer):
  """NCHW convolution; weight (out_channels, in_channels/groups, k, k)."""
  def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1, groups=1,
               bias: bool = True):
    super().__init__(_kiln.nn.Conv2d(in_channels, out_channels, _one(kernel_size, "kernel_size"), _one(stride, "stride"),
                                     _one(padding, "padding"), bias, _one(dilation, "dilation"), groups))

class ConvTranspose2d(Layer):
  def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0, dilation=1,
               groups=1, bias: bool = True):
    super().__init__(_kiln.nn.ConvTranspose2d(in_channels, out_channels, _one(kernel_size, "kernel_size"),
                                              _one(stride, "stride"), _one(padding, "padding"),
                                              _one(output_padding, "output_padding"), bias, _one(dilation, "dilation"), groups))

class BatchNorm(Layer):
  """Normalizes axis 1 of (N, C, ...): batch statistics while Tensor.training (updating the running
  statistics), the running statistics otherwise."""
  def __init__(self, sz: int, eps=1e-5, affine=True, track_running_stats=True, momentum=0.1):
    super().__init__(_kiln.nn.BatchNorm(sz, eps, momentum, affine, track_running_stats))
BatchNorm2d = BatchNorm3d = BatchNorm

class LayerNorm(Layer):
  def __init__(self, normalized_shape: int | tuple[int, ...], eps=1e-5, elementwise_affine=True):
    shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    super().__init__(_kiln.nn.LayerNorm(shape, eps, elementwise_affine))

class GroupNorm(Layer):
  def __init__(self, num_groups: int, num_channels: int, eps=1e-5, affine=True):
    super().__init__(_kiln.nn.GroupNorm(num_groups, num_channels, eps, affine))

class RMSNorm(Layer):
  def __init__(self, dim: int, eps=1e-6, elementwise_affine=True):
    super().__init__(_kiln.nn.RMSNorm(dim, eps, elementwise_affine))

class Embedding(Layer):
  """Integer indices (...) -> rows of weight (..., embed_size)."""
  def __init__(self, vocab_size: int, embed_size: int):
    super().__init__(_kiln.nn.Embedding(vocab_size, embed_size))

# kiln.nn.optim, kiln.nn.state and kiln.nn.datasets, as tinygrad's (after Layer: state uses it)
from kiln.nn import datasets, optim, state  # noqa: E402,F401
