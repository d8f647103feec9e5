"""kiln.distributed against NumPy: each rank fills rank-dependent data, and the expected sum, mean, max,
min, gather, broadcast and gradient mean over the ranks are computed here with NumPy. The checks run in
this process (a world of one) and, in a child job, as 2 ranks under mpirun. Values are small integers,
exact in every dtype used; float32 results are compared exactly, the gradient mean to 1e-6."""
import os, shutil, subprocess, sys
import numpy as np
import pytest

from kiln import Tensor, dtypes
dist = pytest.importorskip("kiln.distributed", reason="kiln was built without MPI")

DTYPES = [(dtypes.float32, np.float32), (dtypes.float64, np.float64), (dtypes.int32, np.int32),
          (dtypes.int64, np.int64), (dtypes.uint8, np.uint8)]

def rank_data(r: int, shape, np_dtype) -> np.ndarray:
  v = (np.arange(int(np.prod(shape))) * 7 + r * 5) % 9
  return (v if np.issubdtype(np_dtype, np.unsignedinteger) else v - 4).astype(np_dtype).reshape(shape)

def check_collectives():
  dist.init()
  r, w = dist.rank(), dist.world_size()
  for kdt, ndt in DTYPES:
    every = np.stack([rank_data(q, (3, 4), ndt) for q in range(w)])
    mine = Tensor(rank_data(r, (3, 4), ndt), dtype=kdt)
    np.testing.assert_array_equal(dist.all_reduce(mine).numpy(), every.sum(0).astype(ndt))
    np.testing.assert_array_equal(dist.all_reduce(mine, "max").numpy(), every.max(0))
    np.testing.assert_array_equal(dist.all_reduce(mine, "min").numpy(), every.min(0))
    if kdt in (dtypes.float32, dtypes.float64):
      np.testing.assert_array_equal(dist.all_reduce(mine, "mean").numpy(), every.mean(0).astype(ndt))
    np.testing.assert_array_equal(dist.broadcast(mine, w - 1).numpy(), every[w - 1])
    np.testing.assert_array_equal(dist.all_gather(mine, 1).numpy(), np.concatenate(list(every), axis=1))
  p = Tensor.zeros(5, requires_grad=True)
  p.grad = Tensor(rank_data(r, (5,), np.float32))
  dist.average_gradients([p])
  want = np.mean([rank_data(q, (5,), np.float32) for q in range(w)], axis=0)
  np.testing.assert_allclose(p.grad.numpy(), want, rtol=1e-6, atol=1e-6)
  shares = dist.all_gather(Tensor(dist.DistributedSampler(10, seed=3).indices(0), dtype=dtypes.int64)).numpy()
  assert sorted(shares.tolist()) == list(range(10))

def test_collectives_in_one_process():
  check_collectives()
  assert dist.world_size() == 1 and dist.rank() == 0

def test_errors_are_kiln_errors():
  dist.init()
  with pytest.raises(RuntimeError, match='op must be "sum", "mean", "max" or "min", got "prod"'):
    dist.all_reduce(Tensor([1.0]), "prod")
  with pytest.raises(RuntimeError, match="needs a float tensor"):
    dist.all_reduce(Tensor([1, 2], dtype=dtypes.int32), "mean")

@pytest.mark.skipif(shutil.which("mpirun") is None, reason="needs Open MPI's mpirun")
def test_collectives_as_two_ranks():
  cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2", sys.executable, __file__]
  out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=os.environ)
  assert out.returncode == 0, out.stdout + out.stderr
  assert out.stdout.count("collectives ok") == 2, out.stdout

if __name__ == "__main__":  # one rank of the mpirun job above
  check_collectives()
  print(f"rank {dist.rank()} of {dist.world_size()}: collectives ok", flush=True)
