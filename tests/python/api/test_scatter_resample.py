"""scatter_reduce / scatter(reduce=), masked_select, nonzero, interpolate, max_unpool2d, nn.Conv1d /
nn.ConvTranspose1d, einsum diagonals and assignment into an empty slice, against PyTorch and NumPy
(forward and backward); tolerances as in reference.py unless stated."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from kiln import Tensor, dtypes, nn  # noqa: E402
from kiln._core import _kiln  # noqa: E402
from kiln.helpers import make_tuple  # noqa: E402
from reference import check_op  # noqa: E402

# ***** scatter_reduce and scatter(reduce=) *****

@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
# (src as large as index: older PyTorch fails the backward of a larger one; test_scatter_select.cpp covers it)
@pytest.mark.parametrize("dim,shapes", [(0, ((4, 5), (6, 5), (6, 5))), (1, ((3, 4), (3, 7), (3, 7))), (-1, ((2, 3, 5), (2, 3, 9), (2, 3, 9)))])
def test_scatter_reduce(reduce, include_self, dim, shapes):
  self_shape, index_shape, src_shape = shapes
  index = np.random.default_rng(3).integers(0, self_shape[dim], index_shape)
  check_op([self_shape, src_shape],
           lambda x, s: x.scatter_reduce(dim, torch.tensor(index), s, reduce, include_self=include_self),
           lambda x, s: x.scatter_reduce(dim, Tensor(index.astype(np.int32)), s, reduce, include_self=include_self),
           low=0.5, high=2.0, rtol=1e-5, atol=1e-5)

@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce_integers(reduce):
  x = np.arange(1, 11, dtype=np.int32).reshape(2, 5)
  index = np.array([[0, 0, 4, 4, 4], [1, 1, 1, 0, 3]])
  src = np.array([[7, -3, 5, 2, 9], [4, 4, -8, 6, 1]], dtype=np.int32)
  for include_self in (True, False):
    want = torch.tensor(x).scatter_reduce(1, torch.tensor(index), torch.tensor(src), reduce, include_self=include_self)
    got = Tensor(x).scatter_reduce(1, Tensor(index), Tensor(src), reduce, include_self=include_self)
    assert got.dtype == dtypes.int32
    np.testing.assert_array_equal(got.numpy(), want.numpy())

def test_scatter_with_reduce_argument():
  # tinygrad's docstring examples, against PyTorch
  x = np.full((2, 4), 2.0, dtype=np.float32)
  index = np.array([[2], [3]])
  for reduce in ("multiply", "add"):
    want = torch.tensor(x).scatter(1, torch.tensor(index), 1.23, reduce=reduce)
    np.testing.assert_allclose(Tensor(x).scatter(1, Tensor(index), 1.23, reduce=reduce).numpy(), want.numpy(), rtol=1e-6)
  # a tensor src with reduce= is a TypeError, as tinygrad's (PyTorch takes it): scatter_reduce is the way
  with pytest.raises(TypeError, match="use scatter_reduce"): Tensor(x).scatter(1, Tensor(index), Tensor(x), reduce="add")

def test_scatter_reduce_errors():
  x, idx = Tensor.zeros(3, 4), Tensor.zeros(2, 4, dtype=dtypes.int32)
  with pytest.raises(_kiln.KilnError, match="reduce must be 'sum', 'prod', 'mean', 'amax' or 'amin', got 'max'"):
    x.scatter_reduce(0, idx, Tensor.ones(2, 4), "max")
  with pytest.raises(TypeError, match="reduce must be 'add' or 'multiply'"): x.scatter(0, idx, 1.0, reduce="sum")
  with pytest.raises(_kiln.KilnError, match="reduce must be 'add' or 'multiply'"): x.scatter(0, idx, 1.0, reduce="sum")
  with pytest.raises(_kiln.KilnError, match="src is int32 but the input is float32"):
    x.scatter_reduce(0, idx, Tensor.ones(2, 4, dtype=dtypes.int32), "sum")

# ***** masked_select and nonzero *****

@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4), (1,)])
def test_masked_select(shape):
  mask = np.random.default_rng(5).integers(0, 2, shape).astype(bool)
  check_op([shape], lambda x: x.masked_select(torch.tensor(mask)), lambda x: x.masked_select(Tensor(mask)))

def test_masked_select_broadcast_size_and_errors():
  x = np.arange(12, dtype=np.float32).reshape(3, 4)
  row = np.array([True, False, True, True])
  np.testing.assert_array_equal(Tensor(x).masked_select(Tensor(row)).numpy(), torch.tensor(x).masked_select(torch.tensor(row)).numpy())
  mask = x % 5 == 0
  selected = x[mask]
  np.testing.assert_array_equal(Tensor(x).masked_select(Tensor(mask), size=5, fill_value=-1).numpy(),
                                np.concatenate([selected, [-1, -1]]))
  np.testing.assert_array_equal(Tensor(x).masked_select(Tensor(mask), size=2).numpy(), selected[:2])
  assert Tensor(x).masked_select(Tensor(np.zeros((3, 4), bool))).shape == (0,)
  with pytest.raises(_kiln.KilnError, match="expected a bool mask, got int32"): Tensor(x).masked_select(Tensor([[1]]))

@pytest.mark.parametrize("shape", [(9,), (3, 5), (2, 3, 4)])
def test_nonzero(shape):
  x = np.maximum(np.random.default_rng(7).integers(-2, 3, shape), 0).astype(np.float32)
  want = torch.tensor(x).nonzero().numpy()
  got = Tensor(x).nonzero()
  assert got.dtype == dtypes.int32
  np.testing.assert_array_equal(got.numpy(), want)
  padded = Tensor(x).nonzero(size=len(want) + 2, fill_value=-1).numpy()
  np.testing.assert_array_equal(padded, np.concatenate([want, np.full((2, len(shape)), -1)]))
  # tinygrad's docstring example
  np.testing.assert_array_equal(Tensor([[1, 0], [0, 2]]).nonzero(size=3, fill_value=-1).numpy(), [[0, 0], [1, 1], [-1, -1]])

# ***** interpolate and max_unpool2d *****

@pytest.mark.parametrize("shape,size", [((1, 2, 7), (3,)), ((1, 2, 5), (12,)), ((2, 3, 5, 4), (7, 9)), ((1, 1, 6, 6), (3, 2)),
                                        ((1, 2, 3, 4, 5), (5, 3, 7)), ((1, 1, 4), (1,))])
@pytest.mark.parametrize("mode,align_corners", [("linear", False), ("linear", True), ("nearest", False), ("nearest-exact", False)])
def test_interpolate(shape, size, mode, align_corners):
  torch_mode = {1: "linear", 2: "bilinear", 3: "trilinear"}[len(size)] if mode == "linear" else mode
  kw = {"align_corners": align_corners} if mode == "linear" else {}
  check_op([shape], lambda x: F.interpolate(x, size=size, mode=torch_mode, **kw),
           lambda x: x.interpolate(size, mode=mode, align_corners=align_corners), rtol=1e-5, atol=1e-5)

def test_interpolate_docstring_and_errors():
  t = Tensor([[1, 2, 3, 4], [21, 22, 23, 24], [41, 42, 43, 44]])
  # tinygrad's docstring example: integers interpolate, then truncate to int
  want = F.interpolate(torch.tensor(t.numpy(), dtype=torch.float32)[None, None], size=(2, 3), mode="bilinear")[0, 0]
  np.testing.assert_array_equal(t.interpolate(size=(2, 3)).numpy(), want.numpy().astype(np.int32))
  with pytest.raises(_kiln.KilnError, match="mode must be 'linear', 'nearest' or 'nearest-exact', got 'bicubic'"):
    t.interpolate((2, 2), mode="bicubic")
  with pytest.raises(_kiln.KilnError, match="align_corners is only for mode 'linear'"): t.interpolate((2, 2), "nearest", True)
  with pytest.raises(TypeError, match="size must be a tuple or list"): t.interpolate(3)

@pytest.mark.parametrize("shape,kernel,stride,padding,output_size", [((1, 1, 4, 4), 2, None, 0, None), ((2, 3, 5, 5), 2, 2, 0, (5, 5)),
                                                                    ((1, 2, 7, 6), 3, 2, 1, (7, 6)), ((1, 1, 6, 7), (2, 3), (2, 1), 0, None)])
def test_max_unpool2d(shape, kernel, stride, padding, output_size):
  x = np.random.default_rng(9).uniform(-2, 2, shape).astype(np.float32)
  pooled, indices = F.max_pool2d(torch.tensor(x), kernel, stride, padding, return_indices=True)
  kv, ki = Tensor(x).max_pool2d(kernel, stride, padding=padding, return_indices=True)
  np.testing.assert_array_equal(ki.numpy(), indices.numpy())
  check_op([], lambda v: F.max_unpool2d(v, indices, kernel, stride, padding, output_size),
           lambda v: v.max_unpool2d(ki, kernel, stride, padding=padding, output_size=output_size), vals=[pooled.numpy()],
           forward_only=make_tuple(kernel, 2) > make_tuple(stride or kernel, 2))  # overlapping: ties, see test_resample.cpp

def test_max_unpool2d_docstring():
  t = Tensor.arange(1, 17).reshape(1, 1, 4, 4)
  output, indices = Tensor.max_pool2d(t, return_indices=True)
  pooled, torch_indices = F.max_pool2d(torch.arange(1, 17.).reshape(1, 1, 4, 4), 2, return_indices=True)
  want = F.max_unpool2d(pooled, torch_indices, 2)
  np.testing.assert_array_equal(Tensor.max_unpool2d(output, indices).numpy(), want.numpy())

# ***** 1-D convolution layers *****

def test_conv1d_layers_match_torch():
  x = np.random.default_rng(11).uniform(-1, 1, (2, 4, 13)).astype(np.float32)
  conv = nn.Conv1d(4, 6, 3, stride=2, padding=1, dilation=2, groups=2)
  assert conv.weight.shape == (6, 2, 3) and conv.kernel_size == (3,)
  ref = torch.nn.Conv1d(4, 6, 3, stride=2, padding=1, dilation=2, groups=2)
  ref.weight.data, ref.bias.data = torch.tensor(conv.weight.numpy()), torch.tensor(conv.bias.numpy())
  np.testing.assert_allclose(conv(Tensor(x)).numpy(), ref(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-5)
  up = nn.ConvTranspose1d(4, 3, 4, stride=3, padding=1, output_padding=1, bias=False)
  assert up.weight.shape == (4, 3, 4) and up.bias is None
  ref_up = torch.nn.ConvTranspose1d(4, 3, 4, stride=3, padding=1, output_padding=1, bias=False)
  ref_up.weight.data = torch.tensor(up.weight.numpy())
  np.testing.assert_allclose(up(Tensor(x)).numpy(), ref_up(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-5)
  assert set(nn.state.get_state_dict(conv)) == {"weight", "bias"}

# ***** einsum diagonals *****

@pytest.mark.parametrize("formula,shapes", [("ii->", [(4, 4)]), ("ii", [(3, 3)]), ("ii->i", [(5, 5)]), ("iij->j", [(3, 3, 2)]),
                                            ("jii->ij", [(2, 3, 3)]), ("iji->ji", [(3, 2, 3)]), ("ii,ij->j", [(3, 3), (3, 4)]),
                                            ("bii->bi", [(2, 4, 4)])])
def test_einsum_diagonals(formula, shapes):
  check_op(shapes, lambda *xs: torch.einsum(formula, *xs), lambda *xs: Tensor.einsum(formula, *xs))

# ***** setitem into an empty selection *****

def test_setitem_empty_slice_is_a_no_op():
  for index, value in [(slice(2, 1), 5), ((slice(None), slice(3, 3)), 7.5), (slice(4, 2), np.float32(1))]:
    want = np.arange(12, dtype=np.float32).reshape(4, 3)
    want[index] = value
    t = Tensor(np.arange(12, dtype=np.float32).reshape(4, 3))
    t[index] = value
    np.testing.assert_array_equal(t.numpy(), want)
  t = Tensor(np.arange(4, dtype=np.float32))
  with pytest.raises(_kiln.KilnError, match=r"cannot expand \(2,\) to \(0,\)"): t[2:1] = Tensor([1.0, 2.0])  # NumPy raises too
