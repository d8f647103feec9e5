"""tinygrad/PyTorch conformance of the package's edges: Context (TRAINING, unknown names, bad values,
no escape codes into pipes), TinyJit's arguments, Python ints beyond int32, pickling and deepcopy,
state dicts (order, PyTorch's BatchNorm, NumPy values) and error messages that are not UTF-8.
References: NumPy and PyTorch; values exact unless a tolerance is stated."""
import copy
import json
import os
import pickle
import struct
import subprocess
import sys
import numpy as np
import pytest

torch = pytest.importorskip("torch")
from kiln import Context, KilnError, Tensor, TinyJit, dtypes, nn  # noqa: E402
from kiln.nn.state import get_state_dict, load_state_dict, safe_load, safe_save  # noqa: E402

def run_python(code: str, **env) -> subprocess.CompletedProcess:
  """`code` in a new interpreter (settings are read once per process), stdout and stderr piped."""
  full_env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), **env}
  return subprocess.run([sys.executable, "-c", code], env=full_env, capture_output=True, text=True, timeout=120)

# ***** Context and settings *****

def test_context_training_sets_tensor_training():
  assert Tensor.training is False
  with Context(TRAINING=1):
    assert Tensor.training is True
    with Context(TRAINING=0): assert Tensor.training is False
    assert Tensor.training is True
  assert Tensor.training is False

  @Context(TRAINING=True)
  def dropped(x: Tensor) -> np.ndarray: return x.dropout(0.5).numpy()
  out = dropped(Tensor.ones(1000))
  # dropout is on: each element is 0 or 1/(1-p) = 2 (as torch's F.dropout in training), some of each
  assert set(np.unique(out)) == {0.0, 2.0}
  assert Tensor.training is False and np.array_equal(Tensor.ones(8).dropout(0.5).numpy(), np.ones(8))

def test_context_rejects_unknown_settings():
  with pytest.raises(KilnError, match=r"unknown setting 'DEBGU'.*DEBUG.*SPLIT_REDUCEOP"): Context(DEBGU=2)
  with pytest.raises(KilnError, match="TRAINING=yes: expected an integer"):
    with Context(TRAINING="yes"): pass
  assert Tensor.training is False

def test_context_emulated_dtypes_computes_narrow_floats_as_references_do():
  # tinygrad's EMULATED_DTYPES: float16 and bfloat16 (kiln always computes them in float registers) give
  # the results NumPy's float16 and PyTorch's bfloat16 give, bit for bit; one op rounds once either way
  rng = np.random.default_rng(3)
  a, b = rng.uniform(-100, 100, 64).astype(np.float16), rng.uniform(-100, 100, 64).astype(np.float16)
  ta, tb = torch.tensor(a, dtype=torch.float32).bfloat16(), torch.tensor(b, dtype=torch.float32).bfloat16()
  with Context(EMULATED_DTYPES="half,bfloat16"):
    x, y = Tensor(a, dtype=dtypes.half), Tensor(b, dtype=dtypes.half)
    np.testing.assert_array_equal((x * y + x).numpy(), (a * b).astype(np.float16) + a)
    xb, yb = Tensor(ta.float().numpy()).cast(dtypes.bfloat16), Tensor(tb.float().numpy()).cast(dtypes.bfloat16)
    np.testing.assert_array_equal((xb - yb).numpy(), (ta - tb).float().numpy())

def test_context_emulated_dtypes_rejects_dtypes_kiln_computes_natively():
  with pytest.raises(KilnError, match="EMULATED_DTYPES=long: kiln can emulate only float16, bfloat16 and the fp8"):
    with Context(EMULATED_DTYPES="long"): pass
  with pytest.raises(KilnError, match="EMULATED_DTYPES names 'halff', which is not a dtype"):
    with Context(EMULATED_DTYPES="fp8e4m3,halff"): pass

@pytest.mark.parametrize("name", ["DEBUG", "BEAM"])
def test_unparseable_integer_setting_is_an_error(name):
  r = run_python("from kiln import Tensor; print((Tensor([1.0, 2.0]) + 1).numpy())", **{name: "abc"})
  assert r.returncode != 0 and f"{name}=abc: expected an integer" in r.stderr, r.stderr[-2000:]

def test_no_escape_codes_into_pipes():
  r = run_python("from kiln import Tensor; print((Tensor([1.0, 2.0]) * 3).sum().numpy())", DEBUG="2")
  assert r.returncode == 0 and "*** CPU" in r.stderr, r.stderr[-2000:]
  assert "\x1b[" not in r.stderr and "\x1b[" not in r.stdout

# ***** TinyJit arguments *****

def test_tinyjit_matches_keyword_tensors_by_name():
  @TinyJit
  def f(a: Tensor, b: Tensor) -> Tensor: return (a - b).realize()
  rng = np.random.default_rng(0)
  for i in range(6):
    a, b = rng.standard_normal(4).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    out = f(a=Tensor(a), b=Tensor(b)) if i % 2 else f(b=Tensor(b), a=Tensor(a))
    np.testing.assert_allclose(out.numpy(), a - b, rtol=1e-6, atol=1e-6)

def test_tinyjit_rejects_a_changed_non_tensor_argument():
  @TinyJit
  def scale(x: Tensor, s) -> Tensor: return (x * s).realize()
  x = np.arange(3, dtype=np.float32)
  for _ in range(3): np.testing.assert_array_equal(scale(Tensor(x), 2).numpy(), x * 2)
  with pytest.raises(KilnError, match="argument 1 is 3 .* was 2 .*pass a Tensor"): scale(Tensor(x), 3)
  with pytest.raises(KilnError, match="pass a Tensor"): scale(Tensor(x), s=2)  # by name, not by position
  np.testing.assert_array_equal(scale(Tensor(x), 2).numpy(), x * 2)

# ***** Python ints beyond int32 *****

@pytest.mark.parametrize("data", [[2**40], [1, -2**40], [2**63 - 1, -2**63], [2**63], [2**64 - 1], [[3], [2**31]]])
def test_large_python_ints_keep_their_value(data):
  ref = np.array(data)  # NumPy's rule: int64, or uint64 above int64
  t = Tensor(data)
  assert t.dtype.name == ref.dtype.name and np.array_equal(t.numpy(), ref)

def test_python_ints_beyond_64_bits_are_errors():
  with pytest.raises(OverflowError, match="does not fit int64 or uint64"): Tensor([2**64])
  with pytest.raises(OverflowError, match="does not fit int64 or uint64"): Tensor([-2**63 - 1])
  with pytest.raises(OverflowError): Tensor([1]) + 2**64

def test_python_int_scalar_promotes_instead_of_wrapping():
  a = np.array([1, 2], dtype=np.int32)
  wide = a.astype(np.int64)  # the reference: the values in int64, where none of these wrap
  for big in (2**40, -2**40, 2**31):
    for got, ref in [(Tensor(a) + big, wide + big), (big - Tensor(a), big - wide), (Tensor(a) * big, wide * big),
                     (Tensor(a) < big, wide < big), (Tensor(a) == big, wide == big)]:
      assert np.array_equal(got.numpy(), ref), (big, got.numpy(), ref)
  u = np.array([10, 200], dtype=np.uint8)
  assert np.array_equal((Tensor(u) + 300).numpy(), u.astype(np.int64) + 300)
  assert np.array_equal((Tensor(u) - (-1)).numpy(), u.astype(np.int64) + 1)
  assert np.array_equal((Tensor(u) + 1).numpy(), u + 1) and (Tensor(u) + 1).dtype == dtypes.uint8  # fits: kept
  full = Tensor.full((2,), 2**62 + 1)
  assert full.dtype == dtypes.int64 and full.numpy().tolist() == [2**62 + 1] * 2  # exact, no trip through double
  assert Tensor([True, False]).where(2**40, 0).numpy().tolist() == [2**40, 0]

@pytest.mark.parametrize("name", ["uint8", "uint16", "uint32", "uint64"])
def test_unsigned_overflow_wraps(name):
  """tinygrad's test_uint_overflow: dtype.max is the exact int (as np.iinfo's), and max + 2, max * 2
  wrap as NumPy's arrays of the dtype do."""
  dt, np_dt = getattr(dtypes, name), np.dtype(name)
  assert type(dt.max) is int and dt.max == np.iinfo(np_dt).max and dt.min == 0
  v = np.array([dt.max], dtype=np_dt)
  two = np.array([2], dtype=np_dt)
  for got, want in [(Tensor(dt.max, dtype=dt) + 2, v + two), (Tensor(dt.max, dtype=dt) * 2, v * two)]:
    assert got.dtype == dt and [got.numpy().tolist()] == want.tolist()

def test_signed_limits_are_exact_ints():
  for name in ("int8", "int16", "int32", "int64"):
    dt, info = getattr(dtypes, name), np.iinfo(name)
    assert (dt.min, dt.max) == (info.min, info.max) and type(dt.max) is int
  assert (dtypes.bool.min, dtypes.bool.max) == (0, 1)
  assert dtypes.float32.max == float("inf") and dtypes.float32.min == float("-inf")  # tinygrad's

# ***** pickling, deepcopy, state dicts *****

@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "uint8", "bfloat16", "fp8e4m3", "fp8e5m2fnuz"])
def test_tensor_pickles(dtype):
  src = np.array([[0, 1.5, -2], [3, 4, 250]], dtype=np.float32)
  t = Tensor(src).cast(dtype)
  back = pickle.loads(pickle.dumps(t))
  assert back.dtype == t.dtype and back.shape == (2, 3) and back.device == t.device
  assert np.array_equal(back.float().numpy(), t.float().numpy())
  w = Tensor(src, requires_grad=True)
  assert pickle.loads(pickle.dumps(w)).requires_grad is True

class Net:
  def __init__(self):
    self.conv, self.bn, self.fc = nn.Conv2d(2, 3, 3), nn.BatchNorm(3), nn.Linear(12, 2)
  def __call__(self, x: Tensor) -> Tensor: return self.fc(self.bn(self.conv(x)).relu().flatten(1))

class TorchNet(torch.nn.Module):
  def __init__(self):
    super().__init__()
    self.conv, self.bn, self.fc = torch.nn.Conv2d(2, 3, 3), torch.nn.BatchNorm2d(3), torch.nn.Linear(12, 2)
  def forward(self, x): return self.fc(torch.relu(self.bn(self.conv(x))).flatten(1))

def test_deepcopy_of_a_model_copies_its_tensors():
  model = Net()
  clone = copy.deepcopy(model)
  x = Tensor(np.random.default_rng(1).standard_normal((2, 2, 4, 4)).astype(np.float32))
  np.testing.assert_allclose(clone(x).numpy(), model(x).numpy(), rtol=1e-6, atol=1e-6)
  before = clone.fc.weight.numpy()
  model.fc.weight.assign(model.fc.weight * 0 + 7).realize()
  assert np.array_equal(clone.fc.weight.numpy(), before), "the copy holds its own tensors"
  assert clone.fc.weight.requires_grad is True and clone.bn.running_mean.requires_grad is False

def test_state_dict_keeps_definition_order_as_torch():
  assert list(get_state_dict(Net())) == list(TorchNet().state_dict())
  assert list(get_state_dict(nn.BatchNorm(3))) == list(torch.nn.BatchNorm2d(3).state_dict())

def test_torch_state_dict_loads_with_num_batches_tracked():
  ref = TorchNet()
  rng = np.random.default_rng(2)
  x = rng.standard_normal((4, 2, 4, 4)).astype(np.float32)
  ref.train()
  for _ in range(2): ref(torch.tensor(x))  # running statistics and num_batches_tracked = 2
  ref.eval()
  model = Net()
  assert model.bn.num_batches_tracked.dtype == dtypes.int64
  load_state_dict(model, {k: Tensor(v.numpy()) for k, v in ref.state_dict().items()})
  assert model.bn.num_batches_tracked.numpy().tolist() == [2]
  with torch.no_grad(): want = ref(torch.tensor(x)).numpy()
  np.testing.assert_allclose(model(Tensor(x)).numpy(), want, rtol=1e-4, atol=1e-5)

def test_safe_save_takes_numpy_values(tmp_path):
  a = np.arange(6, dtype=np.float32).reshape(2, 3)
  safe_save({"a": a, "b": Tensor([1, 2])}, tmp_path / "m.safetensors")
  back = safe_load(tmp_path / "m.safetensors")
  assert np.array_equal(back["a"].numpy(), a) and back["b"].numpy().tolist() == [1, 2]
  with pytest.raises(TypeError, match="'c' must be a Tensor or a NumPy array, got list"):
    safe_save({"c": [1, 2]}, tmp_path / "bad.safetensors")

def test_error_with_a_non_utf8_name_keeps_its_message(tmp_path):
  header = b'{"\xff\xfe": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}'
  path = tmp_path / "bad.safetensors"
  path.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 4)
  with pytest.raises(KilnError) as info: safe_load(path)
  assert "UTF-8" in str(info.value) or "utf-8" in str(info.value).lower(), str(info.value)
  json.dumps(str(info.value))  # valid text
