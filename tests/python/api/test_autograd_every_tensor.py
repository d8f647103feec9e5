"""backward() as tinygrad's: it fills .grad for every live float tensor of the loss's graph, with no
requires_grad needed, except tensors with requires_grad=False; gradients add up over calls. Compared
with PyTorch's (leaves and retain_grad intermediates; float32, rtol 1e-5 / atol 1e-6)."""
import numpy as np
import pytest
import torch
from kiln import KilnError, Tensor, nn

rng = np.random.default_rng(7)
X = rng.standard_normal((2, 3)).astype(np.float32)
W = rng.standard_normal((3, 3)).astype(np.float32)

def close(a, b): np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)

def torch_grads():
  x, w = torch.tensor(X, requires_grad=True), torch.tensor(W, requires_grad=True)
  h = (x @ w).relu()
  h.retain_grad()
  (h * h).sum().backward()
  return x.grad.numpy(), w.grad.numpy(), h.grad.numpy()

def test_leaves_and_intermediates_get_gradients_without_requires_grad():
  x, w = Tensor(X), Tensor(W)
  h = x.dot(w).relu()
  loss = (h * h).sum()
  loss.backward()
  for mine, ref in zip((x.grad, w.grad, h.grad), torch_grads()): close(mine.numpy(), ref)
  close(loss.grad.numpy(), 1.0)  # the root is in its own graph

def test_requires_grad_false_is_left_out_and_none_is_not():
  x, w = Tensor(X, requires_grad=False), Tensor(W, requires_grad=None)
  x.dot(w).sum().backward()
  assert x.grad is None
  close(w.grad.numpy(), np.broadcast_to(X.sum(0)[:, None], W.shape))
  w.requires_grad_(False)
  w.grad = None
  x.requires_grad = None
  x.dot(w).sum().backward()
  assert w.grad is None
  close(x.grad.numpy(), np.broadcast_to(W.sum(1), X.shape))

def test_gradients_accumulate_over_backward_calls():
  x = Tensor(X)
  (x * x).sum().backward()
  (x * 3).sum().backward()
  close(x.grad.numpy(), 2 * X + 3)

def test_integer_tensors_and_tensors_outside_the_graph_get_none():
  x, other, idx = Tensor(X), Tensor(W), Tensor([0, 1], dtype="int32")
  (x * idx.reshape(2, 1)).sum().backward()
  assert other.grad is None and idx.grad is None
  close(x.grad.numpy(), np.broadcast_to(np.array([[0.0], [1.0]], np.float32), X.shape))

def test_comparison_output_carries_no_gradient():
  a = Tensor(X)
  with pytest.raises(KilnError, match="float"): (a < 0).sum().backward()  # PyTorch: RuntimeError too
  (a * (a < 0)).sum().backward()
  t = torch.tensor(X, requires_grad=True)
  (t * (t < 0)).sum().backward()
  close(a.grad.numpy(), t.grad.numpy())

def test_gradient_of_a_target_outside_the_graph_is_zero():
  x, y = Tensor(X), Tensor(W)
  gx, gy = (x * 2).sum().gradient(x, y)
  close(gx.numpy(), np.full_like(X, 2))
  np.testing.assert_array_equal(gy.numpy(), np.zeros_like(W))

def test_backward_again_after_reading_gradients_adds_up():
  x, w = Tensor(X), Tensor(W)
  loss = x.dot(w).relu().log_softmax().sum()
  loss.backward()
  first = x.grad.numpy().copy()  # realizes the gradient, and with it nodes the loss shares
  loss.backward()
  loss.backward()
  xt = torch.tensor(X, requires_grad=True)
  (xt @ torch.tensor(W)).relu().log_softmax(-1).sum().backward()
  close(first, xt.grad.numpy())
  close(x.grad.numpy(), 3 * xt.grad.numpy())

def test_clone_copies_the_gradient():
  a = Tensor(X)
  (a * 5).sum().backward()
  b = a.clone()
  np.testing.assert_array_equal(b.grad.numpy(), np.full_like(X, 5))

def test_batchnorm_running_statistics_get_no_gradient():  # tinygrad's have requires_grad=False
  bn = nn.BatchNorm(3)
  x = Tensor(rng.standard_normal((4, 3, 2, 2)).astype(np.float32))
  bn(x).sum().backward()  # not training: the running statistics are in the graph
  assert bn.running_mean.grad is None and bn.running_var.grad is None
  assert bn.weight.grad is not None and x.grad is not None
