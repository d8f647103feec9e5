"""pad(value=) with a value an integer tensor cannot hold promotes to float, as tinygrad does; a value
it can hold keeps the dtype (PyTorch's and tinygrad's). Expected values from NumPy."""
import numpy as np
import pytest
from kiln import Tensor, dtypes

@pytest.mark.parametrize("value", [-np.inf, 0.5, np.nan])
def test_unrepresentable_fill_gives_float(value):
  x = np.array([[1, 2], [3, 4]], dtype=np.int32)
  got = Tensor(x).pad(((1, 0), (0, 1)), value=value)
  assert got.dtype == dtypes.float32
  np.testing.assert_array_equal(got.numpy(), np.pad(x.astype(np.float32), ((1, 0), (0, 1)), constant_values=value))

def test_bool_with_fractional_fill_and_int_with_whole_fill():
  b = Tensor([True, False]).pad(((1, 1),), value=0.25)
  assert b.dtype == dtypes.float32
  np.testing.assert_array_equal(b.numpy(), np.array([0.25, 1, 0, 0.25], dtype=np.float32))
  i = Tensor([1, 2]).pad(((0, 2),), value=-7)
  assert i.dtype == dtypes.int32
  np.testing.assert_array_equal(i.numpy(), np.array([1, 2, -7, -7]))
