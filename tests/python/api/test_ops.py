"""Every op the kiln package binds, forward and backward, against PyTorch (see reference.py for the
method and the default tolerances; looser ones are stated where they are used)."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from kiln import Tensor  # noqa: E402
from reference import check_op  # noqa: E402

SHAPES = [(3, 5), (2, 3, 7), (1, 5), (4, 1, 3), ()]

# name -> (torch, kiln or None when the same lambda works, input range, extra check_op arguments)
UNARY = {
  "neg": (lambda x: -x, None, (-2, 2), {}),
  "relu": (lambda x: x.relu(), None, (-2, 2), {}),
  "exp": (lambda x: x.exp(), None, (-2, 2), {}),
  "exp2": (lambda x: x.exp2(), None, (-2, 2), {}),
  "log": (lambda x: x.log(), None, (0.1, 3), {}),
  "log2": (lambda x: x.log2(), None, (0.1, 3), {}),
  "sqrt": (lambda x: x.sqrt(), None, (0.1, 3), {}),
  "rsqrt": (lambda x: x.rsqrt(), None, (0.1, 3), {}),
  "sin": (lambda x: x.sin(), None, (-3, 3), {}),
  "cos": (lambda x: x.cos(), None, (-3, 3), {"atol": 2e-6}),  # cos is sin(pi/2 - x): pi/2 rounds in float32
  "tan": (lambda x: x.tan(), None, (-1.2, 1.2), {}),
  "tanh": (lambda x: x.tanh(), None, (-3, 3), {"atol": 2e-6}),  # 2*sigmoid(2x)-1 cancels near 0
  "sigmoid": (lambda x: x.sigmoid(), None, (-3, 3), {}),
  "abs": (lambda x: x.abs(), None, (-2, 2), {}),
  "reciprocal": (lambda x: x.reciprocal(), None, (0.5, 2), {}),
  "square": (lambda x: x.square(), None, (-2, 2), {}),
  "sign": (lambda x: x.sign(), None, (-2, 2), {"forward_only": True}),
  "trunc": (lambda x: x.trunc(), None, (-3, 3), {"forward_only": True}),
  "floor": (lambda x: x.floor(), None, (-3, 3), {"forward_only": True}),
  "ceil": (lambda x: x.ceil(), None, (-3, 3), {"forward_only": True}),
  "round": (lambda x: x.round(), None, (-3, 3), {"forward_only": True}),
  "gelu": (lambda x: F.gelu(x, approximate="tanh"), lambda x: x.gelu(), (-3, 3), {"atol": 2e-6}),
  "quick_gelu": (lambda x: x * (1.702 * x).sigmoid(), lambda x: x.quick_gelu(), (-3, 3), {}),
  "silu": (lambda x: F.silu(x), lambda x: x.silu(), (-3, 3), {}),
  "swish": (lambda x: F.silu(x), lambda x: x.swish(), (-3, 3), {}),
  "relu6": (lambda x: F.relu6(x), lambda x: x.relu6(), (-8, 8), {}),
  "hardswish": (lambda x: F.hardswish(x), lambda x: x.hardswish(), (-5, 5), {}),
  "mish": (lambda x: F.mish(x), lambda x: x.mish(), (-3, 3), {"atol": 2e-6}),
  # kiln's erf is a polynomial approximation (as tinygrad's): ~1e-7 absolute
  "erf": (lambda x: x.erf(), None, (-3, 3), {"atol": 1e-6, "rtol": 1e-4}),
  "softplus": (lambda x: F.softplus(x, beta=2), lambda x: x.softplus(2), (-3, 3), {}),
  "elu": (lambda x: F.elu(x, alpha=0.7), lambda x: x.elu(0.7), (-3, 3), {}),
  "leaky_relu": (lambda x: F.leaky_relu(x, 0.2), lambda x: x.leaky_relu(0.2), (-3, 3), {}),
  "hardtanh": (lambda x: F.hardtanh(x, -0.5, 1.5), lambda x: x.hardtanh(-0.5, 1.5), (-3, 3), {}),
  "pow_scalar": (lambda x: x ** 3, None, (-2, 2), {}),
  "pow_half": (lambda x: x ** 0.5, None, (0.1, 3), {}),
  "rpow": (lambda x: 2 ** x, None, (-2, 2), {}),
  "rsub": (lambda x: 2 - x, None, (-2, 2), {}),
  "rdiv": (lambda x: 1 / x, None, (0.5, 2), {}),
  "scalar_chain": (lambda x: (x * 3 + 1.5) / 2 - 0.25, None, (-2, 2), {}),
  "clip": (lambda x: x.clip(-0.5, 1), None, (-2, 2), {}),
  "clip_min": (lambda x: x.clip(min=-0.5), lambda x: x.clip(min_=-0.5), (-2, 2), {}),
}

@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name", UNARY)
def test_unary(name, shape):
  torch_fn, kiln_fn, (low, high), kw = UNARY[name]
  check_op([shape], torch_fn, kiln_fn, low=low, high=high, **kw)

@pytest.mark.parametrize("name", ["neg", "exp", "log", "sqrt", "sin", "sigmoid", "tanh", "relu", "abs", "gelu"])
def test_unary_float64(name):
  torch_fn, kiln_fn, (low, high), _ = UNARY[name]
  check_op([(3, 5)], torch_fn, kiln_fn, low=low, high=high, dtype=np.float64, rtol=1e-9, atol=1e-12)

@pytest.mark.parametrize("name", ["neg", "exp", "log", "sqrt", "sigmoid", "relu"])
def test_unary_float16(name):
  torch_fn, kiln_fn, (low, high), _ = UNARY[name]
  # float16 rounds to 1e-3 relative; gradients are compared with the same tolerance
  check_op([(3, 5)], lambda x: torch_fn(x.float()).half(), kiln_fn, low=low, high=high, dtype=np.float16,
           rtol=2e-3, atol=2e-3, forward_only=True)

BROADCAST_SHAPES = [((3, 5), (3, 5)), ((2, 3, 7), (1, 3, 1)), ((4, 1, 3), (5, 1)), ((), (3, 5)), ((1, 5), (2, 1))]

BINARY = {
  "add": (lambda a, b: a + b, (-2, 2)),
  "sub": (lambda a, b: a - b, (-2, 2)),
  "mul": (lambda a, b: a * b, (-2, 2)),
  "div": (lambda a, b: a / b, (0.5, 2)),
  "pow": (lambda a, b: a ** b, (0.5, 2)),
  "maximum": (lambda a, b: a.maximum(b), (-2, 2)),
  "minimum": (lambda a, b: a.minimum(b), (-2, 2)),
}

@pytest.mark.parametrize("shapes", BROADCAST_SHAPES, ids=str)
@pytest.mark.parametrize("name", BINARY)
def test_binary(name, shapes):
  fn, (low, high) = BINARY[name]
  check_op(list(shapes), fn, low=low, high=high, rtol=2e-5 if name == "pow" else None)  # pow is exp2(log2(a)*b)

@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "pow", "maximum"])
def test_binary_float64_and_float16(name):
  fn, (low, high) = BINARY[name]
  check_op([(2, 3, 7), (1, 3, 1)], fn, low=low, high=high, dtype=np.float64, rtol=1e-9 if name == "pow" else None)
  # float16: a float32 reference rounded once; kiln computes in float16 (pow: exp2/log2 in float32)
  check_op([(2, 3, 7), (1, 3, 1)], lambda a, b: fn(a.float(), b.float()).half(), fn, low=low, high=high, dtype=np.float16,
           rtol=2e-3, atol=2e-3, forward_only=True)

def test_matmul_float64():
  check_op([(3, 7), (7, 4)], lambda a, b: a @ b, dtype=np.float64)

@pytest.mark.parametrize("op", ["<", "<=", ">", ">=", "==", "!="])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_comparisons(op, dtype):
  fn = eval(f"lambda a, b: a {op} b")
  # small integers so that equal elements occur
  check_op([(4, 5), (1, 5)], fn, low=-2, high=3, dtype=dtype, forward_only=True, seed=3)
  check_op([(4, 5)], lambda a: fn(a, 1), low=-2, high=3, dtype=dtype, forward_only=True)

@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.int8, np.uint8])
def test_integer_arithmetic(dtype):
  check_op([(3, 5), (3, 5)], lambda a, b: a + b * 3 - a, low=0, high=20, dtype=dtype)
  check_op([(3, 5)], lambda a: a.clamp(min=4), lambda a: a.maximum(4), low=0, high=20, dtype=dtype)

@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.int8])
def test_floor_division_and_modulo(dtype):
  # negative operands on either side: floor semantics, the remainder takes the divisor's sign (torch's // and %)
  check_op([(4, 6), (4, 6)], lambda a, b: a // torch.where(b == 0, 1, b), lambda a, b: a // (b == 0).where(1, b),
           low=-9, high=10, dtype=dtype, forward_only=True, seed=5)
  check_op([(4, 6), (4, 6)], lambda a, b: a % torch.where(b == 0, 1, b), lambda a, b: a % (b == 0).where(1, b),
           low=-9, high=10, dtype=dtype, forward_only=True, seed=6)
  check_op([(4, 6)], lambda a: a // -4, low=-9, high=10, dtype=dtype, forward_only=True)
  check_op([(4, 6)], lambda a: 7 % (a * 0 + 3), low=-9, high=10, dtype=dtype, forward_only=True)

@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.int16])
def test_bitwise_and_shifts(dtype):
  for fn in (lambda a, b: a & b, lambda a, b: a | b, lambda a, b: a ^ b):
    check_op([(3, 5), (3, 5)], fn, low=0, high=100, dtype=dtype, forward_only=True)
  check_op([(3, 5)], lambda a: ~a, low=0, high=100, dtype=dtype, forward_only=True)
  check_op([(3, 5)], lambda a: a << 2, low=0, high=20, dtype=dtype, forward_only=True)
  check_op([(3, 5)], lambda a: a >> 3, low=0, high=100, dtype=dtype, forward_only=True)

def test_classification_and_any_all():
  x = np.array([[np.nan, np.inf, -np.inf, 0.0], [1.0, -2.0, 0.0, 3.0]], dtype=np.float32)
  t, tt = Tensor(x), torch.tensor(x)
  assert t.isnan().tolist() == tt.isnan().tolist()
  assert t.isinf().tolist() == tt.isinf().tolist()
  assert t.isinf(detect_negative=False).tolist() == tt.isposinf().tolist()
  assert t.isfinite().tolist() == tt.isfinite().tolist()
  for axis in (None, 0, 1):
    want_any = tt.any() if axis is None else tt.any(dim=axis)
    want_all = tt.all() if axis is None else tt.all(dim=axis)
    assert np.array_equal(t.any(axis).numpy(), want_any.numpy())
    assert np.array_equal(t.all(axis).numpy(), want_all.numpy())

def test_where():
  check_op([(3, 5), (3, 5), (1, 5)], lambda c, a, b: torch.where(c > 0, a, b), lambda c, a, b: (c > 0).where(a, b))
  check_op([(3, 5), (3, 5)], lambda c, a: torch.where(c > 0, a, torch.tensor(2.0)), lambda c, a: (c > 0).where(a, 2.0))

REDUCE_AXES = [None, 0, -1, (0, 2), ()]

@pytest.mark.parametrize("axis", REDUCE_AXES, ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("name", ["sum", "max", "min", "mean", "prod", "var", "std"])
def test_reduce(name, axis, keepdim):
  if axis == () and name in ("var", "std"): pytest.skip("the variance of one element is nan in both")
  def torch_fn(x):
    dims = tuple(range(x.ndim)) if axis is None else axis
    if name in ("max", "min"):
      return getattr(x, "amax" if name == "max" else "amin")(dim=dims, keepdim=keepdim) if dims != () else x
    if name == "prod":
      for d in sorted((dims,) if isinstance(dims, int) else dims, reverse=True): x = x.prod(d, keepdim=keepdim)
      return x
    if name in ("var", "std"):
      if dims == (): return getattr(x.unsqueeze(0), name)(dim=0)
      return getattr(x, name)(dim=dims, keepdim=keepdim)
    return getattr(x, name)(dim=dims, keepdim=keepdim) if dims != () else x
  check_op([(2, 3, 4)], torch_fn, lambda x: getattr(x, name)(axis=axis, keepdim=keepdim),
           low=0.5 if name == "prod" else -2, high=1.5 if name == "prod" else 2, rtol=2e-5)

def test_reduce_integer_dtypes():
  check_op([(3, 5)], lambda x: x.sum(), low=0, high=100, dtype=np.int32)
  check_op([(3, 5)], lambda x: x.max(dim=1).values, lambda x: x.max(axis=1), low=-50, high=50, dtype=np.int32)
  check_op(None, lambda x: x.sum(), vals=[np.array([True, False, True])])  # bools sum as ints
  check_op([(3, 5)], lambda x: x.float().mean(), lambda x: x.mean(), low=0, high=10, dtype=np.int32)  # int mean is float

@pytest.mark.parametrize("shape", [(3, 5), (2, 3, 7), (1, 5)], ids=str)
@pytest.mark.parametrize("axis", [0, -1])
def test_softmax_family(shape, axis):
  check_op([shape], lambda x: x.softmax(axis), lambda x: x.softmax(axis))
  check_op([shape], lambda x: x.log_softmax(axis), lambda x: x.log_softmax(axis))
  check_op([shape], lambda x: x.logsumexp(axis), lambda x: x.logsumexp(axis))
  check_op([shape], lambda x: x.logsumexp(axis, keepdim=True), lambda x: x.logsumexp(axis, keepdim=True))

@pytest.mark.parametrize("op", ["softmax", "softmin", "log_softmax"])
def test_softmax_family_gradient_of_sum(op):
  """tinygrad's test_softmax and its data: a softmax's rows sum to 1, so d sum / dx is 0 up to rounding
  (within atol 1e-7 of PyTorch's). The max the rows are shifted by is detached, as in tinygrad: a
  gradient through it would add its rounding."""
  x = np.random.RandomState(0).uniform(-2, 2, (45, 65)).astype(np.float32)
  tt = torch.tensor(x, requires_grad=True)
  (want,) = torch.autograd.grad(getattr(F, op)(tt, 1).sum(), [tt])
  kt = Tensor(x, requires_grad=True)
  (got,) = getattr(kt, op)(1).sum().gradient(kt)
  np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-3, atol=1e-7)

def test_logsumexp_all_axes():
  check_op([(2, 3, 4)], lambda x: x.logsumexp(dim=(0, 1, 2)), lambda x: x.logsumexp())
  check_op([(2, 3, 4)], lambda x: x.logsumexp(dim=(0, 2)), lambda x: x.logsumexp(axis=(0, 2)))

@pytest.mark.parametrize("axis", [None, 0, 1])
def test_argmax_argmin(axis):
  # ties: the first index, as PyTorch (the values repeat)
  vals = [np.array([[1, 5, 5, 0], [7, 7, 2, 7], [3, 3, 3, 3]], dtype=np.float32)]
  check_op(None, lambda x: x.argmax(dim=axis), lambda x: x.argmax(axis=axis), vals=vals, forward_only=True)
  check_op(None, lambda x: x.argmin(dim=axis), lambda x: x.argmin(axis=axis), vals=vals, forward_only=True)
  check_op([(4, 5)], lambda x: x.argmax(dim=1, keepdim=True), lambda x: x.argmax(axis=1, keepdim=True), forward_only=True)

MOVEMENT = {
  "reshape_args": ((2, 3, 4), lambda x: x.reshape(4, 6), None),
  "reshape_tuple": ((2, 3, 4), lambda x: x.reshape((6, -1)), None),
  "reshape_none": ((2, 3, 4), lambda x: x.reshape(2, 12), lambda x: x.reshape(None, 12)),
  "permute": ((2, 3, 4), lambda x: x.permute(2, 0, 1), None),
  "permute_tuple": ((2, 3, 4), lambda x: x.permute((1, 2, 0)), None),
  "expand": ((3, 1), lambda x: x.expand(2, 3, 4), None),
  "expand_keep": ((3, 1), lambda x: x.expand(3, 5), lambda x: x.expand(-1, 5)),
  "flip": ((2, 3, 4), lambda x: x.flip((0, 2)), lambda x: x.flip(0, 2)),
  "transpose": ((2, 3, 4), lambda x: x.transpose(0, 2), None),
  "transpose_default": ((3, 5), lambda x: x.transpose(1, 0), lambda x: x.transpose()),
  "T": ((3, 5), lambda x: x.T, None),
  "flatten": ((2, 3, 4), lambda x: x.flatten(), None),
  "flatten_1": ((2, 3, 4), lambda x: x.flatten(1), None),
  "unflatten": ((2, 12), lambda x: x.unflatten(1, (3, 4)), None),
  "squeeze": ((2, 1, 4, 1), lambda x: x.squeeze(), None),
  "squeeze_dim": ((2, 1, 4), lambda x: x.squeeze(1), None),
  "squeeze_not_one": ((2, 3), lambda x: x.squeeze(1), None),
  "unsqueeze": ((2, 3), lambda x: x.unsqueeze(-1), None),
  "pad_flat": ((2, 3, 4), lambda x: F.pad(x, (1, 2, 0, 1)), lambda x: x.pad((1, 2, 0, 1))),
  "pad_grouped": ((2, 3, 4), lambda x: F.pad(x, (1, 2, 0, 1)), lambda x: x.pad((None, (0, 1), (1, 2)))),
  "pad_value": ((3, 4), lambda x: F.pad(x, (1, 1, 2, 0), value=-1.5), lambda x: x.pad(((2, 0), (1, 1)), value=-1.5)),
  "pad_negative": ((3, 4), lambda x: F.pad(x, (-1, 2)), lambda x: x.pad((-1, 2))),
  # PyTorch pads the last 1-3 axes of 2-5-D inputs in these modes
  "pad_reflect": ((2, 5, 4), lambda x: F.pad(x, (3, 1), mode="reflect"), lambda x: x.pad((3, 1), mode="reflect")),
  "pad_reflect_2d": ((1, 2, 4, 5), lambda x: F.pad(x, (1, 4, 3, 2), mode="reflect"),
                     lambda x: x.pad((None, None, (3, 2), (1, 4)), mode="reflect")),
  "pad_replicate": ((1, 2, 3, 4), lambda x: F.pad(x, (2, 0, 1, 5), mode="replicate"),
                    lambda x: x.pad((2, 0, 1, 5), mode="replicate")),
  "pad_replicate_3d": ((1, 1, 2, 3, 2), lambda x: F.pad(x, (1, 1, 0, 2, 3, 1), mode="replicate"),
                       lambda x: x.pad((1, 1, 0, 2, 3, 1), mode="replicate")),
  "pad_circular": ((1, 2, 3, 4), lambda x: F.pad(x, (4, 2, 3, 1), mode="circular"),
                   lambda x: x.pad((4, 2, 3, 1), mode="circular")),
  "pad_reflect_crop": ((1, 3, 6), lambda x: F.pad(x, (-2, 3), mode="reflect"), lambda x: x.pad((-2, 3), mode="reflect")),
  "pad_replicate_crop": ((1, 3, 6), lambda x: F.pad(x, (4, -1), mode="replicate"), lambda x: x.pad((4, -1), mode="replicate")),
  "shrink": ((3, 4), lambda x: x[1:3, 0:2], lambda x: x.shrink(((1, 3), (0, 2)))),
  "shrink_none": ((3, 4), lambda x: x[:, 1:], lambda x: x.shrink((None, (1, 4)))),
  "repeat": ((2, 3), lambda x: x.repeat(2, 1, 3), None),
  "cumsum": ((3, 5), lambda x: x.cumsum(1), None),
  "tril": ((4, 5), lambda x: x.tril(1), None),
  "triu": ((4, 5), lambda x: x.triu(-1), None),
}

@pytest.mark.parametrize("name", MOVEMENT)
def test_movement(name):
  shape, torch_fn, kiln_fn = MOVEMENT[name]
  check_op([shape], torch_fn, kiln_fn)

GETITEM = [
  lambda x: x[1], lambda x: x[-1, 2], lambda x: x[1:3], lambda x: x[:, ::2], lambda x: x[..., 1::3],
  lambda x: x[None, :, None, 1], lambda x: x[0, ..., None], lambda x: x[1, 2, 3], lambda x: x[-3:, -2:, :-1],
  lambda x: x[5:1], lambda x: x[:, 3:],
]
# negative steps: PyTorch has none; NumPy is the reference
NEGATIVE_STEPS = [lambda x: x[::-1], lambda x: x[:, ::-2, 1:], lambda x: x[3:0:-2, 1, ::-3], lambda x: x[..., -1::-4]]

@pytest.mark.parametrize("i", range(len(GETITEM)))
def test_getitem_basic(i):
  check_op([(4, 3, 5)], GETITEM[i])

@pytest.mark.parametrize("i", range(len(NEGATIVE_STEPS)))
def test_getitem_negative_steps(i):
  x = np.arange(60, dtype=np.float32).reshape(4, 3, 5)
  t = Tensor(x, requires_grad=True)
  out = NEGATIVE_STEPS[i](t)
  out.sum().backward()
  np.testing.assert_array_equal(out.numpy(), NEGATIVE_STEPS[i](x))
  expected = np.zeros(60, dtype=np.float32)
  expected[NEGATIVE_STEPS[i](np.arange(60).reshape(4, 3, 5)).ravel()] = 1  # 1 where an element was taken
  np.testing.assert_array_equal(t.grad.numpy(), expected.reshape(4, 3, 5))

def test_getitem_tensor_indices():
  idx = [np.array([2, 0, 3, -1], dtype=np.int32)]
  check_op([(4, 3, 5)], lambda x: x[torch.tensor(idx[0]).long()], lambda x: x[Tensor(idx[0])])
  check_op([(4, 3, 5)], lambda x: x[:, [2, 0]], lambda x: x[:, [2, 0]])
  i0, i1 = np.array([[0, 1], [3, 2]], dtype=np.int32), np.array([1, 0], dtype=np.int32)
  # adjacent advanced indices broadcast in place; separated ones go first (NumPy's rule)
  check_op([(4, 3, 5)], lambda x: x[torch.tensor(i0).long(), torch.tensor(i1).long()], lambda x: x[Tensor(i0), Tensor(i1)])
  check_op([(4, 3, 5)], lambda x: x[torch.tensor(i0).long(), :, torch.tensor(i1).long()], lambda x: x[Tensor(i0), :, Tensor(i1)])
  check_op([(4, 3, 5)], lambda x: x[1:, torch.tensor(i1).long(), None], lambda x: x[1:, Tensor(i1), None])

def test_combine():
  check_op([(2, 3), (4, 3), (1, 3)], lambda a, b, c: torch.cat((a, b, c)), lambda a, b, c: a.cat(b, c))
  check_op([(2, 3), (2, 4)], lambda a, b: torch.cat((a, b), dim=1), lambda a, b: Tensor.cat(a, b, dim=1))
  check_op([(2, 3), (2, 3)], lambda a, b: torch.stack((a, b), dim=1), lambda a, b: a.stack(b, dim=1))
  check_op([(2, 3), (2, 3)], lambda a, b: torch.stack((a, b)), lambda a, b: Tensor.stack([a, b]))
  for sizes in (2, [1, 3, 1]):
    check_op([(5, 3)], lambda x: torch.cat([p * (i + 1) for i, p in enumerate(x.split(sizes))]),
             lambda x: Tensor.cat(*[p * (i + 1) for i, p in enumerate(x.split(sizes))]))
  check_op([(7, 2)], lambda x: torch.cat([p * (i + 1) for i, p in enumerate(x.chunk(3))]),
           lambda x: Tensor.cat(*[p * (i + 1) for i, p in enumerate(x.chunk(3))]))

def test_indexing_ops():
  index = np.array([[0, 2, 1], [1, 1, 0]], dtype=np.int64)
  check_op([(2, 4)], lambda x: x.gather(1, torch.tensor(index)), lambda x: x.gather(1, Tensor(index)))
  src_index = np.array([[0, 2], [3, 1]], dtype=np.int64)
  check_op([(2, 4), (2, 2)], lambda x, s: x.scatter(1, torch.tensor(src_index), s), lambda x, s: x.scatter(1, Tensor(src_index), s))
  mask = np.array([[True, False, True, False], [False, False, True, True]])
  check_op([(2, 4)], lambda x: x.masked_fill(torch.tensor(mask), -3.0), lambda x: x.masked_fill(Tensor(mask), -3.0))
  check_op(None, lambda x: F.one_hot(x.long(), 5), lambda x: x.one_hot(5), vals=[np.array([0, 3, 1, 4], dtype=np.int32)])
  check_op(None, lambda x: F.one_hot(x.long()), lambda x: x.one_hot(), vals=[np.array([[0, 2], [1, 2]], dtype=np.int32)])

@pytest.mark.parametrize("shapes", [((3, 5), (5, 4)), ((5,), (5, 4)), ((3, 5), (5,)), ((2, 3, 5), (5, 4)),
                                    ((2, 1, 3, 5), (4, 5, 2)), ((7,), (7,))], ids=str)
def test_matmul(shapes):
  check_op(list(shapes), lambda a, b: a @ b, rtol=2e-5)
  check_op(list(shapes), lambda a, b: a.matmul(b), rtol=2e-5)
  check_op(list(shapes), lambda a, b: a.matmul(b), lambda a, b: a.dot(b), rtol=2e-5)

def test_linear_and_einsum():
  check_op([(3, 5), (5, 4), (4,)], lambda x, w, b: x @ w + b, lambda x, w, b: x.linear(w, b))
  check_op([(3, 5), (5,)], lambda x, w: x * w, lambda x, w: x.linear(w))
  check_op([(3, 5), (5, 4)], lambda a, b: torch.einsum("ij,jk->ik", a, b), lambda a, b: Tensor.einsum("ij,jk->ik", a, b))
  check_op([(2, 3, 5), (2, 5, 4)], lambda a, b: torch.einsum("bij,bjk->bk", a, b), lambda a, b: Tensor.einsum("bij,bjk->bk", [a, b]))

def test_pad_value_keeps_integer_dtype():
  x = np.arange(6, dtype=np.int32).reshape(2, 3)
  got = Tensor(x).pad((1, 2, 0, 1), value=-7).numpy()
  expected = F.pad(torch.tensor(x), (1, 2, 0, 1), value=-7).numpy()
  assert got.dtype == expected.dtype
  np.testing.assert_array_equal(got, expected)

@pytest.mark.parametrize("a_dtype, b_dtype", [(np.int8, np.int8), (np.int16, np.int16), (np.uint8, np.int16), (np.int16, np.int32)])
def test_integer_matmul_keeps_the_promoted_dtype(a_dtype, b_dtype):
  # NumPy's dtype and values: sums that overflow the dtype wrap as NumPy's (wrapping commutes with the sum)
  rng = np.random.default_rng(0)
  a, b = rng.integers(0, 100, (3, 40)).astype(a_dtype), rng.integers(0, 100, (40, 5)).astype(b_dtype)
  out = Tensor(a) @ Tensor(b)
  want = a @ b
  assert out.dtype.name == want.dtype.name
  np.testing.assert_array_equal(out.numpy(), want)
