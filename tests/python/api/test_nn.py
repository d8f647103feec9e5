"""kiln.nn against PyTorch: layers (forward, input and weight gradients, running statistics),
optimizers (parameter trajectories), state dicts and safetensors files, datasets. float32
tolerances: rtol 1e-5 / atol 1e-6 unless stated."""
import gzip
import os
import struct
import numpy as np
import pytest

torch = pytest.importorskip("torch")
from kiln import KilnError, Tensor, TinyJit, dtypes, nn  # noqa: E402
from kiln.extra.lr_scheduler import CosineAnnealingLR, OneCycleLR  # noqa: E402
from kiln.nn.state import get_parameters, get_state_dict, load_state_dict, safe_load, safe_load_metadata, safe_save  # noqa: E402

def to_torch(t: Tensor): return torch.tensor(t.numpy())

def copy_params(layer, torch_layer):
  """The kiln layer's tensors into the torch layer, by the same attribute names."""
  with torch.no_grad():
    for name, t in get_state_dict(layer).items():
      if (tp := getattr(torch_layer, name, None)) is not None: tp.copy_(to_torch(t).reshape(tp.shape))

def check_layer(layer, torch_layer, x_shape, rtol=1e-5, atol=1e-6, x_dtype=np.float32, low=-2, high=2):
  copy_params(layer, torch_layer)
  rng = np.random.default_rng(0)
  xn = rng.integers(low, high, x_shape).astype(x_dtype) if np.issubdtype(x_dtype, np.integer) else rng.uniform(low, high, x_shape).astype(x_dtype)
  x, xt = Tensor(xn, requires_grad=not np.issubdtype(x_dtype, np.integer)), torch.tensor(xn, requires_grad=not np.issubdtype(x_dtype, np.integer))
  out, out_t = layer(x), torch_layer(xt)
  w = rng.uniform(-1, 1, out_t.shape).astype(np.float32)
  (out * Tensor(w)).sum().backward()
  (out_t * torch.tensor(w)).sum().backward()
  np.testing.assert_allclose(out.numpy(), out_t.detach().numpy(), rtol=rtol, atol=atol)
  if x.requires_grad: np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=rtol * 10, atol=atol * 10)
  for name, p in get_state_dict(layer).items():
    tp = getattr(torch_layer, name, None)
    if p.grad is not None and isinstance(tp, torch.nn.Parameter):
      np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=rtol * 10, atol=atol * 10, err_msg=name)

def test_linear():
  layer = nn.Linear(5, 4)
  assert layer.weight.shape == (4, 5) and layer.bias.shape == (4,) and layer.weight.requires_grad
  assert np.abs(layer.weight.numpy()).max() <= 1 / np.sqrt(5)
  check_layer(layer, torch.nn.Linear(5, 4), (3, 5))
  assert nn.Linear(5, 4, bias=False).bias is None

def test_conv_layers():
  conv = nn.Conv2d(3, 6, 3, stride=2, padding=1, groups=3)
  assert (conv.stride, conv.padding, conv.groups) == (2, 1, 3) and conv.weight.shape == (6, 1, 3, 3)
  check_layer(conv, torch.nn.Conv2d(3, 6, 3, stride=2, padding=1, groups=3), (2, 3, 7, 8), rtol=1e-4, atol=1e-5)
  check_layer(nn.Conv2d(2, 4, (3, 3), dilation=2, bias=False), torch.nn.Conv2d(2, 4, 3, dilation=2, bias=False), (1, 2, 9, 9),
              rtol=1e-4, atol=1e-5)
  check_layer(nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1),
              torch.nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1), (2, 4, 5, 4), rtol=1e-4, atol=1e-5)

def test_conv_layers_per_axis():
  conv = nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2)
  assert conv.kernel_size == (3, 2) and conv.stride == (2, 1) and conv.weight.shape == (6, 2, 3, 2)
  assert np.abs(conv.weight.numpy()).max() <= 1 / np.sqrt(2 * 3 * 2) and conv.weight.requires_grad
  check_layer(conv, torch.nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2), (2, 4, 7, 8),
              rtol=1e-4, atol=1e-5)
  assert set(get_state_dict(conv)) == {"weight", "bias"}
  check_layer(nn.Conv2d(2, 3, (3,), padding=1, bias=False), torch.nn.Conv1d(2, 3, 3, padding=1, bias=False), (2, 2, 9),
              rtol=1e-4, atol=1e-5)
  check_layer(nn.ConvTranspose2d(4, 6, (2, 3), stride=(2, 1), padding=(0, 1), output_padding=(1, 0)),
              torch.nn.ConvTranspose2d(4, 6, (2, 3), stride=(2, 1), padding=(0, 1), output_padding=(1, 0)), (2, 4, 5, 4),
              rtol=1e-4, atol=1e-5)

def test_batchnorm_training_and_eval():
  bn, bn_t = nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3)
  assert nn.BatchNorm2d is nn.BatchNorm
  copy_params(bn, bn_t)
  with Tensor.train():
    for seed in range(2):
      xn = np.random.default_rng(seed).uniform(-2, 3, (4, 3, 5, 2)).astype(np.float32)
      np.testing.assert_allclose(bn(Tensor(xn)).numpy(), bn_t(torch.tensor(xn)).detach().numpy(), rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(bn.running_mean.numpy(), bn_t.running_mean.numpy(), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(bn.running_var.numpy(), bn_t.running_var.numpy(), rtol=1e-5, atol=1e-6)
  assert bn.num_batches_tracked.item() == 2
  bn_t.eval()
  check_layer(bn, bn_t, (2, 3, 4, 4))
  assert len(get_parameters(bn)) == len(get_state_dict(bn)) == 5  # tinygrad's: the optimizer tells them apart
  assert bn.weight.requires_grad is True and bn.running_mean.requires_grad is False

def test_norms_and_embedding():
  check_layer(nn.LayerNorm((4, 5)), torch.nn.LayerNorm((4, 5)), (3, 4, 5), rtol=1e-4, atol=1e-5)
  check_layer(nn.LayerNorm(5, elementwise_affine=False), torch.nn.LayerNorm(5, elementwise_affine=False), (3, 5), rtol=1e-4, atol=1e-5)
  check_layer(nn.GroupNorm(2, 6), torch.nn.GroupNorm(2, 6), (3, 6, 4), rtol=1e-4, atol=1e-5)
  check_layer(nn.Embedding(10, 4), torch.nn.Embedding(10, 4), (2, 3), x_dtype=np.int64, low=0, high=10)
  rms = nn.RMSNorm(5)
  x = np.random.default_rng(1).uniform(-2, 2, (3, 5)).astype(np.float32)
  expected = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6)
  np.testing.assert_allclose(rms(Tensor(x)).numpy(), expected, rtol=1e-5, atol=1e-6)

def test_layer_attributes_are_the_layers_tensors():
  layer = nn.Linear(3, 2)
  w = layer.weight
  w.assign(Tensor.ones(2, 3))  # one tensor: the layer sees it
  assert layer.weight.tolist() == [[1.0] * 3] * 2
  layer.bias = Tensor([5.0, 6.0])  # replaces the handle, as tinygrad's attribute assignment
  assert layer(Tensor([[1.0, 1.0, 1.0]])).tolist() == [[8.0, 9.0]]
  with pytest.raises(AttributeError): layer.nope

class ScaledLinear(nn.Linear):  # a Python subclass may add attributes, which are state too
  def __init__(self):
    super().__init__(2, 2)
    self.scale = Tensor([3.0])
  def __call__(self, x): return super().__call__(x) * self.scale

def test_layer_subclass():
  layer = ScaledLinear()
  assert set(get_state_dict(layer)) == {"weight", "bias", "scale"}
  assert layer(Tensor.zeros(1, 2)).shape == (1, 2)

def quadratic_steps(make_kiln, make_torch, steps=3):
  """Parameters after `steps` optimizer steps on a loss with a different gradient each step."""
  w0 = np.random.default_rng(0).uniform(-1, 1, (3, 4)).astype(np.float32)
  target = np.random.default_rng(1).uniform(-1, 1, (3, 4)).astype(np.float32)
  w, wt = Tensor(w0, requires_grad=True), torch.tensor(w0, requires_grad=True)
  opt, opt_t = make_kiln([w]), make_torch([wt])
  for _ in range(steps):
    opt.zero_grad()
    opt_t.zero_grad()
    ((w - Tensor(target)) ** 2 * w.abs()).sum().backward()
    ((wt - torch.tensor(target)) ** 2 * wt.abs()).sum().backward()
    opt.step()
    opt_t.step()
  return w.numpy(), wt.detach().numpy()

@pytest.mark.parametrize("name,make_kiln,make_torch", [
  ("sgd", lambda p: nn.optim.SGD(p, lr=0.1), lambda p: torch.optim.SGD(p, lr=0.1)),
  ("sgd_momentum", lambda p: nn.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=0.01),
   lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=0.01)),
  ("sgd_nesterov", lambda p: nn.optim.SGD(p, lr=0.05, momentum=0.8, nesterov=True),
   lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.8, nesterov=True)),
  ("adam", lambda p: nn.optim.Adam(p, lr=0.01), lambda p: torch.optim.Adam(p, lr=0.01)),
  ("adamw", lambda p: nn.optim.AdamW(p, lr=0.01, weight_decay=0.1), lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1)),
])
def test_optimizers_match_torch(name, make_kiln, make_torch):
  got, expected = quadratic_steps(make_kiln, make_torch)
  np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)

def test_optimizer_state_and_learning_rate():
  w = Tensor([1.0, 2.0])  # the optimizer turns requires_grad on
  opt = nn.optim.SGD([w], lr=0.5)
  assert w.requires_grad and len(opt.params) == 1 and opt.lr.tolist() == [0.5]
  (w * w).sum().backward()
  opt.lr.assign(Tensor([0.25]))  # a new rate in the same tensor: no new kernel
  opt.step()
  assert w.tolist() == [0.5, 1.0]
  opt.zero_grad()
  (w * 2).sum().backward()
  updated = opt.schedule_step()  # lazy until realized
  assert any(t.schedule() for t in updated)
  updated[0].realize(*updated[1:])
  assert w.tolist() == [0.0, 0.5]
  assert isinstance(nn.optim.LAMB([Tensor([1.0])]), nn.optim.Optimizer)

def test_lr_schedulers_follow_their_formulas():
  # tinygrad's OneCycleLR, linear: warm up from max/div over pct_start of the steps, then decay to
  # max/(div*final_div); the rate is set at construction (step 0) and after each step()
  opt = nn.optim.Adam([Tensor([1.0, 2.0])])
  s = OneCycleLR(opt, max_lr=0.01, div_factor=25, final_div_factor=1e4, total_steps=100, pct_start=0.25)
  initial, peak, final = 0.01 / 25, 0.01, 0.01 / 25 / 1e4
  def want(t): return initial + (peak - initial) * t / 25 if t < 25 else peak + (final - peak) * (t - 25) / 75
  rates = [opt.lr.item()]
  for _ in range(100):
    s.step()
    rates.append(opt.lr.item())
  np.testing.assert_allclose(rates, [want(t) for t in range(101)], rtol=1e-6)
  assert s.epoch_counter == 100
  # cosine annealing from the optimizer's rate to eta_min over T_max steps
  opt = nn.optim.SGD([Tensor([1.0])], lr=0.1)
  c = CosineAnnealingLR(opt, T_max=10, eta_min=0.001)
  for t in range(1, 11):
    c.step()
    assert opt.lr.item() == pytest.approx(0.001 + 0.5 * (0.1 - 0.001) * (1 + np.cos(t / 10 * np.pi)), rel=1e-6)
  with pytest.raises(ValueError, match="only linear"): OneCycleLR(opt, 0.1, 25, 1e4, 10, 0.25, anneal_strategy="cos")

def test_optimizer_trains_parameters_and_keeps_buffers_realized():
  model = Model()
  frozen = Tensor([1.0, 2.0, 3.0], requires_grad=False)  # explicitly not a parameter
  opt = nn.optim.SGD(get_parameters(model) + [frozen], lr=0.1)
  assert len(opt.params) == 2 * 4 + 2 + 1 and len(opt.buffers) == 2 * 3 + 1
  assert model.scale.requires_grad  # None before: the optimizer turned it on, as tinygrad's
  x = Tensor(np.random.default_rng(0).uniform(-1, 1, (2, 2, 5, 5)).astype(np.float32))
  with Tensor.train():
    h = sum(b.bn(b.conv(x)) for b in model.blocks)
    loss = (model.heads["cls"](h.mean((2, 3))) * model.scale).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
  bn = model.blocks[0].bn
  assert bn.running_mean.schedule() == [] and bn.num_batches_tracked.item() == 1  # realized by the step
  assert not np.allclose(bn.running_mean.numpy(), 0) and frozen.tolist() == [1.0, 2.0, 3.0]

def test_optimizer_parameters_made_from_constants():
  # equal constants are one graph node in kiln; the optimizer gives each parameter its own buffer
  a, b = Tensor.zeros(3), Tensor.zeros(3)
  c, d = Tensor.ones(2).contiguous(), Tensor.ones(2).contiguous()
  c.realize()  # d is realized with it: both read one buffer
  opt = nn.optim.SGD([a, b, c, d], lr=1.0)
  opt.zero_grad()
  ((a * Tensor([1.0, 2.0, 3.0])).sum() + (b * 10).sum() + (c * 2).sum() + (d * 3).sum()).backward()
  opt.step()
  assert a.tolist() == [-1.0, -2.0, -3.0] and b.tolist() == [-10.0] * 3 and c.tolist() == [-1.0] * 2 and d.tolist() == [-2.0] * 2

def test_tinyjit_realizes_the_step_with_the_outputs():
  w = Tensor([1.0, 2.0], requires_grad=True)
  opt = nn.optim.SGD([w], lr=0.5)
  pending = []

  @TinyJit
  def step():
    opt.zero_grad()
    loss = (w * w).sum().backward()
    opt.step()
    pending.append(w.schedule())  # the update is not realized yet: it runs with the loss
    return loss
  loss = step()
  assert pending[0] and w.schedule() == [] and loss.schedule() == []
  assert loss.item() == 5.0 and w.tolist() == [0.0, 0.0]

class Block:
  def __init__(self):
    self.conv, self.bn = nn.Conv2d(2, 4, 3), nn.BatchNorm(4)
class Model:
  def __init__(self):
    self.blocks = [Block(), Block()]
    self.heads = {"cls": nn.Linear(4, 3)}
    self.scale = Tensor.ones(3)
    self.name = "not a tensor"

def test_state_dict_names_and_parameters():
  keys = set(get_state_dict(Model()))
  expected = {f"blocks.{i}.{k}" for i in range(2) for k in ("conv.weight", "conv.bias", "bn.weight", "bn.bias", "bn.running_mean",
                                                             "bn.running_var", "bn.num_batches_tracked")}
  assert keys == expected | {"heads.cls.weight", "heads.cls.bias", "scale"}
  assert len(get_parameters(Model())) == len(keys)
  assert set(get_state_dict(nn.Linear(2, 2), prefix="fc.")) == {"fc.weight", "fc.bias"}

def test_safetensors_round_trip_and_load_state_dict(tmp_path):
  model, fresh = Model(), Model()
  path = tmp_path / "model.safetensors"
  safe_save(get_state_dict(model), path, metadata={"epoch": "3"})
  loaded = safe_load(path)
  assert safe_load_metadata(str(path)) == {"epoch": "3"}
  for k, v in get_state_dict(model).items():
    assert loaded[k].dtype == v.dtype
    np.testing.assert_array_equal(loaded[k].numpy(), v.numpy())
  load_state_dict(fresh, loaded)
  x = Tensor(np.random.default_rng(2).uniform(-1, 1, (1, 4)).astype(np.float32))
  np.testing.assert_array_equal(fresh.heads["cls"](x).numpy(), model.heads["cls"](x).numpy())
  np.testing.assert_array_equal(fresh.blocks[1].conv.weight.numpy(), model.blocks[1].conv.weight.numpy())

def test_load_state_dict_errors():
  model = nn.Linear(3, 2)
  with pytest.raises(KilnError, match="missing keys: bias"): load_state_dict(model, {"weight": Tensor.ones(2, 3)})
  with pytest.raises(KilnError, match="unexpected keys: extra"):
    load_state_dict(model, {"weight": Tensor.ones(2, 3), "bias": Tensor.ones(2), "extra": Tensor.ones(1)})
  with pytest.raises(KilnError, match=r"mis-shaped keys: weight \(model \(2, 3\), given \(3, 2\)\)"):
    load_state_dict(model, {"weight": Tensor.ones(3, 2), "bias": Tensor.ones(2)})
  state = {"weight": Tensor.ones(2, 3, dtype=dtypes.float16), "extra": Tensor.ones(1)}
  load_state_dict(model, state, strict=False, consume=True)
  assert model.weight.dtype == dtypes.float32 and model.weight.tolist() == [[1.0] * 3] * 2 and list(state) == ["extra"]

def test_load_state_dict_of_another_dtype_raises_with_cast_false():
  model = nn.Linear(2, 1)
  state = {"weight": Tensor([[0.5, -2.0]], dtype=dtypes.float16), "bias": Tensor([3.0])}
  with pytest.raises(KilnError, match=r"keys of another dtype: weight \(model float32, given float16\)"):
    load_state_dict(model, state, cast=False)
  load_state_dict(model, state)  # tinygrad loads it too; kiln converts to the model's dtype (exactly, here)
  assert model.weight.dtype == dtypes.float32
  np.testing.assert_array_equal(model.weight.numpy(), np.array([[0.5, -2.0]], np.float32))

def write_idx(path, array):
  codes = {np.dtype(np.uint8): 0x08, np.dtype(np.int32): 0x0C, np.dtype(np.float32): 0x0D}
  header = struct.pack(">HBB", 0, codes[array.dtype], array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
  data = header + array.astype(array.dtype.newbyteorder(">")).tobytes()
  with (gzip.open if str(path).endswith(".gz") else open)(path, "wb") as f: f.write(data)

def test_datasets(tmp_path):
  a = np.arange(24, dtype=np.int32).reshape(2, 3, 4) - 5
  write_idx(tmp_path / "a.idx.gz", a)
  t = nn.datasets.load_idx(str(tmp_path / "a.idx.gz"))
  assert t.dtype == dtypes.int32 and (t.numpy() == a).all()
  for split, n in (("train", 3), ("t10k", 2)):
    write_idx(tmp_path / f"{split}-images-idx3-ubyte", np.full((n, 28, 28), 7, np.uint8))
    write_idx(tmp_path / f"{split}-labels-idx1-ubyte", np.arange(n, dtype=np.uint8))
  X_train, Y_train, X_test, Y_test = nn.datasets.fashion_mnist(str(tmp_path))
  assert X_train.shape == (3, 1, 28, 28) and X_train.dtype == dtypes.uint8 and Y_test.tolist() == [0, 1]
  with pytest.raises(KilnError, match="only Fashion-MNIST"): nn.datasets.mnist()
  with pytest.raises(KilnError, match="dataset-fashion-mnist"): nn.datasets.fashion_mnist(str(tmp_path / "missing"))

@pytest.mark.skipif(not os.path.isdir(os.environ.get("KILN_FASHION_MNIST", "/usr/share/datasets/fashion-mnist")),
                    reason="Fashion-MNIST is not installed (dataset-fashion-mnist)")
def test_installed_fashion_mnist():
  X_train, Y_train, X_test, Y_test = nn.datasets.mnist(fashion=True)
  assert X_train.shape == (60000, 1, 28, 28) and Y_train.shape == (60000,) and X_test.shape == (10000, 1, 28, 28)
  assert X_train.dtype == dtypes.uint8 and int(Y_test.max().item()) == 9

def _linear_steps(jitted: bool, n: int = 6) -> list[float]:
  Tensor.manual_seed(4)
  l1, l2 = nn.Linear(5, 8), nn.Linear(8, 3)
  opt = nn.optim.Adam(nn.state.get_parameters([l1, l2]), lr=0.05)
  def step(x, y):
    Tensor.training = True
    opt.zero_grad()
    loss = l2(l1(x).relu()).sparse_categorical_crossentropy(y).backward()
    opt.step()
    Tensor.training = False
    return loss
  run = TinyJit(step) if jitted else step
  rng = np.random.default_rng(0)
  losses = []
  for _ in range(n):
    x = rng.standard_normal((7, 5)).astype(np.float32)
    losses.append(run(Tensor(x), Tensor((x[:, 0] > 0).astype(np.int32) + (x[:, 1] > 0).astype(np.int32))).item())
  return losses

def test_tinyjit_replays_give_the_losses_of_plain_steps():
  plain, jitted = _linear_steps(False), _linear_steps(True)
  np.testing.assert_allclose(jitted, plain, rtol=1e-6)
  assert plain[-1] < plain[0]

def test_tinyjit_replays_draw_new_random_numbers():
  Tensor.manual_seed(1)
  @TinyJit
  def noisy(x): return x + Tensor.rand(16)
  draws = [noisy(Tensor.zeros(16).contiguous()).tolist() for _ in range(5)]
  assert all(draws[i] != draws[j] for i in range(5) for j in range(i + 1, 5))
  assert noisy._core.kernels() > 0  # replaying captured kernels

def test_tinyjit_rejects_a_new_shape():
  @TinyJit
  def double(x): return x * 2
  for _ in range(3): double(Tensor([1.0, 2.0]))
  with pytest.raises(KilnError, match="argument 0"): double(Tensor([1.0, 2.0, 3.0]))
