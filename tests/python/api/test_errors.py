"""Errors: every failure of the C++ engine surfaces as kiln.KilnError (a RuntimeError) carrying
kiln's message, never a crash; argument errors of the Python layer are TypeError/ValueError/
IndexError/NotImplementedError as Python and tinygrad use them."""
import numpy as np
import pytest
from kiln import KilnError, Tensor, dtypes, nn
from kiln.nn.state import safe_load

x = Tensor.ones(2, 3)

@pytest.mark.parametrize("make,message", [
  (lambda: x.reshape(4, 2), r"reshape: cannot reshape \(2, 3\) \(6 elements\) to \(4, 2\)"),
  (lambda: x + Tensor.ones(4), r"broadcast: shapes \(2, 3\) and \(4,\) are incompatible"),
  (lambda: x @ Tensor.ones(2, 3), r"matmul: shapes \(2, 3\) and \(2, 3\) do not match"),
  (lambda: x.sum(axis=2), r"sum: axis 2 is out of range for shape \(2, 3\)"),
  (lambda: x.permute(0), r"permute: expected 2 axes"),
  (lambda: x.expand(4, 3), r"expand: cannot expand \(2, 3\) to \(4, 3\)"),
  (lambda: x.shrink(((0, 3), None)), r"shrink: \[0, 3\) is out of bounds for axis 0 of size 2"),
  (lambda: Tensor.ones(2, 3, dtype=dtypes.int8).bitcast(dtypes.float32),
   r"bitcast: int8 to float32 changes the last axis, so its bytes \(3 in shape \(2, 3\)\) must be a multiple of 4"),
  (lambda: Tensor.zeros(-1), "full"),
  (lambda: Tensor.cat(x, Tensor.ones(2, 4)), "cat"),
  (lambda: x.conv2d(Tensor.ones(4, 5, 3, 3)), "conv2d"),
  (lambda: x.one_hot(3), "index tensors must be integers"),
  (lambda: Tensor.einsum("ij,jk", x), "einsum"),
  (lambda: Tensor.rand(3, dtype=dtypes.int32), "rand: expected a float dtype"),
  (lambda: Tensor([1, 2]).requires_grad_(), "only float tensors can require gradients"),
  (lambda: (x * 2).backward(), "backward: expected a tensor with one element"),
  (lambda: x.assign(Tensor.ones(2, 3, dtype=dtypes.int32)), "assign: expected a value of dtype float32"),
  (lambda: x.to("GPU"), "GPU"),
  (lambda: safe_load("/nonexistent/model.safetensors"), "/nonexistent/model.safetensors"),
  (lambda: nn.Linear(3, 2)(Tensor.ones(4)), r"Linear: expected inputs \(..., 3\), got \(4,\)"),
  (lambda: nn.BatchNorm(3)(Tensor.ones(2, 4, 5)), "BatchNorm: expected 3 channels"),
])
def test_engine_errors_are_kiln_errors(make, message):
  with pytest.raises(KilnError, match=message) as info:
    make().realize()
  assert isinstance(info.value, RuntimeError)

def test_malformed_file(tmp_path):
  bad = tmp_path / "bad.safetensors"
  bad.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json")
  with pytest.raises(KilnError, match="bad.safetensors"): safe_load(bad)

def test_python_argument_errors():
  with pytest.raises(IndexError, match="out of bounds"): x[2]
  with pytest.raises(IndexError, match="too many indices"): x[0, 0, 0]
  with pytest.raises(IndexError, match="single ellipsis"): x[..., ...]
  with pytest.raises(IndexError, match="must be integers"): x[Tensor([0.5])]
  with pytest.raises(ValueError, match="step cannot be zero"): x[::0]
  with pytest.raises(TypeError): x + "a"
  with pytest.raises(TypeError): Tensor.randint(3, high=2.5)
  with pytest.raises(ValueError, match="one per spatial axis"): Tensor.ones(1, 1, 4, 4).max_pool2d((2, 3), stride=(1, 1, 1))
  with pytest.raises(ValueError, match="padding"): Tensor.ones(1, 1, 4, 4).avg_pool2d(2, padding=(1, 1, 1))
  with pytest.raises(NotImplementedError, match="mode='mirror'"): x.pad((1, 1), mode="mirror")
  with pytest.raises(KilnError, match="less than the size"): x.pad((3, 3), mode="reflect")
  with pytest.raises(ValueError, match="reduction='avg'"): x.sparse_categorical_crossentropy(Tensor([0, 1]), reduction="avg")
  with pytest.raises(RuntimeError, match="at least one"): x.clip()

def test_engine_still_works_after_errors():
  for _ in range(3):
    with pytest.raises(KilnError): (x @ x).realize()
  np.testing.assert_array_equal((x * 2).numpy(), np.full((2, 3), 2.0, np.float32))
