"""Error kinds: kiln's errors carry the kind Python (and tinygrad, and mostly PyTorch) give them. Each kind is
both kiln.KilnError (so `except KilnError` still catches everything) and the built-in: an axis out of range is
an IndexError, a bad size or count a ValueError, an unknown mode a NotImplementedError or TypeError, an
unknown dtype name an AttributeError (tinygrad's lookup). Where PyTorch raises the same kind for the same
call, the test checks that too, as the independent reference."""
import pytest
import torch
import kiln
from kiln import KilnError, Tensor, dtypes, nn

def raises(kind, call):
  with pytest.raises(kind) as info: call()
  return info.value

def test_kinds_are_kiln_errors_and_builtins():
  for name, builtin in [("KilnIndexError", IndexError), ("KilnValueError", ValueError), ("KilnTypeError", TypeError),
                        ("KilnNotImplementedError", NotImplementedError)]:
    kind = getattr(kiln, name)
    assert issubclass(kind, KilnError) and issubclass(kind, builtin) and issubclass(kind, RuntimeError)

AXIS_OUT_OF_RANGE = [  # (kiln call, the same call in PyTorch, or None where torch 1.13 does not check it)
  (lambda: Tensor.ones(3, 4, 5, 6).sum(5), lambda: torch.ones(3, 4, 5, 6).sum(5)),
  (lambda: Tensor.ones(()).sum(1), lambda: torch.ones(()).sum(1)),
  (lambda: Tensor.ones(()).sum((1,)), lambda: torch.ones(()).sum((1,))),
  (lambda: Tensor.ones(20).cumsum(1), lambda: torch.ones(20).cumsum(1)),
  (lambda: Tensor.ones(20).cumsum(-2), lambda: torch.ones(20).cumsum(-2)),
  (lambda: Tensor.ones(()).cumsum(1), lambda: torch.ones(()).cumsum(1)),
  (lambda: Tensor.ones(()).cumprod(1), lambda: torch.ones(()).cumprod(1)),
  (lambda: Tensor.ones(5).cummax(1), lambda: torch.ones(5).cummax(1)),
  (lambda: Tensor.ones(()).cummin(1), None),
  (lambda: Tensor.ones(4, 3).squeeze(50), lambda: torch.ones(4, 3).squeeze(50)),
  (lambda: Tensor.ones(()).squeeze(-2), lambda: torch.ones(()).squeeze(-2)),
  (lambda: Tensor.stack(Tensor.ones(4, 5, 3), dim=77), lambda: torch.stack([torch.ones(4, 5, 3)], dim=77)),
  (lambda: Tensor.ones(8).unfold(1, 8, 3), lambda: torch.ones(8).unfold(1, 8, 3)),
  (lambda: Tensor.ones(()).log_softmax(1), lambda: torch.ones(()).log_softmax(1)),
]

@pytest.mark.parametrize("call,torch_call", AXIS_OUT_OF_RANGE)
def test_axis_out_of_range_is_an_index_error(call, torch_call):
  if torch_call is not None: raises(IndexError, torch_call)
  err = raises(IndexError, call)
  assert isinstance(err, KilnError) and "out of range" in str(err)

@pytest.mark.parametrize("make", [Tensor.empty, Tensor.rand, Tensor.zeros, Tensor.ones, Tensor.randn, Tensor.randint,
                                  Tensor.normal, Tensor.uniform, Tensor.scaled_uniform, Tensor.glorot_uniform,
                                  Tensor.kaiming_uniform, Tensor.kaiming_normal])
def test_negative_sizes_are_value_errors(make):
  for shape in [(-3, 2), (2, -3), (2, -3, 0)]:
    assert "dimensions must be >= 0" in str(raises(ValueError, lambda: make(*shape)))
  assert isinstance(raises(ValueError, lambda: Tensor.full((2, -3), 4)), KilnError)

def test_bad_values_are_value_errors():
  x = Tensor.ones(4, 6, 3)
  assert "at least 3 repeats" in str(raises(ValueError, lambda: x.repeat((2, 4))))
  assert "repeats must be >= 0" in str(raises(ValueError, lambda: x.repeat((2, -1, 4))))
  assert "num_classes must be >= 0" in str(raises(ValueError, lambda: Tensor([1, 2, 4]).one_hot(-1)))
  # a different element count: PyTorch's RuntimeError, tinygrad's ValueError; kiln's is both
  for shape, to in [((4, 3, 6, 6), ()), ((3, 2, 0), ()), ((3, 4), (5,))]:
    raises(RuntimeError, lambda: torch.ones(shape).reshape(to))
    err = raises(ValueError, lambda: Tensor.ones(shape).reshape(to))
    assert isinstance(err, RuntimeError) and "element counts differ" in str(err)
  # two -1s stay a plain KilnError (a RuntimeError, as PyTorch's)
  raises(RuntimeError, lambda: torch.ones(3, 4).reshape(-1, -1, 2))
  assert type(raises(RuntimeError, lambda: Tensor.ones(3, 4).reshape(-1, -1, 2))) is KilnError

def test_unknown_modes():
  raises(NotImplementedError, lambda: torch.nn.functional.pad(torch.ones(3, 3, 3), (3, 0), mode="typo"))
  assert isinstance(raises(NotImplementedError, lambda: Tensor.ones(3, 3, 3).pad((3, 0), mode="typo")), KilnError)
  x, index = Tensor.ones(3, 4), Tensor([[0, 1, 2, 0]])
  assert "reduce must be 'add' or 'multiply'" in str(raises(TypeError, lambda: x.scatter(0, index, 1.0, reduce="typo")))
  assert "use scatter_reduce" in str(raises(TypeError, lambda: x.scatter(0, index, Tensor.ones(1, 4), reduce="add")))

def test_unknown_dtype_names_are_attribute_errors():
  for bad in ["", "typo", (dtypes.int,)]:
    raises(AttributeError, lambda: Tensor([3], dtype=bad))
  raises(AttributeError, lambda: Tensor([1.0, 2.0]).sum(dtype=""))
  raises(AttributeError, lambda: Tensor([1.0, 2.0]).prod(dtype=""))

def test_other_engine_errors_stay_plain_kiln_errors():
  err = raises(KilnError, lambda: Tensor.ones(2, 3) + Tensor.ones(4))
  assert type(err) is KilnError and not isinstance(err, (IndexError, ValueError, TypeError))
  err = raises(KilnError, lambda: nn.Linear(3, 2)(Tensor.ones(4)))
  assert type(err) is KilnError

def test_scatter_src_must_have_the_inputs_dtype():
  index = torch.zeros(3, 4, 5, dtype=torch.int64)
  with pytest.raises(RuntimeError): torch.ones(3, 4, 5).half().scatter(1, index, torch.ones(3, 4, 5))
  with pytest.raises(KilnError, match="src is float32 but the input is float16"):
    Tensor.ones(3, 4, 5).half().scatter(1, Tensor(index.numpy()).cast(dtypes.int32), Tensor.ones(3, 4, 5))
