"""Gradients flow through tensors that were realized (read) on the way, as in PyTorch and tinygrad,
compared with PyTorch's (float32, rtol 1e-5 / atol 1e-6)."""
import numpy as np
import torch
from kiln import Tensor, nn

X = np.array([0.5, -1.25, 2.0], dtype=np.float32)

def torch_grad(fn):
  xt = torch.tensor(X, requires_grad=True)
  fn(xt).backward()
  return xt.grad.numpy()

def test_backward_after_reading_an_intermediate():
  x = Tensor(X, requires_grad=True)
  y = x * x
  np.testing.assert_allclose(y.numpy(), X * X)
  y.sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), torch_grad(lambda t: (t * t).sum()), rtol=1e-5, atol=1e-6)

def test_backward_after_reading_the_loss_and_a_chain_of_reads():
  x = Tensor(X, requires_grad=True)
  h = (x * 3).exp()
  h.realize()
  z = (h * x).sin()
  z.numpy()
  loss = z.sum()
  loss.item()
  loss.backward()
  expected = torch_grad(lambda t: ((t * 3).exp() * t).sin().sum())
  np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-5, atol=1e-6)

def test_backward_without_requires_grad_still_fills_grad():  # tinygrad's rule
  t = Tensor([1.0, 2.0])
  t.sum().backward()
  np.testing.assert_array_equal(t.grad.numpy(), [1.0, 1.0])

@Tensor.train()  # optimizers step in training mode only
def test_grad_after_an_optimizer_step():
  w = Tensor(X.copy(), requires_grad=True)
  opt = nn.optim.SGD([w], lr=0.1)
  loss = (w * w).sum()
  loss.item()
  opt.zero_grad()
  loss.backward()
  opt.step()
  np.testing.assert_allclose(w.grad.numpy(), 2 * X, rtol=1e-6)
  np.testing.assert_allclose(w.numpy(), X - 0.1 * 2 * X, rtol=1e-6)
  assert not w.grad.requires_grad  # a gradient is data, as PyTorch's
