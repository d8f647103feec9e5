"""Cumulative scans (cumsum, cumprod, cummax, cummin, logcumsumexp) against NumPy in float64 and
PyTorch, at lengths around the block size of the two-level scan (256) and far past it; gradients
against PyTorch's. Tolerances: float64 inputs within rtol 1e-9 (sums of up to 10**6 terms in another
order); float32 gradients within rtol 1e-4 / atol 1e-5."""
import numpy as np
import pytest
import torch
from kiln import Tensor, dtypes

LENGTHS = [1, 255, 256, 257, 513, 26000]

def logcumsumexp_ref(x, axis):
  return np.logaddexp.accumulate(x, axis=axis)

@pytest.mark.parametrize("n", LENGTHS)
def test_cumsum_long_axes_match_numpy(n):
  x = np.random.default_rng(n).uniform(-1, 1, (2, n))
  np.testing.assert_allclose(Tensor(x).cumsum(1).numpy(), np.cumsum(x, axis=1), rtol=1e-9, atol=1e-9)
  np.testing.assert_allclose(Tensor(x.T.copy()).cumsum(0).numpy(), np.cumsum(x.T, axis=0), rtol=1e-9, atol=1e-9)

def test_cumsum_of_a_million():
  x = np.random.default_rng(0).uniform(-1, 1, 10**6)
  np.testing.assert_allclose(Tensor(x).cumsum().numpy(), np.cumsum(x), rtol=1e-9, atol=1e-8)
  ints = np.random.default_rng(1).integers(-5, 5, 10**6).astype(np.int32)
  np.testing.assert_array_equal(Tensor(ints).cumsum().numpy(), np.cumsum(ints))

@pytest.mark.parametrize("n", [1, 257, 1000])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_scans_on_each_axis_match_numpy(n, axis):
  shape = [3, 4, 5]
  shape[axis] = n
  x = np.random.default_rng(n + axis).uniform(-2, 2, shape)
  t = Tensor(x)
  np.testing.assert_allclose(t.cumsum(axis).numpy(), np.cumsum(x, axis), rtol=1e-9, atol=1e-9)
  p = np.random.default_rng(n).uniform(0.9, 1.1, shape)  # products that stay in range
  np.testing.assert_allclose(Tensor(p).cumprod(axis).numpy(), np.cumprod(p, axis), rtol=1e-9)
  np.testing.assert_array_equal(t.cummax(axis)[0].numpy(), np.maximum.accumulate(x, axis))
  np.testing.assert_array_equal(t.cummin(axis)[0].numpy(), np.minimum.accumulate(x, axis))
  np.testing.assert_allclose(t.logcumsumexp(axis).numpy(), logcumsumexp_ref(x, axis), rtol=1e-9)

@pytest.mark.parametrize("n", [7, 600])
def test_cummax_cummin_indices_match_torch(n):
  # few distinct values: many ties, where PyTorch points at the last of the equal elements
  x = np.random.default_rng(n).integers(0, 4, (3, n)).astype(np.float32)
  for name in ("cummax", "cummin"):
    values, indices = getattr(Tensor(x), name)(1)
    expected = getattr(torch.tensor(x), name)(1)
    np.testing.assert_array_equal(values.numpy(), expected.values.numpy())
    np.testing.assert_array_equal(indices.numpy(), expected.indices.numpy())
    assert indices.dtype == dtypes.int32
  ints = np.random.default_rng(2).integers(-100, 100, 700).astype(np.int64)
  values, indices = Tensor(ints).cummin(0)
  np.testing.assert_array_equal(values.numpy(), np.minimum.accumulate(ints))
  np.testing.assert_array_equal(indices.numpy(), torch.tensor(ints).cummin(0).indices.numpy())

def test_logcumsumexp_keeps_range():
  x = np.array([-1000.0, 0.0, 1000.0, -np.inf, 999.0])
  np.testing.assert_allclose(Tensor(x).logcumsumexp().numpy(), torch.tensor(x).logcumsumexp(0).numpy(), rtol=1e-12)

@pytest.mark.parametrize("n", [5, 600])
@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"])
def test_scan_gradients_match_torch(name, n):
  x = np.random.default_rng(n).uniform(0.5, 1.5, (2, n)).astype(np.float32)  # distinct values: no ties
  w = np.random.default_rng(n + 1).uniform(-1, 1, (2, n)).astype(np.float32)
  xt, xk = torch.tensor(x, requires_grad=True), Tensor(x, requires_grad=True)
  out_t, out_k = getattr(xt, name)(1), getattr(xk, name)(1)
  if name in ("cummax", "cummin"): out_t, out_k = out_t.values, out_k[0]
  (out_t * torch.tensor(w)).sum().backward()
  (out_k * Tensor(w)).sum().backward()
  np.testing.assert_allclose(out_k.numpy(), out_t.detach().numpy(), rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(xk.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-5)

def test_zero_dim_scans_and_reductions():
  t = Tensor(3.0)
  for name in ("cumsum", "logcumsumexp"):
    assert getattr(t, name)().shape == () and getattr(t, name)().item() == getattr(torch.tensor(3.0), name)(0).item()
  assert t.cumprod(0).item() == 3.0 and t.cumsum(-1).item() == 3.0
  values, indices = t.cummax(0)
  assert values.item() == 3.0 and indices.item() == 0 and indices.shape == ()
  for name in ("max", "min", "sum"):
    got = getattr(t, name)(axis=0)
    assert got.shape == () and got.item() == 3.0
  with pytest.raises(RuntimeError, match="out of range"): t.cumsum(1)

def test_small_ints_accumulate_in_int32():
  x = np.full(300, 100, dtype=np.int8)
  got = Tensor(x).cumsum()
  assert got.dtype == dtypes.int32
  np.testing.assert_array_equal(got.numpy(), np.cumsum(x.astype(np.int32)))
