"""The Tensor API around the ops: construction, data out, properties, creation functions, tinygrad's
dtype rules for Python scalars, assign, realize/schedule, autograd switches, dtypes, Device,
Context, GlobalCounters, memory. References are NumPy and tinygrad's documented behavior."""
import gc
import sys
import numpy as np
import pytest
import _kiln
from kiln import Context, Device, GlobalCounters, KilnError, Tensor, TinyJit, dtypes, getenv
from kiln.dtype import least_upper_dtype, to_dtype
from kiln.uop import Ops

NUMPY_DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
                np.float16, np.float32, np.float64]

# ***** construction and data *****

@pytest.mark.parametrize("value,dtype", [(3, dtypes.int32), (2.5, dtypes.float32), (True, dtypes.bool)])
def test_python_scalars(value, dtype):
  t = Tensor(value)
  assert t.shape == () and t.dtype == dtype and t.item() == value and type(t.item()) is type(value)

@pytest.mark.parametrize("data,dtype", [([1, 2, 3], dtypes.int32), ([1, 2.5], dtypes.float32), ([True, False], dtypes.bool),
                                        ([[1, 2], [3, 4]], dtypes.int32), ([], dtypes.float32), ([[True], [1]], dtypes.int32)])
def test_lists(data, dtype):
  t = Tensor(data)
  assert t.dtype == dtype
  assert t.tolist() == np.array(data).tolist()

@pytest.mark.parametrize("np_dtype", NUMPY_DTYPES, ids=lambda d: d.__name__)
def test_numpy_round_trip(np_dtype):
  a = (np.arange(-3, 9).reshape(3, 4) % 7).astype(np_dtype)
  t = Tensor(a)
  assert t.dtype == to_dtype(np.dtype(np_dtype).name) and t.shape == (3, 4)
  out = t.numpy()
  assert out.dtype == a.dtype
  np.testing.assert_array_equal(out, a)

def test_numpy_layouts_are_copied():
  a = np.arange(12, dtype=np.float32).reshape(3, 4)
  np.testing.assert_array_equal(Tensor(a.T).numpy(), a.T)  # not C-contiguous
  np.testing.assert_array_equal(Tensor(a[:, ::2]).numpy(), a[:, ::2])
  np.testing.assert_array_equal(Tensor(a.astype(">f4")).numpy(), a)  # big-endian
  t = Tensor(a.T)
  a[0, 1] = 100  # a.T was copied: the tensor keeps the old value
  assert t.numpy()[1, 0] == 1
  assert Tensor(np.float32(1.5)).shape == () and Tensor(np.zeros((0, 3), np.int8)).shape == (0, 3)

def test_numpy_memory_is_shared_without_a_copy():
  # C-ordered, aligned, native arrays: the tensor reads the array's memory in place (no copy), as
  # tinygrad's NPY buffers and torch.from_numpy do, so later changes to the array show in it.
  a = np.arange(12, dtype=np.float32).reshape(3, 4)
  t = Tensor(a)
  a[0, 0] = 100
  np.testing.assert_array_equal((t * 2).numpy(), a * 2)
  assert t.numpy()[0, 0] == 100
  # kiln never writes into it: assign and arithmetic make new buffers
  t.assign(t + 1).realize()
  assert a[0, 0] == 100 and t.numpy()[0, 0] == 101

def test_shared_numpy_memory_lives_as_long_as_the_tensor():
  owner = np.arange(1000, dtype=np.float32)
  base = sys.getrefcount(owner)
  tensors = [Tensor(owner) for _ in range(50)]
  assert sys.getrefcount(owner) > base  # each tensor keeps the array alive
  del tensors
  gc.collect()
  assert sys.getrefcount(owner) == base  # and lets go of it when it dies
  t = Tensor(np.arange(5, dtype=np.int32) * 3)  # a temporary array, only the tensor holds it
  gc.collect()
  np.testing.assert_array_equal(t.numpy(), [0, 3, 6, 9, 12])

def test_dtype_argument_converts():
  assert Tensor([1, 2], dtype=dtypes.float32).numpy().dtype == np.float32
  assert Tensor(np.array([1.7, -2.2]), dtype="int32").tolist() == [1, -2]
  t = Tensor([1.5, 2.25], dtype=dtypes.bfloat16)
  assert t.dtype == dtypes.bfloat16 and t.tolist() == [1.5, 2.25]
  assert Tensor(b"\x01\x02").dtype == dtypes.uint8

def test_bad_data():
  with pytest.raises(TypeError): Tensor("abc")
  with pytest.raises(ValueError): Tensor([[1, 2], [3]])
  with pytest.raises(KilnError): Tensor(np.array([1 + 2j]))

def test_readback():
  t = Tensor([[1.0, 2.0], [3.0, 4.0]])
  assert t.tolist() == [[1.0, 2.0], [3.0, 4.0]]
  assert Tensor(7).tolist() == 7
  assert t.sum().item() == 10.0
  with pytest.raises(ValueError): t.item()
  assert t.data().tolist() == [[1.0, 2.0], [3.0, 4.0]]

def test_properties():
  t = Tensor.ones(2, 3, 4, dtype=dtypes.float16)
  assert t.shape == (2, 3, 4) and isinstance(t.shape, tuple)
  assert (t.ndim, t.numel(), t.element_size(), t.nbytes()) == (3, 24, 2, 48)
  assert t.device == Device.DEFAULT and len(t) == 2 and [r.shape for r in t] == [(3, 4), (3, 4)]
  assert "(2, 3, 4)" in repr(t) and "float16" in repr(t)
  with pytest.raises(TypeError): bool(t)
  with pytest.raises(TypeError): len(Tensor(1))
  assert {t: 1}[t] == 1  # hashable by identity although == builds a tensor

# ***** creation *****

def test_shape_argument_forms():
  for make in (Tensor.zeros, Tensor.ones, Tensor.empty, Tensor.rand, Tensor.randn):
    assert make(2, 3).shape == make((2, 3)).shape == make([2, 3]).shape == (2, 3)
  assert Tensor.zeros(()).shape == ()

def test_constant_creation():
  assert Tensor.zeros(2, dtype=dtypes.int8).tolist() == [0, 0] and Tensor.zeros(2).dtype == dtypes.float32
  assert Tensor.full((2, 2), 7).dtype == dtypes.int32 and Tensor.full((2,), 1.5).tolist() == [1.5, 1.5]
  assert Tensor.full((2,), False).dtype == dtypes.bool
  x = Tensor.ones(2, 3, dtype=dtypes.int16)
  assert x.zeros_like().dtype == dtypes.int16 and x.full_like(4).tolist() == [[4] * 3] * 2
  assert x.ones_like(dtype=dtypes.float32).dtype == dtypes.float32 and x.empty_like().shape == (2, 3)

@pytest.mark.parametrize("args", [(5,), (2, 9), (2, 9, 3), (10, 2, -3), (0.5, 3), (1, 2, 0.25)], ids=str)
def test_arange(args):
  t = Tensor.arange(*args)
  np.testing.assert_allclose(t.numpy(), np.arange(*args))
  assert t.dtype == (dtypes.float32 if any(isinstance(a, float) for a in args) else dtypes.int32)

def test_linspace_and_eye():
  np.testing.assert_allclose(Tensor.linspace(-1, 2, 7).numpy(), np.linspace(-1, 2, 7), rtol=1e-6)
  np.testing.assert_array_equal(Tensor.eye(3).numpy(), np.eye(3))
  np.testing.assert_array_equal(Tensor.eye(2, 4).numpy(), np.eye(2, 4))
  assert Tensor.eye(2, dtype=dtypes.int32).dtype == dtypes.int32

def test_random_creation():
  Tensor.manual_seed(1)
  r = Tensor.rand(4000).numpy()
  assert 0 <= r.min() and r.max() < 1 and abs(r.mean() - 0.5) < 0.03
  n = Tensor.randn(4000).numpy()
  assert abs(n.mean()) < 0.08 and abs(n.std() - 1) < 0.08
  i = Tensor.randint(4000, low=-3, high=5)
  assert i.dtype == dtypes.int32 and set(np.unique(i.numpy())) == set(range(-3, 5))
  u = Tensor.uniform(2000, low=2, high=3).numpy()
  assert 2 <= u.min() and u.max() < 3
  m = Tensor.normal(4000, mean=5, std=0.5).numpy()
  assert abs(m.mean() - 5) < 0.05 and abs(m.std() - 0.5) < 0.05
  bound = np.sqrt(3) * np.sqrt(2 / (1 + 0.01 ** 2)) / np.sqrt(20)
  assert np.abs(Tensor.kaiming_uniform(30, 4, 5).numpy()).max() <= bound
  assert np.abs(Tensor.glorot_uniform(30, 20).numpy()).max() <= np.sqrt(6 / 50)
  assert np.abs(Tensor.scaled_uniform(30, 20).numpy()).max() <= 600 ** -0.5
  assert Tensor.kaiming_normal(3, 4).shape == (3, 4) and Tensor.rand(2, dtype=dtypes.float16).dtype == dtypes.float16
  assert Tensor.rand(3, requires_grad=True).requires_grad
  assert Tensor.ones(2, 2).rand_like().shape == (2, 2) and Tensor.ones(3).randn_like().dtype == dtypes.float32

def test_manual_seed_reproduces():
  Tensor.manual_seed(42)
  a = Tensor.rand(5).tolist()
  Tensor.manual_seed(42)
  assert Tensor.rand(5).tolist() == a

# ***** dtype rules (tinygrad's) *****

@pytest.mark.parametrize("tensor_dtype,scalar,expected", [
  (dtypes.float32, 2, dtypes.float32), (dtypes.float32, 2.5, dtypes.float32), (dtypes.float16, 2.0, dtypes.float16),
  (dtypes.float64, 1, dtypes.float64), (dtypes.int32, 2, dtypes.int32), (dtypes.int32, 2.5, dtypes.float32),
  (dtypes.int8, 1, dtypes.int8), (dtypes.uint8, 3, dtypes.uint8), (dtypes.bool, 1, dtypes.int32),
  (dtypes.bool, True, dtypes.bool), (dtypes.int64, True, dtypes.int64), (dtypes.bool, 0.5, dtypes.float32)])
def test_python_scalar_promotion(tensor_dtype, scalar, expected):
  t = Tensor.ones(3, dtype=tensor_dtype)
  assert (t * scalar).dtype == expected and (scalar * t).dtype == expected
  assert (t * np.array(scalar)[()]).dtype == expected  # NumPy scalars count as Python's

def test_tensor_promotion_and_division():
  assert (Tensor([1], dtype=dtypes.int8) + Tensor([1.0], dtype=dtypes.float16)).dtype == dtypes.float16
  assert (Tensor([1], dtype=dtypes.uint8) + Tensor([1], dtype=dtypes.int8)).dtype == dtypes.int16
  assert least_upper_dtype(dtypes.int64, dtypes.float16) == dtypes.float16
  assert (Tensor([3]) / 2).dtype == dtypes.float32 and (Tensor([3]) / 2).tolist() == [1.5]
  assert (2 - Tensor([3])).tolist() == [-1] and (1 / Tensor([4.0])).tolist() == [0.25]
  assert (Tensor([1, 2]) < 2).dtype == dtypes.bool and (2 > Tensor([1, 2])).tolist() == [True, False]
  assert (Tensor([1.0, 2.0]) == Tensor([1.0, 3.0])).tolist() == [True, False]

# ***** in place, realize, schedule *****

def test_assign_and_inplace_operators():
  t = Tensor([1.0, 2.0, 3.0])
  alias = t
  t += 1
  assert t is alias and t.tolist() == [2.0, 3.0, 4.0]
  t *= 2
  t -= 1
  t /= 2
  assert t.tolist() == [1.5, 2.5, 3.5]
  assert t.assign(Tensor([0.0, 1.0, 2.0])) is t and t.tolist() == [0.0, 1.0, 2.0]
  t.assign(5.0)  # broadcast, as tinygrad
  assert t.tolist() == [5.0] * 3
  with pytest.raises(KilnError, match="dtype"): t.assign(Tensor([1, 2, 3]))
  with pytest.raises(KilnError): t.assign(Tensor([1.0, 2.0]))
  i = Tensor([1, 2])
  with pytest.raises(KilnError): i += 0.5  # int32 += float gives float32: a dtype change

def test_realize_and_schedule():
  a, b = Tensor([1.0, 2.0]), Tensor([3.0, 4.0])
  c = (a * b + 1).relu()
  items = c.schedule()
  assert len(items) == 1 and "float32" in str(items[0]) and items[0].name and len(items[0].buffers) == 3
  assert items[0].ast.op == Ops.SINK and "STORE" in repr(items[0].ast)
  assert c.uop.op == Ops.WHERE and c.uop.shape == (2,) and c.uop.dtype == dtypes.float32 and "MUL" in repr(c.uop)
  assert c.realize() is c and c.schedule() == []
  d, e = a + 1, a * 2
  d.realize(e)
  assert d.schedule() == [] and e.schedule() == []
  assert (a + 1).contiguous().tolist() == [2.0, 3.0] and a.clone().tolist() == [1.0, 2.0]

def test_cast_and_bitcast():
  assert Tensor([1.7, -1.7]).cast(dtypes.int32).tolist() == [1, -1]
  assert Tensor([1.0]).bitcast(dtypes.int32).tolist() == [0x3F800000]
  assert Tensor([0, 2]).bool().tolist() == [False, True] and Tensor([1]).float().dtype == dtypes.float32
  assert Tensor([1.0]).half().dtype == dtypes.float16 and Tensor([1]).long().dtype == dtypes.int64
  assert Tensor([True]).int().dtype == dtypes.int32 and Tensor([1]).double().dtype == dtypes.float64

# ***** autograd and switches *****

def test_autograd_basics():
  x = Tensor([1.0, 2.0, 3.0], requires_grad=True)
  assert x.requires_grad and x.grad is None
  # tinygrad's three states: None (not said), False (said no), True
  assert Tensor([1.0]).requires_grad is None and Tensor([1.0], requires_grad=False).requires_grad is False
  assert (x * 2).requires_grad is True and (Tensor([1.0]) * 2).requires_grad is None
  loss = (x * x).sum()
  assert loss.backward() is loss
  assert x.grad.tolist() == [2.0, 4.0, 6.0]
  (x * 3).sum().backward()  # accumulates
  assert x.grad.tolist() == [5.0, 7.0, 9.0]
  x.grad = None
  (dx,) = (x * x).sum().gradient(x)
  assert dx.tolist() == [2.0, 4.0, 6.0] and x.grad is None
  assert (x.detach() * x).sum().gradient(x)[0].tolist() == [1.0, 2.0, 3.0]
  w = Tensor([2.0])
  w.requires_grad = True
  assert w.requires_grad and Tensor([1.0]).requires_grad_().requires_grad

def test_training_and_no_grad_switch_the_engine():
  assert Tensor.training is False and _kiln.get_training() is False
  Tensor.training = True
  try: assert _kiln.get_training() is True and Tensor.training is True
  finally: Tensor.training = False

  @Tensor.train()
  def in_training(): return Tensor.training
  assert in_training() is True and Tensor.training is False
  with Tensor.train(False): assert Tensor.training is False

  x = Tensor([1.0], requires_grad=True)
  with Tensor.test():
    assert Tensor.no_grad is True and _kiln.get_no_grad() is True
    assert not (x * 2).requires_grad
  assert Tensor.no_grad is False and (x * 2).requires_grad

# ***** dtypes, devices, settings, counters *****

def test_dtypes():
  assert dtypes.float32.itemsize == 4 and dtypes.bfloat16.itemsize == 2 and dtypes.bool.itemsize == 1
  assert dtypes.float32.name == "float32" and repr(dtypes.int8) == "dtypes.int8"
  assert dtypes.float == dtypes.float32 and dtypes.half == dtypes.float16 and dtypes.long == dtypes.int64
  assert dtypes.default_float == dtypes.float32 and dtypes.default_int == dtypes.int32
  assert dtypes.float32 != dtypes.float64 and len({dtypes.float32, dtypes.float, dtypes.int32}) == 2
  assert dtypes.is_float(dtypes.float16) and dtypes.is_int(dtypes.uint8) and dtypes.is_unsigned(dtypes.uint8)
  assert not dtypes.is_int(dtypes.bool) and len(dtypes.fields()) == 17 and to_dtype("half") == dtypes.float16
  assert dtypes.max(dtypes.uint8) == 255 and dtypes.min(dtypes.int8) == -128

def test_device():
  assert Device.DEFAULT == "CPU" and Device.canonicalize("cpu:0") == "CPU" and "CPU" in Device.get_available_devices()
  with pytest.raises(KilnError, match="NOPE"): Device.DEFAULT = "NOPE"
  Device.DEFAULT = "cpu"
  assert Device.DEFAULT == "CPU" and Tensor([1]).to("cpu").device == "CPU"
  cpu = Device["cpu"]
  assert cpu.device == "CPU" and Device["CPU:0"].device == "CPU" and cpu.max_threads >= 1 and cpu.language == "C"
  cpu.synchronize()
  with pytest.raises(KilnError, match="NOPE"): Device["NOPE"]

def test_context_overrides_settings():
  assert _kiln.getenv_int("LOCALS", 0) == 0
  with Context(LOCALS=3, NOOPT=True):
    assert _kiln.getenv_int("LOCALS", 0) == 3 and _kiln.getenv_int("NOOPT", 0) == 1
    with Context(LOCALS=5): assert _kiln.getenv_int("LOCALS", 0) == 5
    assert _kiln.getenv_int("LOCALS", 0) == 3
  assert _kiln.getenv_int("LOCALS", 0) == 0

  @Context(LOCALS=7)
  def read(): return _kiln.getenv_int("LOCALS", 0)
  assert read() == 7

def test_getenv(monkeypatch):
  monkeypatch.setenv("KILN_TEST_GETENV", "12")
  assert getenv("KILN_TEST_GETENV") == 12 and getenv("KILN_TEST_GETENV_MISSING", "x") == "x"

def test_global_counters():
  GlobalCounters.reset()
  assert GlobalCounters.kernel_count == 0
  t = (Tensor([1.0, 2.0]) * 3).realize()
  assert GlobalCounters.kernel_count == 1 and GlobalCounters.global_ops > 0 and GlobalCounters.mem_used >= t.nbytes()
  assert GlobalCounters.mem_peak >= GlobalCounters.mem_used

def test_tinyjit_returns_realized_tensors():
  @TinyJit
  def step(x): return x * 2, x + 1
  a, b = step(Tensor([1.0]))
  assert a.schedule() == [] and b.schedule() == [] and a.tolist() == [2.0]

def test_dropped_tensors_free_their_memory():
  (Tensor([1.0, 2.0, 3.0]) * 2 + 1).realize()  # compile first
  gc.collect()
  before = GlobalCounters.mem_used
  for _ in range(10_000):
    t = Tensor([1.0, 2.0, 3.0])
    u = (t * 2 + 1).realize()
    del t, u
  gc.collect()
  assert GlobalCounters.mem_used <= before

@pytest.mark.parametrize("index", [1, -1, (slice(None), 2), (slice(1, None), slice(None, None, 2)), (Ellipsis, -1),
                                   (slice(None, None, -1), 0), ([0, 2], slice(1, 3))], ids=str)
def test_setitem_matches_numpy(index):
  want = np.arange(12, dtype=np.float32).reshape(3, 4)
  t = Tensor(want.copy())
  value = np.full(np.empty((3, 4))[index].shape, -3.5, np.float32)
  want[index] = value
  t[index] = Tensor(value) if value.ndim else float(value)
  assert np.array_equal(t.numpy(), want)
  t[index] = 9  # a Python scalar broadcasts
  want[index] = 9
  assert np.array_equal(t.numpy(), want)

def test_shrink_to_and_pad_to_against_numpy():
  """tinygrad's shrink_to / pad_to (its test_tensor cases): each axis cut or padded at its end, None keeps one."""
  a = np.arange(32, dtype=np.int32).reshape(4, 8)
  t = Tensor(a)
  np.testing.assert_equal(t.shrink_to(2, 2).numpy(), a[:2, :2])
  np.testing.assert_equal(t.shrink_to(None, 3).numpy(), a[:, :3])
  np.testing.assert_equal(t.shrink_to((4, 8)).numpy(), a)
  np.testing.assert_equal(Tensor.arange(32).shrink_to(16).numpy(), np.arange(32)[:16])
  np.testing.assert_equal(t.pad_to(6, None).numpy(), np.pad(a, ((0, 2), (0, 0))))
  np.testing.assert_equal(t.pad_to([5, 11], value=-1).numpy(), np.pad(a, ((0, 1), (0, 3)), constant_values=-1))
  np.testing.assert_equal(Tensor([1, 2]).pad_to(None, value=5).numpy(), [1, 2])  # nothing to pad: the fill is unused
  f = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
  np.testing.assert_allclose(Tensor(f).pad_to(3, 4, value=0.5).numpy(), np.pad(f, ((0, 1), (0, 1)), constant_values=0.5))
  for bad in (lambda: t.shrink_to(2), lambda: t.shrink_to(2, 2, 2), lambda: Tensor([1, 2]).pad_to(2, 3),
              lambda: Tensor([[1, 2]]).pad_to(3)):
    with pytest.raises(ValueError, match="expected"): bad()
  with pytest.raises(KilnError, match=r"shrink_to: size 5 for axis 0 of shape \(4, 8\) must be between 0 and 4"):
    t.shrink_to(5, None)
  with pytest.raises(KilnError, match=r"pad_to: size 7 for axis 1 of shape \(4, 8\) must be at least 8"): t.pad_to(4, 7)

def test_from_blob_reads_memory_at_an_address():
  """tinygrad's Tensor.from_blob: the memory is read in place (a later change shows) and never written."""
  a = np.arange(12, dtype=np.float32).reshape(3, 4) / 4
  t = Tensor.from_blob(a.ctypes.data, (3, 4), dtype=dtypes.float32)
  assert t.shape == (3, 4) and t.dtype == dtypes.float32
  np.testing.assert_equal(t.numpy(), a)
  a[0, 0] = 100.0
  np.testing.assert_equal((t * 2).numpy(), a * 2)
  t.assign(t + 1).realize()
  assert a[0, 0] == 100.0 and a[2, 3] == 11 / 4
  i = np.array([-3, 70000, 5], dtype=np.int64)
  np.testing.assert_equal(Tensor.from_blob(i.ctypes.data, (3,), dtype=dtypes.int64).numpy(), i)
  raw = np.zeros(13, dtype=np.uint8)  # a float32 at an odd address: copied in
  raw[1:13] = np.array([1.5, -2.0, 7.25], dtype=np.float32).view(np.uint8)
  np.testing.assert_equal(Tensor.from_blob(raw.ctypes.data + 1, (3,)).numpy(), [1.5, -2.0, 7.25])
  with pytest.raises(KilnError, match="from_blob: null pointer"): Tensor.from_blob(0, (2,))

def test_cat_of_zero_dim_tensors_is_an_index_error_and_cumsum_of_one_works():
  """tinygrad's test_cat: Tensor(3.14).cat(Tensor(3.14)) raises IndexError; a 0-d cumsum is itself (torch's)."""
  torch = pytest.importorskip("torch")
  a = Tensor(3.14)
  with pytest.raises(IndexError, match=r"zero-dimensional tensor \(at position 0\) cannot be concatenated"): a.cat(a)
  with pytest.raises(IndexError, match=r"at position 1"): Tensor.cat(Tensor([1.0]), a)
  for axis in (0, -1):
    got, want = a.cumsum(axis), torch.cumsum(torch.tensor(3.14), axis)
    assert got.shape == tuple(want.shape) == ()
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-7)

def test_is_param_is_requires_grad_not_false():
  # tinygrad's newer spelling: everything may be trained but what said requires_grad=False
  a, b = Tensor([1.0]), Tensor([2.0], requires_grad=False)
  assert a.is_param is True and b.is_param is False and Tensor([1.0], requires_grad=True).is_param is True
  assert a.is_param_(False) is a and a.is_param is False and a.requires_grad is False
  assert a.is_param_(True).is_param is True and a.requires_grad is None  # trainable again, not yet turned on
  c = Tensor([3.0], requires_grad=True).is_param_()
  assert c.requires_grad is True
  # an optimizer trains the params and leaves the rest alone
  from kiln import nn
  opt = nn.optim.SGD([Tensor([1.0]), Tensor([2.0]).is_param_(False)], lr=0.1)
  assert len(opt.params) == 1 and opt.params[0].tolist() == [1.0]

@pytest.mark.skipif("CL" not in Device.get_available_devices(), reason="needs a second device")
def test_to_in_place_moves_every_handle_and_the_grad():
  from kiln import nn
  data = np.array([[1.0, -2.0, 3.0]], np.float32)
  w = Tensor(data.copy())
  opt = nn.optim.Adam([w])
  state = opt.m[0]  # a handle of the optimizer's own tensor
  assert state.to_("CL") is state and opt.m[0].device == "CL" and opt.m[0].tolist() == [[0.0, 0.0, 0.0]]
  (w * w).sum().backward()
  w.to_("cl")
  assert opt.params[0].device == "CL" and w.grad.device == "CL"
  np.testing.assert_array_equal(w.numpy(), data)
  np.testing.assert_array_equal(w.grad.numpy(), 2 * data)  # d sum(w^2) / dw, moved along
  with pytest.raises(KilnError, match="NOPE"): w.to_("NOPE")
  assert w.device == "CL"

@pytest.mark.skipif("CL" not in Device.get_available_devices(), reason="needs a second device")
def test_clone_onto_a_device_copies_the_grad_too():
  data = np.array([0.5, -1.0, 4.0], np.float32)
  x = Tensor(data.copy())
  (x * x).sum().backward()
  c = x.clone(device="CL")
  assert c.device == "CL" and c.grad.device == "CL" and x.device == "CPU"
  np.testing.assert_array_equal(c.numpy(), data)
  np.testing.assert_array_equal(c.grad.numpy(), 2 * data)
  c.assign(Tensor([0.0, 0.0, 0.0], device="CL"))  # a new buffer: the source keeps its data
  np.testing.assert_array_equal(x.numpy(), data)
