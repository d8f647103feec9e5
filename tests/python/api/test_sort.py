"""sort, argsort, topk, randperm, multinomial and the rearranging views (roll, repeat_interleave,
diag, diagonal, meshgrid, unfold, rearrange) against PyTorch, forward and backward (see
reference.py for the method and tolerances). Sort values and indices compare exactly, against
torch.sort(stable=True): equal elements keep their order, NaN ranks above +inf."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
from kiln import Tensor  # noqa: E402
from kiln.dtype import dtypes  # noqa: E402
from reference import check_op  # noqa: E402

def grid(shape, seed=0, dtype=np.float32):
  """Values on a coarse grid, so that ties are common."""
  return (np.random.default_rng(seed).integers(-6, 7, shape) / 2).astype(dtype)

@pytest.mark.parametrize("shape,dim", [((1,), 0), ((3,), 0), ((5,), -1), ((1000,), 0), ((4, 7), 0), ((4, 7), 1),
                                       ((3, 5, 6), 1), ((2, 3, 9), -1)])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_values_and_indices(shape, dim, descending):
  x = grid(shape, seed=len(shape) + dim)
  v, i = Tensor(x).sort(dim, descending)
  tv, ti = torch.tensor(x).sort(dim=dim, descending=descending, stable=True)
  np.testing.assert_array_equal(v.numpy(), tv.numpy())
  np.testing.assert_array_equal(i.numpy(), ti.numpy())
  assert i.dtype == dtypes.int32
  np.testing.assert_array_equal(Tensor(x).argsort(dim, descending).numpy(), ti.numpy())

@pytest.mark.parametrize("descending", [False, True])
def test_sort_nan_inf_and_integers(descending):
  x = np.array([2, np.nan, -np.inf, 1, np.inf, np.nan, 2, -0.5, np.inf], np.float32)
  v, i = Tensor(x).sort(descending=descending)
  tv, ti = torch.tensor(x).sort(descending=descending, stable=True)
  np.testing.assert_array_equal(v.numpy(), tv.numpy())
  np.testing.assert_array_equal(i.numpy(), ti.numpy())
  n = np.array([[5, -3, 5, 0, 2**31 - 1, -2**31]], np.int32)
  v, i = Tensor(n).sort(1, descending)
  tv, ti = torch.tensor(n).sort(dim=1, descending=descending, stable=True)
  np.testing.assert_array_equal(v.numpy(), tv.numpy())
  np.testing.assert_array_equal(i.numpy(), ti.numpy())

@pytest.mark.parametrize("shape,dim", [((6,), 0), ((3, 5), 1), ((4, 3, 2), 0)])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_gradient(shape, dim, descending):
  # distinct values (uniform draws): the order, and so the gradient, is unambiguous
  check_op([shape], lambda x: x.sort(dim=dim, descending=descending)[0], lambda x: x.sort(dim, descending)[0])

@pytest.mark.parametrize("k,dim,largest", [(1, -1, True), (3, -1, True), (3, -1, False), (2, 0, True), (5, 1, False)])
def test_topk(k, dim, largest):
  x = grid((4, 5), seed=k)
  v, i = Tensor(x).topk(k, dim, largest)
  # topk equals the stable sort's prefix (torch.topk leaves the order of ties unspecified)
  tv, ti = torch.tensor(x).sort(dim=dim, descending=largest, stable=True)
  np.testing.assert_array_equal(v.numpy(), tv.narrow(dim, 0, k).numpy())
  np.testing.assert_array_equal(i.numpy(), ti.narrow(dim, 0, k).numpy())
  check_op([(4, 5)], lambda x: x.topk(k, dim=dim, largest=largest)[0], lambda x: x.topk(k, dim, largest)[0])

def test_sort_errors():
  x = Tensor.ones(2, 3)
  with pytest.raises(RuntimeError, match="sort"): x.sort(2)
  with pytest.raises(RuntimeError, match=r"topk: k must be in \[0, 3\]"): x.topk(4)
  with pytest.raises(RuntimeError, match="must not exceed"): x.multinomial(4)

def test_randperm_and_multinomial():
  Tensor.manual_seed(0)
  for n in (1, 3, 1000):
    p = Tensor.randperm(n)
    assert p.dtype == dtypes.int32
    np.testing.assert_array_equal(np.sort(p.numpy()), np.arange(n))
  w = np.array([[1, 0, 3, 4], [0, 0, 1, 0]], np.float32)
  draws = Tensor(w).multinomial(4000, replacement=True).numpy()
  assert draws.shape == (2, 4000)
  # shares within 0.03 of the weights (over 4 standard deviations at 4000 draws)
  np.testing.assert_allclose(np.bincount(draws[0], minlength=4) / 4000, w[0] / w[0].sum(), atol=0.03)
  assert (draws[1] == 2).all()
  single = Tensor(w[0]).multinomial(3).numpy()
  assert single.shape == (3,) and len(set(single.tolist())) == 3 and 1 not in single

@pytest.mark.parametrize("shifts,dims", [(1, 0), (-2, 1), ((1, 3), (0, 2)), (7, None), ((-5, 2), (-1, 1))])
def test_roll(shifts, dims):
  check_op([(3, 4, 5)], lambda x: torch.roll(x, shifts, dims), lambda x: x.roll(shifts, dims))

@pytest.mark.parametrize("repeats,dim", [(2, 0), (3, 1), (1, -1), (2, None)])
def test_repeat_interleave(repeats, dim):
  check_op([(3, 4)], lambda x: x.repeat_interleave(repeats, dim))

def test_diag_and_diagonal():
  check_op([(5,)], lambda x: torch.diag(x), lambda x: x.diag())
  for offset, d1, d2 in [(0, 0, 1), (1, 0, 1), (-2, 0, 1), (2, 2, 0), (0, -1, 1), (9, 0, 1)]:
    check_op([(3, 4, 5)], lambda x: x.diagonal(offset, d1, d2))
  with pytest.raises(RuntimeError, match="expected a 1-D"): Tensor.ones(2, 2).diag()

@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid(indexing):
  a, b, c = np.arange(3.0), np.arange(4.0, 6.0), np.arange(7.0, 11.0)
  got = Tensor(a).meshgrid(Tensor(b), Tensor(c), indexing=indexing)
  want = torch.meshgrid(torch.tensor(a), torch.tensor(b), torch.tensor(c), indexing=indexing)
  for g, w in zip(got, want): np.testing.assert_array_equal(g.numpy(), w.numpy())

@pytest.mark.parametrize("dim,size,step", [(0, 2, 1), (1, 3, 2), (-1, 1, 3), (2, 5, 1)])
def test_unfold(dim, size, step):
  check_op([(4, 6, 5)], lambda x: x.unfold(dim, size, step))

def test_rearrange():
  x = np.arange(2 * 6 * 5, dtype=np.float32).reshape(2, 6, 5)
  cases = [("b (h w) c -> b c h w", {"h": 2}, lambda t: t.reshape(2, 2, 3, 5).permute(0, 3, 1, 2)),
           ("b s c -> (b s c)", {}, lambda t: t.reshape(-1)),
           ("... c -> c ...", {}, lambda t: t.permute(2, 0, 1)),
           ("b ... -> b 1 (...)", {}, lambda t: t.reshape(2, 1, 30)),
           ("b (h w) c -> (w b) h c", {"w": 3}, lambda t: t.reshape(2, 2, 3, 5).permute(2, 0, 1, 3).reshape(6, 2, 5))]
  for formula, sizes, torch_fn in cases:
    got = Tensor(x).rearrange(formula, **sizes).numpy()
    np.testing.assert_array_equal(got, torch_fn(torch.tensor(x)).numpy(), err_msg=formula)
  with pytest.raises(RuntimeError, match="each axis must appear once"): Tensor(x).rearrange("b s c -> b s")
