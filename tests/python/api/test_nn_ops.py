"""Tensor's neural-network ops (convolution, pooling, normalization, attention, losses, dropout)
forward and backward against PyTorch; tolerances as in reference.py unless stated."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from kiln import Tensor, dtypes  # noqa: E402
from kiln.helpers import make_tuple  # noqa: E402
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

# per spatial axis: sizes that differ between the axes; a 4-tuple padding is flat, (left, right, top, bottom)
@pytest.mark.parametrize("stride,padding,dilation", [((2, 1), (1, 0), (1, 2)), ((1, 3), (0, 2, 1, 0), (2, 1)),
                                                     (1, (2, 1, 0, 1), 1)])
def test_conv2d_per_axis(stride, padding, dilation):
  def torch_fn(x, w, b):
    if len(make_tuple(padding, 2)) == 4: x, pad = F.pad(x, padding), 0
    else: pad = padding
    return F.conv2d(x, w, b, stride=stride, padding=pad, dilation=dilation, groups=2)
  check_op([(2, 4, 9, 8), (6, 2, 3, 2), (6,)], torch_fn,
           lambda x, w, b: x.conv2d(w, b, groups=2, stride=stride, dilation=dilation, padding=padding), **CONV_TOL)

def test_conv1d_and_conv3d_per_axis():
  check_op([(1, 2, 5, 6, 7), (3, 2, 2, 3, 1)], lambda x, w: F.conv3d(x, w, stride=(1, 2, 3), padding=(1, 0, 2), dilation=(2, 1, 1)),
           lambda x, w: x.conv2d(w, stride=(1, 2, 3), padding=(1, 0, 2), dilation=(2, 1, 1)), **CONV_TOL)
  check_op([(2, 3, 11), (4, 3, 3)], lambda x, w: F.conv1d(x, w, stride=(2,), padding=(1,)),
           lambda x, w: x.conv2d(w, stride=(2,), padding=(1,)), **CONV_TOL)

def test_conv_transpose2d_per_axis():
  check_op([(2, 4, 5, 4), (4, 3, 3, 2), (6,)],
           lambda x, w, b: F.conv_transpose2d(x, w, b, stride=(2, 3), padding=(1, 0), output_padding=(1, 2), groups=2,
                                              dilation=(1, 2)),
           lambda x, w, b: x.conv_transpose2d(w, b, groups=2, stride=(2, 3), padding=(1, 0), output_padding=(1, 2),
                                              dilation=(1, 2)), **CONV_TOL)

@pytest.mark.parametrize("kernel,stride,padding,dilation,ceil_mode", [((3, 2), None, 0, 1, False), ((3, 2), (1, 2), (1, 0), (1, 2), False),
                                                                      ((2, 3), (2, 1), (1, 1), 1, True), ((3, 3), (2, 3), (0, 1), (2, 1), True)])
def test_max_pool2d_per_axis(kernel, stride, padding, dilation, ceil_mode):
  check_op([(2, 3, 9, 8)], lambda x: F.max_pool2d(x, kernel, stride, padding, dilation=dilation, ceil_mode=ceil_mode),
           lambda x: x.max_pool2d(kernel, stride, dilation, padding, ceil_mode))

@pytest.mark.parametrize("kernel,stride,padding,dilation,ceil_mode", [((2, 2), None, 0, 1, False), ((3, 2), (1, 2), (1, 0), (1, 2), False),
                                                                      ((3, 3), (2, 2), (1, 1), 1, True)])
def test_max_pool2d_return_indices(kernel, stride, padding, dilation, ceil_mode):
  # random values, then ties (the first maximum wins) and NaNs (the NaN is the maximum)
  x = np.random.default_rng(5).standard_normal((2, 3, 9, 8)).astype(np.float32)
  ties = np.round(x).clip(-1, 1)
  nans = x.copy()
  nans[0, 1, 2:4, 3] = np.nan
  for data in (x, ties, nans):
    want, want_idx = F.max_pool2d(torch.tensor(data), kernel, stride, padding, dilation=dilation, ceil_mode=ceil_mode,
                                  return_indices=True)
    got, got_idx = Tensor(data).max_pool2d(kernel, stride, dilation, padding, ceil_mode, return_indices=True)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    np.testing.assert_array_equal(got_idx.numpy(), want_idx.numpy())
    assert got_idx.dtype == dtypes.int32

@pytest.mark.parametrize("kernel,stride,padding,ceil_mode,count_include_pad", [((3, 2), None, 0, False, True),
                                                                               ((3, 2), (2, 1), (1, 0), False, False),
                                                                               ((2, 3), (1, 2), (1, 1), True, True)])
def test_avg_pool2d_per_axis(kernel, stride, padding, ceil_mode, count_include_pad):
  check_op([(2, 3, 7, 8)], lambda x: F.avg_pool2d(x, kernel, stride, padding, ceil_mode, count_include_pad),
           lambda x: x.avg_pool2d(kernel, stride, 1, padding, ceil_mode, count_include_pad))

def test_pool_flat_padding_is_left_right_top_bottom():
  # PyTorch pools pad symmetrically: pad explicitly (-inf for max, zeros counted for avg) and pool
  check_op([(1, 2, 6, 7)], lambda x: F.max_pool2d(F.pad(x, (1, 0, 2, 1), value=float("-inf")), (3, 2), (2, 2)),
           lambda x: x.max_pool2d((3, 2), (2, 2), padding=(1, 0, 2, 1)))
  check_op([(1, 2, 6, 7)], lambda x: F.avg_pool2d(F.pad(x, (0, 1, 1, 0)), (2, 3)),
           lambda x: x.avg_pool2d((2, 3), padding=(0, 1, 1, 0)))

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

@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_loss_reductions(reduction):
  labels = np.array([2, 0, 4, 1, 4], dtype=np.int32)
  y = torch.tensor(labels).long()
  check_op([(5, 6)], lambda x: F.cross_entropy(x, y, reduction=reduction, label_smoothing=0.1),
           lambda x: x.sparse_categorical_crossentropy(Tensor(labels), label_smoothing=0.1, reduction=reduction))
  check_op([(5, 6)], lambda x: F.cross_entropy(x, y, ignore_index=4, reduction=reduction),
           lambda x: x.sparse_categorical_crossentropy(Tensor(labels), ignore_index=4, reduction=reduction))
  check_op([(5, 6)], lambda x: F.cross_entropy(x, y, reduction=reduction, label_smoothing=0.3),
           lambda x: x.cross_entropy(Tensor(labels), reduction=reduction, label_smoothing=0.3))
  check_op([(5, 6), (5, 6)], lambda x, p: F.cross_entropy(x, p.softmax(-1), reduction=reduction),
           lambda x, p: x.cross_entropy(p.softmax(-1), reduction=reduction))
  check_op([(5, 6)], lambda x: F.nll_loss(x.log_softmax(-1), y, reduction=reduction),
           lambda x: x.log_softmax(-1).nll_loss(Tensor(labels), reduction=reduction))
  check_op([(4, 3), (4, 3)], lambda x, t: F.binary_cross_entropy(x, t, reduction=reduction),
           lambda x, t: x.binary_crossentropy(t, reduction=reduction), low=0.05, high=0.95)
  check_op([(4, 3), (4, 3)], lambda x, t: F.binary_cross_entropy_with_logits(x, t.sigmoid(), reduction=reduction),
           lambda x, t: x.binary_crossentropy_logits(t.sigmoid(), reduction=reduction))

@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_weight_and_ignore_index(reduction):
  labels = np.array([[2, 0, 3], [1, 3, 3]], dtype=np.int32)  # (N, d1): input (N, C, d1)
  weight = np.array([0.5, 2.0, 1.0, 0.25], dtype=np.float32)
  y, w = torch.tensor(labels).long(), torch.tensor(weight)
  check_op([(2, 4, 3)], lambda x: F.nll_loss(x.log_softmax(1), y, weight=w, ignore_index=3, reduction=reduction),
           lambda x: x.log_softmax(1).nll_loss(Tensor(labels), Tensor(weight), ignore_index=3, reduction=reduction))
  check_op([(2, 4, 3)], lambda x: F.nll_loss(x.log_softmax(1), y, weight=w, reduction=reduction),
           lambda x: x.log_softmax(1).nll_loss(Tensor(labels), Tensor(weight), reduction=reduction))

def test_binary_crossentropy_logits_pos_weight():
  pos_weight = np.array([0.5, 3.0, 1.5], dtype=np.float32)
  check_op([(4, 3), (4, 3)],
           lambda x, t: F.binary_cross_entropy_with_logits(x, t.sigmoid(), pos_weight=torch.tensor(pos_weight)),
           lambda x, t: x.binary_crossentropy_logits(t.sigmoid(), pos_weight=Tensor(pos_weight)))

def test_dropout_only_while_training():
  x = Tensor.ones(1000)
  assert (x.dropout(0.5).numpy() == 1).all()  # Tensor.training is off
  with Tensor.train():
    y = x.dropout(0.25).numpy()
  kept = y != 0
  assert 0.65 < kept.mean() < 0.85
  np.testing.assert_allclose(y[kept], 1 / 0.75, rtol=1e-6)
