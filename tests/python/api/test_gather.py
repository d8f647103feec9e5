"""Indexing by integer tensors (x[idx], x[idx, :, 2], several tensor indices, index_select, gather)
against PyTorch/NumPy: values and gradients (reference.py's tolerances; gathers of float32 and
integers are exact copies), out-of-range indices (kiln reads 0 where PyTorch raises), and the
kernel's structure: an indexed load loops over the index, never over the source."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
from kiln import Tensor  # noqa: E402
from reference import check_op  # noqa: E402

def T(a): return torch.tensor(a).long()

@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8])
def test_getitem_by_tensors_matches_numpy(dtype):
  rng = np.random.default_rng(0)
  x = rng.integers(0, 100, (6, 5, 4)).astype(dtype)
  i0, i1 = np.array([[0, -1], [5, -6]], dtype=np.int32), np.array([3, -5], dtype=np.int64)
  t = Tensor(x)
  for got, want in [(t[Tensor(i0)], x[i0]), (t[Tensor(i0), :, 2], x[i0, :, 2]), (t[:, Tensor(i1)], x[:, i1]),
                    (t[Tensor(i0), Tensor(i1)], x[i0, i1]), (t[Tensor(i0), :, Tensor(i1 % 4)], x[i0, :, i1 % 4]),
                    (t[1:, Tensor(i1), None], x[1:, i1, None]), (t[..., Tensor(i1 % 4)], x[..., i1 % 4])]:
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want)

def test_out_of_range_indices_read_zero():
  x = np.arange(1, 16, dtype=np.float32).reshape(5, 3)
  idx = np.array([-1, -5, 5, -6, 2, 1 << 33], dtype=np.int64)  # NumPy/PyTorch raise for 5, -6 and 2^33
  inside = (idx >= -5) & (idx < 5)
  want = np.where(inside[:, None], x[np.where(inside, idx, 0)], 0)
  np.testing.assert_array_equal(Tensor(x)[Tensor(idx)].numpy(), want)
  # two indices: a pair is read only where both are in range
  j = np.array([0, 2, 1, 1, 3, -3], dtype=np.int64)
  both = inside & (j >= -3) & (j < 3)
  want2 = np.where(both, x[np.where(inside, idx, 0), np.where(both, j, 0)], 0)
  np.testing.assert_array_equal(Tensor(x)[Tensor(idx), Tensor(j)].numpy(), want2)

def test_gather_and_index_select_match_torch_with_gradients():
  i = np.array([[3, -1, 0, 3]], dtype=np.int32)
  check_op([(4, 3, 5)], lambda x: x[T(i)], lambda x: x[Tensor(i)])
  check_op([(4, 3, 5)], lambda x: x[T(i), :, 2], lambda x: x[Tensor(i), :, 2])
  j = np.array([2, 0, -3, 1], dtype=np.int32)
  check_op([(4, 3, 5)], lambda x: x[T(i), T(j)], lambda x: x[Tensor(i), Tensor(j)])
  check_op([(4, 3, 5)], lambda x: x[T(i), :, T(j)], lambda x: x[Tensor(i), :, Tensor(j)])
  k = np.array([4, 0, 0, -2, 1], dtype=np.int64)
  check_op([(4, 3, 5)], lambda x: x[..., T(k)], lambda x: x[..., Tensor(k)])
  index = np.random.default_rng(1).integers(0, 40, (5, 37))
  check_op([(6, 40)], lambda x: x.gather(1, T(index)), lambda x: x.gather(1, Tensor(index)))

def _loops(item):
  """Iterations of a kernel's loops, and whether it reduces."""
  iterations, reduces, seen, stack = 1, False, set(), [item.ast]
  while stack:
    u = stack.pop()
    if u in seen: continue
    seen.add(u)
    if u.op.name == "RANGE": iterations *= int(float(u.src[0].arg))
    reduces |= u.op.name == "REDUCE"
    stack.extend(u.src)
  return iterations, reduces

def test_a_batch_of_rows_loops_over_the_batch_only():
  rows, cols, batch = 6000, 784, 128
  rng = np.random.default_rng(2)
  data, samp = rng.random((rows, cols), dtype=np.float32), rng.integers(0, rows, batch).astype(np.int32)
  out = Tensor(data)[Tensor(samp)]
  items = out.schedule()
  assert len(items) == 1
  iterations, reduces = _loops(items[0])
  assert iterations == batch * cols and not reduces, str(items[0])  # the masked sum looped rows * batch * cols times
  np.testing.assert_array_equal(out.numpy(), data[samp])
