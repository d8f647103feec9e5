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

@pytest.mark.parametrize("make, torch_make, kernel, dilation, x_shape", [
  (nn.Conv1d, torch.nn.Conv1d, 3, 1, (2, 3, 11)),
  (nn.Conv1d, torch.nn.Conv1d, 4, 1, (2, 3, 11)),       # odd total padding: the extra one on the right
  (nn.Conv2d, torch.nn.Conv2d, 5, 1, (2, 3, 9, 7)),
  (nn.Conv2d, torch.nn.Conv2d, (4, 3), 1, (2, 3, 8, 9)),
  (nn.Conv2d, torch.nn.Conv2d, 2, 3, (2, 3, 8, 8)),     # dilated: total padding 3 per axis
])
def test_conv_same_padding(make, torch_make, kernel, dilation, x_shape):
  check_layer(make(3, 4, kernel, padding="same", dilation=dilation), torch_make(3, 4, kernel, padding="same", dilation=dilation),
              x_shape, rtol=1e-4, atol=1e-5)
  check_layer(make(3, 4, kernel, padding="valid"), torch_make(3, 4, kernel, padding="valid"), x_shape, rtol=1e-4, atol=1e-5)

def test_conv_padding_string_errors():
  with pytest.raises(ValueError, match="only 'same' and 'valid'"): nn.Conv2d(3, 4, 3, padding="full")
  with pytest.raises(ValueError, match="strided"): nn.Conv2d(3, 4, 3, stride=2, padding="same")

def test_instance_norm():
  for x_shape, torch_make in [((3, 4, 5, 6), torch.nn.InstanceNorm2d), ((2, 4, 3, 5, 4), torch.nn.InstanceNorm3d)]:
    layer = nn.InstanceNorm(4)
    layer.weight, layer.bias = Tensor([0.5, 1.0, 2.0, -1.0]), Tensor([0.0, 0.1, -0.2, 0.3])
    assert layer.num_features == 4 and set(get_state_dict(layer)) == {"weight", "bias"}
    check_layer(layer, torch_make(4, affine=True), x_shape, rtol=1e-4, atol=1e-5)
  check_layer(nn.InstanceNorm(4, affine=False), torch.nn.InstanceNorm2d(4), (2, 4, 3, 3), rtol=1e-4, atol=1e-5)

class TorchLayerNorm2d(torch.nn.LayerNorm):
  def forward(self, x): return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)

def test_layer_norm_2d():
  layer = nn.LayerNorm2d(5)
  layer.weight, layer.bias = Tensor([0.5, 1.0, 2.0, -1.0, 1.5]), Tensor([0.0, 0.1, -0.2, 0.3, 0.0])
  check_layer(layer, TorchLayerNorm2d(5), (2, 5, 3, 4), rtol=1e-4, atol=1e-5)
  with pytest.raises(KilnError, match=r"LayerNorm2d: expected an input of layout \(N, C, H, W\)"): layer(Tensor.ones(2, 5, 3))

@pytest.mark.parametrize("bias", [True, False])
def test_lstm_cell(bias):
  layer, torch_layer = nn.LSTMCell(6, 4, bias=bias), torch.nn.LSTMCell(6, 4, bias=bias)
  assert layer.weight_ih.shape == (16, 6) and layer.weight_hh.shape == (16, 4) and layer.weight_ih.requires_grad
  assert np.abs(layer.weight_ih.numpy()).max() <= 1 / np.sqrt(4)
  if bias: layer.bias_ih, layer.bias_hh = Tensor.uniform(16, low=-0.5, high=0.5), Tensor.uniform(16, low=-0.5, high=0.5)
  else: assert layer.bias_ih is None and layer.bias_hh is None
  copy_params(layer, torch_layer)
  rng = np.random.default_rng(0)
  x = rng.uniform(-1, 1, (3, 6)).astype(np.float32)
  h, c = layer(Tensor(x))
  ht, ct = torch_layer(torch.tensor(x))
  np.testing.assert_allclose(h.numpy(), ht.detach().numpy(), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(c.numpy(), ct.detach().numpy(), rtol=1e-5, atol=1e-6)
  h, c = layer(Tensor(x), (h, c))  # a second step from the first's state
  ht, ct = torch_layer(torch.tensor(x), (ht, ct))
  (h.sum() + c.sum()).backward()
  (ht.sum() + ct.sum()).backward()
  np.testing.assert_allclose(h.numpy(), ht.detach().numpy(), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(c.numpy(), ct.detach().numpy(), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(layer.weight_hh.grad.numpy(), torch_layer.weight_hh.grad.numpy(), rtol=1e-4, atol=1e-5)
  with pytest.raises(KilnError, match=r"LSTMCell: expected an input of shape \(N, 6\)"): layer(Tensor.ones(3, 5))

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

@Tensor.train()  # optimizers step in training mode only
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

@Tensor.train()
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

@Tensor.train()
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

@Tensor.train()
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

def test_load_state_dict_batchnorm_without_running_statistics():
  # as PyTorch's state dict, no running statistics; num_batches_tracked loads from (1,) or a scalar
  bn = nn.BatchNorm(2, track_running_stats=False)
  assert set(get_state_dict(bn)) == set(torch.nn.BatchNorm2d(2, track_running_stats=False).state_dict()) | {"num_batches_tracked"}
  load_state_dict(bn, {"weight": Tensor([2.0, 3.0]), "bias": Tensor.ones(2), "num_batches_tracked": Tensor([7])})
  assert bn.weight.tolist() == [2.0, 3.0] and bn.num_batches_tracked.tolist() == [7]
  load_state_dict(bn, {"weight": Tensor.ones(2), "bias": Tensor.ones(2), "num_batches_tracked": Tensor(5)})
  assert bn.num_batches_tracked.tolist() == [5]

def test_load_state_dict_errors():
  model = nn.Linear(3, 2)
  with pytest.raises(KilnError, match="missing keys: bias"): load_state_dict(model, {"weight": Tensor.ones(2, 3)})
  with pytest.raises(KilnError, match="unexpected keys: extra"):
    load_state_dict(model, {"weight": Tensor.ones(2, 3), "bias": Tensor.ones(2), "extra": Tensor.ones(1)})
  # a ValueError in tinygrad's words
  with pytest.raises(ValueError, match=r"Shape mismatch in layer `weight`: Expected shape \(2, 3\), but found \(3, 2\) in state dict\."):
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

def np_newton_schulz(g: np.ndarray, steps: int, coefficients) -> np.ndarray:
  """float64 Newton–Schulz, written from Muon's definition: G / (||G||_F + 1e-7), then steps of
  sum_i c_i (G G^T)^i G, through the transpose for a tall G."""
  if g.shape[0] > g.shape[1]: return np_newton_schulz(g.T, steps, coefficients).T
  g = g / (np.sqrt((g * g).sum()) + 1e-7)
  for _ in range(steps):
    gram, term, nxt = g @ g.T, g, coefficients[0] * g
    for c in coefficients[1:]:
      term = gram @ term
      nxt = nxt + c * term
    g = nxt
  return g

@pytest.mark.parametrize("kwargs", [
  {"lr": 0.02},  # tinygrad's defaults otherwise: momentum 0.95, Nesterov, weight_decay 0.1, 5 steps
  {"lr": 0.05, "momentum": 0.9, "weight_decay": 0.0, "ns_steps": 3, "ns_coefficients": (2.0, -1.5, 0.5),
   "nesterov": False},
  {"lr": 0.01, "momentum": 0.0, "weight_decay": 0.01, "ns_params": (3.4445, -4.775, 2.0315)},
])
@Tensor.train()
def test_muon_matches_a_float64_numpy_muon(kwargs):
  """Muon (tinygrad's) on sum((W - T)^2 |W|) + 0.5 sum(k b^2) + sum(C * V): parameters of 2, 1 and 3 dims
  after 4 steps, against the update written out in NumPy float64 (gradients by hand). float32 against float64:
  atol 2e-5 on values of size ~1."""
  rng = np.random.default_rng(3)
  w0, t = rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, (3, 4))
  b0, k = rng.uniform(-1, 1, 5), np.array([0.5, 1.0, 1.5, 2.0, 3.0])
  v0, c = rng.uniform(-1, 1, (4, 2, 3)), rng.uniform(-1, 1, (4, 2, 3))
  params = [Tensor(a.astype(np.float32), requires_grad=True) for a in (w0, b0, v0)]
  opt = nn.optim.Muon(params, **kwargs)
  T, K, C = (Tensor(a.astype(np.float32)) for a in (t, k, c))
  o = {"momentum": 0.95, "weight_decay": 0.1, "ns_steps": 5, "ns_coefficients": (3.4445, -4.775, 2.0315),
       "nesterov": True, **kwargs}
  coefficients = o.get("ns_params") or o["ns_coefficients"]
  ref = [a.astype(np.float32).astype(np.float64) for a in (w0, b0, v0)]
  bufs = [np.zeros_like(a) for a in ref]
  for _ in range(4):
    w, b, v = params
    opt.zero_grad()
    (((w - T) ** 2 * w.abs()).sum() + 0.5 * (K * b * b).sum() + (C * v).sum()).backward()
    opt.step()
    rw, rb, _ = ref
    grads = [2 * (rw - t) * np.abs(rw) + (rw - t) ** 2 * np.sign(rw), k * rb, c]
    for i, (p, g) in enumerate(zip(ref, grads)):
      bufs[i] = o["momentum"] * bufs[i] + g
      step = g + o["momentum"] * bufs[i] if o["nesterov"] else bufs[i]
      step = np_newton_schulz(step.reshape(p.shape[0], -1), o["ns_steps"], coefficients).reshape(p.shape)
      ref[i] = p * (1 - o["lr"] * o["weight_decay"]) - o["lr"] * step
    for got, want in zip(params, ref): np.testing.assert_allclose(got.numpy(), want, rtol=0, atol=2e-5)

@Tensor.train()
def test_muon_trains_a_small_regression():
  rng = np.random.default_rng(5)
  x = rng.standard_normal((32, 6)).astype(np.float32)
  y = x @ rng.standard_normal((6, 4)).astype(np.float32)
  layer = nn.Linear(6, 4, bias=False)
  opt = nn.optim.Muon(get_parameters(layer), lr=0.05, momentum=0.9, weight_decay=0.0)
  X, Y = Tensor(x), Tensor(y)
  initial = ((layer(X) - Y) ** 2).mean().item()
  for _ in range(60):
    opt.zero_grad()
    loss = ((layer(X) - Y) ** 2).mean()
    loss.backward()
    opt.step()
  # a constant rate leaves steps of size ~lr (the orthogonalized step has singular values near 1): no exact fit
  assert ((layer(X) - Y) ** 2).mean().item() < 0.05 * initial
  with pytest.raises(ValueError, match="fused"): nn.optim.Muon(get_parameters(layer), fused=True)
  with pytest.raises(KilnError, match="Muon: momentum must be >= 0"): nn.optim.Muon(get_parameters(layer), momentum=-1)

@pytest.mark.parametrize("make", [nn.optim.LAMB, nn.optim.Adam, nn.optim.AdamW])
@Tensor.train()
def test_lamb_state_attributes(make):
  # after one step from zero moments, with g = d sum(w * x) / d w = x: m = (1 - b1) g, v = (1 - b2) g^2, b1_t = b1
  x = np.array([[1.0, -2.0, 3.0]], np.float32)
  w = Tensor(np.full((1, 3), 0.5, np.float32), requires_grad=True)
  opt = make([w], b1=0.8, b2=0.9)
  assert isinstance(opt, nn.optim.LAMB) and len(opt.m) == len(opt.v) == 1
  opt.zero_grad()
  (w * Tensor(x)).sum().backward()
  opt.step()
  np.testing.assert_allclose(opt.m[0].numpy(), 0.2 * x, rtol=1e-6)
  np.testing.assert_allclose(opt.v[0].numpy(), 0.1 * x * x, rtol=1e-6)
  np.testing.assert_allclose([opt.b1_t.numpy(), opt.b2_t.numpy()], [[0.8], [0.9]], rtol=1e-6)

def test_optimizer_step_needs_training_mode():
  # tinygrad's rule: a step outside Tensor.training is a RuntimeError and changes nothing; inside, SGD's w - lr * g
  w = Tensor([1.0, -2.0], requires_grad=True)
  opt = nn.optim.SGD([w], lr=0.5)
  (w * w).sum().backward()
  assert Tensor.training is False
  with pytest.raises(RuntimeError, match="Tensor.training"): opt.step()
  with pytest.raises(RuntimeError, match="Tensor.training"): opt.schedule_step()
  assert w.tolist() == [1.0, -2.0]
  with Tensor.train(): opt.step()
  np.testing.assert_allclose(w.numpy(), np.array([1.0, -2.0]) * (1 - 0.5 * 2), rtol=1e-6)
