"""Forward values and gradients at the edges of ops' domains (0, ±inf, ties, bounds), compared with
PyTorch's float32 results: NaN must match NaN and infinities must match exactly; finite values within
rtol 1e-5 / atol 1e-6 unless stated."""
import math

import numpy as np
import pytest
import torch
from kiln import Tensor, dtypes

inf, nan = math.inf, math.nan

def check(fn, *vals, torch_fn=None, atol=1e-6):
  """fn over tensors of vals: its value and the gradients of its sum, against PyTorch's."""
  ts = [torch.tensor(v, dtype=torch.float32, requires_grad=True) for v in vals]
  ks = [Tensor(np.array(v, dtype=np.float32)) for v in vals]
  out_t, out_k = (torch_fn or fn)(*ts), fn(*ks)
  np.testing.assert_allclose(out_k.numpy(), out_t.detach().numpy(), rtol=1e-5, atol=atol)
  # afresh: reading out_k realized it, which cuts its graph (nothing required a gradient), as in tinygrad
  for gk, gt in zip(fn(*ks).sum().gradient(*ks), torch.autograd.grad(out_t.sum(), ts)):
    np.testing.assert_allclose(gk.numpy(), gt.numpy(), rtol=1e-5, atol=atol)

def test_abs_at_zero_and_infinity(): check(lambda x: x.abs(), [-1., -0., 0., 1., inf, -inf])

def test_clip_bounds_pass_the_gradient():
  check(lambda x: x.clip(-2.5, 1.5), [-3.0, -2.5, 0, 1.5, 2])
  check(lambda x: x.clip(3, 0), [-3.0, 0, 1.5, 3, 4])  # lower bound above the upper one
  check(lambda x: x.clip(None, 0), [-1.0, 0, 1], torch_fn=lambda x: x.clip(None, 0))

def test_minimum_and_maximum_split_ties():
  check(lambda a, b: a.minimum(b), [1., 0., 3., -4.], [-1., -2., 3., 0.], torch_fn=torch.minimum)
  check(lambda a, b: a.maximum(b), [1., 0., 3., -4.], [-1., -2., 3., 0.], torch_fn=torch.maximum)

@pytest.mark.parametrize("c", [-1, 0, 0.3, 1, 2, 3.3, -0.3])
def test_pow_constant_exponent_at_the_edges(c):
  check(lambda x: x ** c, [-inf, -1.0, 0.0, 1.0, inf, 2.5])

def test_pow_tensor_exponent_at_the_edges():
  check(lambda b, e: b ** e, [-inf, inf, 0.0, 0.0, 0.0, 2.0, -2.0], [0.0, 0.0, 0.0, 0.3, -0.3, -inf, 3.0])

def test_pow_constant_base():
  for base in (1.0, 5.5, -5.5, 0.0):
    check(lambda x: base ** x, [-1.5, 0.0, 0.5, 2.0])

def test_int_pow_int_stays_int():
  x = Tensor([-2, 0, 2], dtype=dtypes.int32)
  for e in (0, 1, 2, 29):
    out = x ** e
    assert out.dtype == dtypes.int32
    np.testing.assert_array_equal(out.numpy(), torch.tensor([-2, 0, 2], dtype=torch.int32).pow(e).numpy())
  assert (x ** 2.0).dtype == dtypes.float32  # a float exponent makes it float, as PyTorch's
  with pytest.raises(RuntimeError): x ** -2  # PyTorch: integers to negative integer powers are not allowed

def test_sign_and_copysign_have_zero_gradients_where_torch_does():
  check(lambda x: x.sign(), [-1., 0., 1.])
  v = [-1., -0., 0., 1.]
  for i in v:
    for j in v + [inf, -inf, nan]:
      check(lambda a, b: a.copysign(b), [i], [j], torch_fn=torch.copysign)

def test_acosh_gradient_below_minus_one_and_near_one():
  rng = np.random.default_rng(3)
  check(lambda x: x.acosh(), rng.uniform(-2, 2, 200).astype(np.float32).tolist())
  check(lambda x: x.acosh(), rng.uniform(300, 303, 50).astype(np.float32).tolist())

def test_sigmoid_and_softplus_gradient_at_zero():
  check(lambda x: x.sigmoid(), [0.0, -0.0, 1.0])
  check(lambda x: x.softplus(), [0.0, -0.0, 1.0], torch_fn=torch.nn.functional.softplus)
