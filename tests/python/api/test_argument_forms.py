"""Argument forms tinygrad takes: negative conv padding and circular pads crop, float fill values of
nonzero, Python ints wrapped into integer dtypes (data and bitwise operands), tuples and lists of ints as
advanced indices, empty unfold windows, non-float dtypes for randn. References: PyTorch and NumPy (exact
for integers; float32 forward and gradients within rtol 1e-5, atol 1e-6)."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from kiln import Tensor, dtypes
from reference import check_op

TOL = dict(rtol=1e-5, atol=1e-6)

def test_negative_conv_padding_crops():
  check_op([(1, 1, 10, 10), (1, 1, 3, 3)], lambda x, w: F.conv2d(x[:, :, 1:-1, 1:-1], w),
           lambda x, w: x.conv2d(w, padding=-1), **TOL)
  check_op([(1, 1, 10, 10), (1, 1, 3, 3)], lambda x, w: F.conv2d(x[:, :, 1:, 1:], w),
           lambda x, w: x.conv2d(w, padding=(-1, 0, -1, 0)), **TOL)

@pytest.mark.parametrize("pads", [(1, -2, 2, -1), (-1, 2, 0, 0), (-2, -1, 1, 3)])
def test_circular_pad_with_negative_amounts(pads):
  check_op([(1, 1, 5, 5)], lambda x: F.pad(x, pads, mode="circular"), lambda x: x.pad(pads, mode="circular"), **TOL)

def test_nonzero_float_fill_value_stays_integer():
  t = Tensor([1, 0]).nonzero(size=3, fill_value=-1.5)
  assert t.dtype.is_int and t.numpy().tolist() == [[0], [-1], [-1]]

@pytest.mark.parametrize("dtype,np_dtype", [(dtypes.uint8, np.uint8), (dtypes.int8, np.int8), (dtypes.uint32, np.uint32),
                                            (dtypes.int32, np.int32), (dtypes.uint16, np.uint16)])
def test_python_ints_wrap_into_integer_dtypes(dtype, np_dtype):
  data = [1 << 33, 1 << 32, (1 << 32) - 1, 1 << 31, 255, 1, 0]
  data += [-x for x in data]
  want = np.array(data, dtype=np.int64).astype(np_dtype)  # NumPy's int64 -> narrower cast wraps
  got = Tensor(data, dtype=dtype).numpy()
  assert got.dtype == np_dtype and np.array_equal(got, want)
  assert np.array_equal(Tensor([-1, 0, 1, 2, 3], dtype=dtypes.uint8).numpy(),
                        torch.tensor([-1, 0, 1, 2, 3], dtype=torch.uint8).numpy())

def test_bitwise_python_int_takes_the_tensors_bits():
  a = np.array([0, 5, -7], dtype=np.int32)
  for v in [0xFFFFFFFF, 0x1_0000_0003, -1, 6]:
    bits = np.array(v & 0xFFFFFFFF, dtype=np.uint32).view(np.int32)  # v's low 32 bits as int32
    for op in (np.bitwise_or, np.bitwise_and, np.bitwise_xor):
      name = op.__name__
      got = getattr(Tensor(a), name)(v)
      assert got.dtype == dtypes.int32 and np.array_equal(got.numpy(), op(a, bits)), (name, v)
  assert (Tensor([0], dtype=dtypes.int32) | 0xFFFFFFFF).item() == -1
  assert (0xFF | Tensor([0x100], dtype=dtypes.uint8)).numpy().tolist() == [0xFF]  # 0x100 wraps to 0 in uint8
  assert (Tensor([1, 2], dtype=dtypes.int32) + 2**40).dtype == dtypes.int64  # arithmetic still widens

@pytest.mark.parametrize("index", [
  lambda i, j: ((0,),), lambda i, j: (((0,),),), lambda i, j: ((1, 0, -1), j), lambda i, j: ((1, 0, 1), j, slice(None)),
  lambda i, j: ([[[0]]], j, [[1]]), lambda i, j: (i, (2, 1, 0), Ellipsis), lambda i, j: (1, ((2,), (1,), (0,)), (2, 1, 0)),
  lambda i, j: (1, (2, 1, 0), None, (2, 1, 0)), lambda i, j: (i, (1, 1)), lambda i, j: (i, 1),
])
def test_tuples_and_lists_as_advanced_indices(index):
  x = np.arange(2 * 5 * 6 * 4, dtype=np.float32).reshape(2, 5, 6, 4)
  i, j = np.array([[0], [1]]), np.array([[3, 1, 4]])
  want = x[index(i, j)]
  got = Tensor(x)[index(Tensor(i.astype(np.int32)), Tensor(j.astype(np.int32)))].numpy()
  assert got.shape == want.shape and np.array_equal(got, want)

@pytest.mark.parametrize("shape,dim,step", [((3, 3, 3), 1, 8), ((8,), 0, 2), ((4, 0), 1, 1), ((6, 2), 0, 3)])
def test_unfold_of_size_0(shape, dim, step):
  want = torch.ones(shape).unfold(dim, 0, step)
  got = Tensor.ones(*shape).unfold(dim, 0, step)
  assert got.shape == tuple(want.shape) and got.numpy().size == 0

def test_unfold_errors_as_pytorch():
  with pytest.raises(RuntimeError): torch.ones(8).unfold(0, 9, 3)
  with pytest.raises(RuntimeError): Tensor.ones(8).unfold(0, 9, 3)
  with pytest.raises(RuntimeError): torch.ones(8).unfold(0, 1, -1)
  with pytest.raises(RuntimeError): Tensor.ones(8).unfold(0, 1, -1)

@pytest.mark.parametrize("dtype", [dtypes.int8, dtypes.uint8, dtypes.int32, dtypes.int64, dtypes.bool, dtypes.float16])
def test_randn_in_any_dtype(dtype):
  t = Tensor.randn(3, dtype=dtype)
  assert t.dtype == dtype and t.element_size() == dtype.itemsize and t.numpy().shape == (3,)
