"""Elementwise math, activations and argument forms tinygrad has, against PyTorch: values and gradients
(float32 within rtol 1e-5 / atol 1e-6 unless a test states looser bounds, which are the error of
tinygrad's polynomial formulas), plus edge values (domain boundaries, infinities, NaN, -0.0)."""
import math
import numpy as np
import pytest
torch = pytest.importorskip("torch")
from reference import check_op
from kiln import Tensor, dtypes, KilnError

INF, NAN = float("inf"), float("nan")

def close(got, expected, rtol=1e-5, atol=1e-6):
  np.testing.assert_allclose(np.asarray(got, dtype=np.float64), np.asarray(expected, dtype=np.float64), rtol=rtol, atol=atol)

# (name, input range); the asin family is A&S 4.4.46 (absolute error 2e-8, a few float32 ULPs near pi/2)
UNARY = [("log10", 0.1, 5), ("sinh", -3, 3), ("cosh", -3, 3), ("asinh", -5, 5), ("acosh", 1.1, 5), ("atanh", -0.9, 0.9),
         ("asin", -0.95, 0.95), ("acos", -0.95, 0.95), ("atan", -5, 5)]

@pytest.mark.parametrize("name,low,high", UNARY)
def test_unary_values_and_gradients(name, low, high):
  check_op([(4, 5)], lambda x: getattr(x, name)(), low=low, high=high, rtol=1e-5, atol=2e-6, grad_rtol=1e-4, grad_atol=1e-5)

EDGES = {"log10": [0.0, 1.0, INF, -1.0, NAN], "sinh": [0.0, -0.0, 80.0, -80.0, INF, -INF], "cosh": [0.0, 80.0, -80.0, INF],
         "asinh": [0.0, -1e4, 1e4, 1e20, -1e20, INF, -INF, NAN], "acosh": [1.0, 1e20, INF, 0.5, -2.0],
         "atanh": [0.0, 1.0, -1.0, 2.0], "asin": [0.0, 1.0, -1.0, 1.5, 1e-3], "acos": [0.0, 1.0, -1.0, 1.5],
         "atan": [0.0, 1.0, -1.0, 1e20, -1e20, INF, -INF, NAN]}

@pytest.mark.parametrize("name", sorted(EDGES))
def test_unary_edge_values(name):
  x = np.array(EDGES[name], dtype=np.float32)
  expected = getattr(torch.tensor(x), name)().numpy()
  got = getattr(Tensor(x), name)().numpy()
  np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
  np.testing.assert_allclose(got, expected, rtol=1e-5, atol=2e-6)

def test_odd_functions_have_their_gradient_at_zero():
  for name in ("asin", "atan", "asinh"):
    x = Tensor([0.0], requires_grad=True)
    getattr(x, name)().sum().backward()
    close(x.grad.numpy(), [1.0], atol=1e-6)

def test_fmod_takes_the_dividend_sign():
  check_op([(3, 4), (3, 4)], lambda a, b: a.fmod(b), low=-5, high=5)
  a, b = [-4, 7, 5, 4, -7, 8], [2, -3, 8, -2, 3, 5]  # tinygrad's docstring example
  assert Tensor(a).fmod(Tensor(b)).tolist() == torch.fmod(torch.tensor(a), torch.tensor(b)).tolist()
  assert Tensor(a).fmod(3).dtype == dtypes.int32
  x = np.array([5.5, -5.5, INF, 3.0, 2.0], np.float32)
  y = np.array([INF, -INF, 2.0, 0.0, 1e-3], np.float32)
  close(Tensor(x).fmod(Tensor(y)).numpy(), torch.fmod(torch.tensor(x), torch.tensor(y)).numpy(), rtol=1e-3)

def test_div_rounding_modes():
  for mode in ("trunc", "floor"):
    check_op([(3, 4), (3, 4)], lambda a, b: a.div(b, rounding_mode=mode), low=-5, high=5, forward_only=True)
    a, b = torch.tensor([-7, 7, -7, 7, 6, -9]), torch.tensor([2, 2, -2, -2, 3, 4])
    got = Tensor(a.numpy().astype(np.int32)).div(Tensor(b.numpy().astype(np.int32)), rounding_mode=mode)
    assert got.dtype == dtypes.int32 and got.tolist() == torch.div(a, b, rounding_mode=mode).tolist()
    assert Tensor([7.5, -7.5]).div(2, rounding_mode=mode).tolist() == torch.div(torch.tensor([7.5, -7.5]), 2, rounding_mode=mode).tolist()
  with pytest.raises(KilnError, match="rounding_mode"): Tensor([1.0]).div(2, rounding_mode="round")

def test_copysign_with_negative_zero_and_infinity():
  check_op([(3, 4), (3, 4)], lambda a, b: a.copysign(b.detach()))  # no gradient flows to the sign
  a = np.array([1.0, -2.0, 3.0, -0.0, INF, 5.0], np.float32)
  b = np.array([-0.0, 0.0, -INF, -1.0, -1.0, INF], np.float32)
  got, expected = Tensor(a).copysign(Tensor(b)).numpy(), torch.copysign(torch.tensor(a), torch.tensor(b)).numpy()
  np.testing.assert_array_equal(got, expected)
  np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))

def test_logaddexp_lerp_and_closeness():
  check_op([(3, 4), (3, 4)], lambda a, b: a.logaddexp(b), low=-50, high=50)
  check_op([(3, 4), (3, 4), (3, 4)], lambda a, b, w: a.lerp(b, w))
  check_op([(3, 4), (3, 4)], lambda a, b: a.lerp(b, 0.25))
  assert Tensor([1., 2., 3.]).lerp(Tensor([4., 5., 6.]), 0.5).tolist() == [2.5, 3.5, 4.5]
  a = np.array([1e-7, 1e-8, 1e-9, NAN, INF, INF, 1.0, 1.0], np.float32)
  b = np.array([0.0, 0.0, 0.0, NAN, INF, -INF, 1.0 + 1e-6, 1.1], np.float32)
  for kw in ({}, {"equal_nan": True}, {"rtol": 0.2, "atol": 0}):
    assert Tensor(a).isclose(Tensor(b), **kw).tolist() == torch.isclose(torch.tensor(a), torch.tensor(b), **kw).tolist()
    assert Tensor(a).allclose(Tensor(b), **kw).item() == torch.allclose(torch.tensor(a), torch.tensor(b), **kw)
  assert Tensor(a[:3]).allclose(Tensor(b[:3]), atol=1e-6).item()

ACTIVATIONS = [("hardsigmoid", lambda x: x.hardsigmoid(), torch.nn.functional.hardsigmoid),
               ("softsign", lambda x: x.softsign(), torch.nn.functional.softsign),
               ("celu", lambda x: x.celu(0.7), lambda x: torch.nn.functional.celu(x, 0.7)),
               ("selu", lambda x: x.selu(), torch.nn.functional.selu),
               ("logsigmoid", lambda x: x.logsigmoid(), torch.nn.functional.logsigmoid),
               ("gelu_none", lambda x: x.gelu(approximate="none"), lambda x: torch.nn.functional.gelu(x)),
               ("gelu_tanh", lambda x: x.gelu(), lambda x: torch.nn.functional.gelu(x, approximate="tanh"))]

@pytest.mark.parametrize("name,kiln_fn,torch_fn", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activations(name, kiln_fn, torch_fn):
  # selu: tinygrad's rounded constants (1.67326, 1.0507) differ from PyTorch's by 3e-6 relative;
  # gelu "none": kiln's erf is A&S 7.1.26 (absolute error 1.5e-7)
  check_op([(4, 6)], torch_fn, kiln_fn, low=-4, high=4, rtol=1e-5, atol=1e-6 if name != "gelu_none" else 5e-7 * 4,
           grad_rtol=1e-4, grad_atol=1e-5)
  x = np.array([-INF, -100.0, 0.0, 100.0, INF], np.float32)
  close(kiln_fn(Tensor(x)).numpy(), torch_fn(torch.tensor(x)).numpy(), rtol=1e-5, atol=1e-6)

def test_softmin_normalize_and_moments():
  check_op([(3, 5)], lambda x: torch.nn.functional.softmin(x, 0), lambda x: x.softmin(axis=0))
  check_op([(3, 5)], lambda x: torch.nn.functional.normalize(x), lambda x: x.normalize())
  check_op([(3, 5)], lambda x: torch.nn.functional.normalize(x, p=1, dim=0), lambda x: x.normalize(p=1, dim=0))
  check_op([(3, 5)], lambda x: torch.nn.functional.normalize(x, p=3.0, dim=-1), lambda x: x.normalize(p=3.0, dim=-1))
  x = np.random.default_rng(3).normal(size=(2, 3, 4)).astype(np.float32)
  for fn in ("var_mean", "std_mean"):
    for axis in (None, 1, (0, 2)):
      kw = {"dim": tuple(range(x.ndim)) if axis is None else axis}
      expected = getattr(torch, fn)(torch.tensor(x), **kw, correction=0, keepdim=True)
      got = getattr(Tensor(x), fn)(axis, keepdim=True, correction=0)
      for g, e in zip(got, expected): close(g.numpy(), e.numpy())
  t = Tensor([[4, 5, 6], [7, 8, 9]])
  assert t.size() == (2, 3) and t.size(1) == 3 and t.size(-2) == 2

def test_reductions_take_axis_tuples():
  x = np.random.default_rng(4).normal(size=(2, 3, 4)).astype(np.float32)
  for fn in ("std", "var"):
    close(getattr(Tensor(x), fn)(axis=(0, 2)).numpy(), getattr(torch.tensor(x), fn)(dim=(0, 2)).numpy())
  b = x > 0.5
  for fn in ("any", "all"):
    assert getattr(Tensor(b), fn)(axis=(0, 2)).tolist() == getattr(np, fn)(b, axis=(0, 2)).tolist()

def test_shifts_by_a_tensor():
  a, s = np.array([1, -8, 3, 255, -1], np.int32), np.array([0, 1, 2, 3, 31], np.int32)
  assert Tensor(a).lshift(Tensor(s)).tolist() == (torch.tensor(a) << torch.tensor(s)).tolist()
  assert (Tensor(a) >> Tensor(s)).tolist() == (torch.tensor(a) >> torch.tensor(s)).tolist()
  assert (1 << Tensor(s[:4])).tolist() == (1 << torch.tensor(s[:4])).tolist()
  assert Tensor([1, 3, 31], dtype=dtypes.uint8).lshift(2).tolist() == [4, 12, 124]
  with pytest.raises(KilnError, match="rshift"): Tensor([1.0]).rshift(Tensor([1]))

def test_max_pool2d_on_integers():
  x = np.random.default_rng(5).integers(-100, 100, (1, 2, 6, 6)).astype(np.int32)
  got = Tensor(x).max_pool2d(kernel_size=(2, 2), padding=1)
  expected = torch.nn.functional.max_pool2d(torch.tensor(x).float(), 2, padding=1).int()
  assert got.dtype == dtypes.int32 and got.tolist() == expected.tolist()

def test_arange_dtypes():
  assert Tensor.arange(5).dtype == dtypes.int32 and Tensor.arange(5.5, 10, 2).dtype == dtypes.float32
  big = Tensor.arange(2**31 - 2, 2**31 + 2)
  assert big.dtype == dtypes.int64 and big.tolist() == list(range(2**31 - 2, 2**31 + 2))
  assert Tensor.arange(-2**31 - 1, -2**31 + 1).dtype == dtypes.int64
  with pytest.raises(OverflowError): Tensor.arange(2**31, 2**31 + 2, dtype=dtypes.int32)

def test_masked_fill_with_a_tensor():
  t, mask = Tensor([1, 2, 3, 4, 5]), Tensor([True, False, True, False, False])
  assert t.masked_fill(mask, Tensor([-1, -2, -3, -4, -5])).tolist() == [-1, 2, -3, 4, 5]  # tinygrad's docstring
  x, v = np.arange(6, dtype=np.float32).reshape(2, 3), np.float32(-7.5)
  m = x > 2
  expected = torch.tensor(x).masked_fill(torch.tensor(m), torch.tensor(v))
  got = Tensor(x).masked_fill(Tensor(m), Tensor(v))
  assert got.dtype == dtypes.float32 and got.tolist() == expected.tolist()

def test_gradient_through_comparisons():
  a, b = Tensor([1.0, -2.0, 3.0], requires_grad=True), Tensor([0.0, 0.0, 5.0], requires_grad=True)
  ((a < b).float() * a).sum().backward()
  ta, tb = torch.tensor([1.0, -2.0, 3.0], requires_grad=True), torch.tensor([0.0, 0.0, 5.0], requires_grad=True)
  ((ta < tb).float() * ta).sum().backward()
  assert a.grad.tolist() == ta.grad.tolist()
  assert b.grad is None or b.grad.tolist() == [0.0, 0.0, 0.0]

@pytest.mark.parametrize("call,message", [
  (lambda x, w: x.max_pool2d(3, padding=5), "more than half the kernel"),
  (lambda x, w: x.avg_pool2d(3, padding=2), "more than half the kernel"),
  (lambda x, w: x.avg_pool2d((2, 2), stride=1, padding=1, dilation=5), "padding only"),
  (lambda x, w: x.conv2d(Tensor.ones(2, 2, 9, 9)), "conv2d: window 9"),
])
def test_pool_and_conv_errors(call, message):
  x, w = Tensor.ones(1, 2, 4, 4), Tensor.ones(2, 2, 3, 3)
  with pytest.raises(KilnError, match=message): call(x, w).numpy()
