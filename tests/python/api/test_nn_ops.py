"""Tensor's neural-network ops (convolution, pooling, normalization, attention, losses, dropout)
forward and backward against PyTorch; tolerances as in reference.py unless stated."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from kiln import Tensor  # noqa: E402
from reference import check_op  # noqa: E402

# sums over channels and windows: float32 rounding grows with the number of terms
CONV_TOL = {"rtol": 1e-4, "atol": 1e-5}

@pytest.mark.parametrize("stride,padding,dilation,groups", [(1, 0, 1, 1), (2, 1, 1, 1), (1, 2, 2, 1), (2, 0, 1, 3), (3, 1, 2, 3)])
def test_conv2d(stride, padding, dilation, groups):
  check_op([(2, 6, 9, 7), (6, 6 // groups, 3, 2), (6,)],
           lambda x, w, b: F.conv2d(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups),
           lambda x, w, b: x.conv2d(w, b, groups=groups, stride=stride, dilation=dilation, padding=padding), **CONV_TOL)

def test_conv2d_tuple_arguments_and_no_bias():
  check_op([(1, 2, 5, 5), (3, 2, 3, 3)], lambda x, w: F.conv2d(x, w, padding=1, stride=2),
           lambda x, w: x.conv2d(w, padding=(1, 1), stride=(2, 2)), **CONV_TOL)

def test_conv1d_and_conv3d():
  check_op([(2, 3, 11), (4, 3, 3)], lambda x, w: F.conv1d(x, w, padding=1), lambda x, w: x.conv2d(w, padding=1), **CONV_TOL)
  check_op([(1, 2, 4, 5, 3), (2, 2, 2, 2, 2)], lambda x, w: F.conv3d(x, w), lambda x, w: x.conv2d(w), **CONV_TOL)

@pytest.mark.parametrize("stride,padding,output_padding,groups", [(1, 0, 0, 1), (2, 1, 1, 1), (3, 0, 2, 2)])
def test_conv_transpose2d(stride, padding, output_padding, groups):
  check_op([(2, 4, 5, 4), (4, 6 // groups, 3, 3), (6,)],
           lambda x, w, b: F.conv_transpose2d(x, w, b, stride=stride, padding=padding, output_padding=output_padding, groups=groups),
           lambda x, w, b: x.conv_transpose2d(w, b, groups=groups, stride=stride, padding=padding, output_padding=output_padding),
           **CONV_TOL)

@pytest.mark.parametrize("kernel,stride,padding,ceil_mode", [(2, None, 0, False), (3, 2, 1, False), (3, 2, 0, True), (2, 1, 0, False)])
def test_max_pool2d(kernel, stride, padding, ceil_mode):
  check_op([(2, 3, 7, 6)], lambda x: F.max_pool2d(x, kernel, stride, padding, ceil_mode=ceil_mode),
           lambda x: x.max_pool2d(kernel, stride, padding=padding, ceil_mode=ceil_mode))

@pytest.mark.parametrize("kernel,stride,padding,ceil_mode,count_include_pad", [(2, None, 0, False, True), (3, 2, 1, False, True),
                                                                             (3, 2, 1, False, False), (3, 2, 0, True, True)])
def test_avg_pool2d(kernel, stride, padding, ceil_mode, count_include_pad):
  check_op([(2, 3, 7, 6)], lambda x: F.avg_pool2d(x, kernel, stride, padding, ceil_mode, count_include_pad),
           lambda x: x.avg_pool2d(kernel, stride, padding=padding, ceil_mode=ceil_mode, count_include_pad=count_include_pad))

def test_pool_default_kernel_is_2x2():
  check_op([(1, 2, 6, 4)], lambda x: F.max_pool2d(x, 2), lambda x: x.max_pool2d())
  check_op([(1, 2, 6, 4)], lambda x: F.avg_pool2d(x, 2), lambda x: x.avg_pool2d())

def test_batchnorm_op():
  def torch_fn(x, w, b, mean, var): return (x - mean.reshape(1, -1, 1, 1)) * var.reshape(1, -1, 1, 1) * w.reshape(1, -1, 1, 1) + b.reshape(1, -1, 1, 1)
  check_op([(2, 3, 4, 5), (3,), (3,), (3,), (3,)], torch_fn, lambda x, w, b, mean, invstd: x.batchnorm(w, b, mean, invstd))

@pytest.mark.parametrize("axis", [-1, (-2, -1)])
def test_layernorm_op(axis):
  dims = (axis,) if isinstance(axis, int) else axis
  check_op([(2, 3, 6)], lambda x: F.layer_norm(x, x.shape[dims[0]:], eps=1e-5), lambda x: x.layernorm(axis), **CONV_TOL)

@pytest.mark.parametrize("is_causal,with_mask", [(False, False), (True, False), (False, True)])
def test_scaled_dot_product_attention(is_causal, with_mask):
  mask = np.random.default_rng(5).uniform(0, 1, (4, 6)) > 0.3
  def torch_fn(q, k, v):  # PyTorch 1.13 has no F.scaled_dot_product_attention
    scores = q @ k.transpose(-2, -1) / np.sqrt(q.shape[-1])
    if is_causal: scores = scores.masked_fill(~torch.ones(4, 6, dtype=torch.bool).tril(), float("-inf"))
    if with_mask: scores = scores.masked_fill(~torch.tensor(mask), float("-inf"))
    return scores.softmax(-1) @ v
  check_op([(2, 4, 8), (2, 6, 8), (2, 6, 5)], torch_fn,
           lambda q, k, v: q.scaled_dot_product_attention(k, v, Tensor(mask) if with_mask else None, is_causal=is_causal),
           rtol=2e-5)

def test_losses():
  labels = np.array([2, 0, 4, 1, 4], dtype=np.int32)
  check_op([(5, 6)], lambda x: F.cross_entropy(x, torch.tensor(labels).long()),
           lambda x: x.sparse_categorical_crossentropy(Tensor(labels)))
  check_op([(5, 6)], lambda x: F.cross_entropy(x, torch.tensor(labels).long(), label_smoothing=0.2),
           lambda x: x.sparse_categorical_crossentropy(Tensor(labels), label_smoothing=0.2))
  check_op([(5, 6)], lambda x: F.cross_entropy(x, torch.tensor(labels).long(), ignore_index=4),
           lambda x: x.sparse_categorical_crossentropy(Tensor(labels), ignore_index=4))
  check_op([(5, 6)], lambda x: F.cross_entropy(x, torch.tensor(labels).long()), lambda x: x.cross_entropy(Tensor(labels)))
  check_op([(5, 6), (5, 6)], lambda x, p: F.cross_entropy(x, p.softmax(-1)), lambda x, p: x.cross_entropy(p.softmax(-1)))
  check_op([(5, 6)], lambda x: F.nll_loss(x.log_softmax(-1), torch.tensor(labels).long()),
           lambda x: x.log_softmax(-1).nll_loss(Tensor(labels)))
  check_op([(4, 3), (4, 3)], lambda x, y: F.binary_cross_entropy(x, y), lambda x, y: x.binary_crossentropy(y), low=0.05, high=0.95)
  check_op([(4, 3), (4, 3)], lambda x, y: F.binary_cross_entropy_with_logits(x, y.sigmoid()),
           lambda x, y: x.binary_crossentropy_logits(y.sigmoid()))

def test_dropout_only_while_training():
  x = Tensor.ones(1000)
  assert (x.dropout(0.5).numpy() == 1).all()  # Tensor.training is off
  with Tensor.train():
    y = x.dropout(0.25).numpy()
  kept = y != 0
  assert 0.65 < kept.mean() < 0.85
  np.testing.assert_allclose(y[kept], 1 / 0.75, rtol=1e-6)
