"""0-d tensors have one implicit axis, 0 or -1, as in PyTorch: reductions, scans, softmaxes and squeeze along
it see the tensor as shape (1,). Reshapes between () and (1,), and of zero-element tensors, as PyTorch's.
Forward and gradients against PyTorch (float32: rtol 1e-6, atol 1e-7)."""
import numpy as np
import pytest
import torch
from kiln import Tensor
from reference import check_op

TOL = dict(rtol=1e-6, atol=1e-7)

@pytest.mark.parametrize("name,fn", [
  ("sum0", lambda x: x.sum(0)), ("sum-1", lambda x: x.sum(-1)), ("sum()", lambda x: x.sum(())),
  ("sum", lambda x: x.sum()), ("prod0", lambda x: x.prod(0)), ("max-1", lambda x: x.amax(-1) if isinstance(x, torch.Tensor) else x.max(-1)),
  ("cumsum0", lambda x: x.cumsum(0)), ("cumsum-1", lambda x: x.cumsum(-1)), ("cumprod0", lambda x: x.cumprod(0)),
  ("log_softmax0", lambda x: x.log_softmax(0)), ("log_softmax-1", lambda x: x.log_softmax(-1)),
  ("softmax0", lambda x: x.softmax(0)), ("logsumexp0", lambda x: x.logsumexp(0)), ("logsumexp-1", lambda x: x.logsumexp(-1)),
  ("squeeze0", lambda x: x.squeeze(0)), ("squeeze-1", lambda x: x.squeeze(-1)), ("squeeze", lambda x: x.squeeze()),
  ("reshape()", lambda x: x.reshape(())), ("reshape(1,)", lambda x: x.reshape((1,))), ("reshape(1,1,1)", lambda x: x.reshape((1, 1, 1))),
])
def test_implicit_axis_of_0d(name, fn):
  check_op([()], fn, **TOL)

def test_cummax_of_0d():
  x = np.float32(1.5)
  values, indices = Tensor(x).cummax(0)
  want = torch.tensor(x).cummax(0)
  assert values.shape == () and values.numpy() == want.values.numpy() and indices.numpy() == want.indices.numpy()

def test_reshape_of_1_element_to_0d():
  check_op([(1,)], lambda x: x.reshape(()), **TOL)

def test_zero_element_reshapes():
  t, ref = Tensor.zeros(3, 2, 0), torch.zeros(3, 2, 0)
  for to in [(7, 0), (0,), (0, 5, 2)]:
    assert t.reshape(to).shape == tuple(ref.reshape(to).shape)
    np.testing.assert_equal(t.reshape(to).numpy(), ref.reshape(to).numpy())

def test_empty_tensors_from_python():
  np.testing.assert_equal(Tensor([]).numpy(), np.array([], dtype=np.float32))
  np.testing.assert_equal(Tensor(None).numpy(), np.array([], dtype=np.float32))
  assert Tensor(None).shape == (0,)
