"""Transformer-training utilities against PyTorch: nn.utils.clip_grad_norm_ (vs torch.nn.utils.clip_grad_norm_,
float32: rtol 1e-5, atol 1e-6) and the warm-up + cosine schedule (vs LambdaLR with the same formula, rtol 1e-6)."""
import math
import numpy as np
import pytest

torch = pytest.importorskip("torch")
from kiln import KilnError, Tensor, nn  # noqa: E402
from kiln.extra.lr_scheduler import WarmupCosineLR  # noqa: E402
from kiln.nn.utils import clip_grad_norm_  # noqa: E402

@pytest.mark.parametrize("max_norm", [0.5, 100.0, 0.0])
def test_clip_grad_norm(max_norm):
  rng = np.random.default_rng(0)
  grads = [rng.uniform(-2, 2, s).astype(np.float32) for s in [(4, 3), (5,), (2, 2, 2)]]
  params = [Tensor.zeros(*g.shape, requires_grad=True) for g in grads]
  for p, g in zip(params, grads): p.grad = Tensor(g)
  held = params[0].grad  # in place: a handle taken before sees the clipped values
  norm = clip_grad_norm_(params, max_norm)
  tparams = [torch.zeros(g.shape, requires_grad=True) for g in grads]
  for p, g in zip(tparams, grads): p.grad = torch.tensor(g)
  want = torch.nn.utils.clip_grad_norm_(tparams, max_norm)
  np.testing.assert_allclose(norm.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
  for p, tp in zip(params, tparams): np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(held.numpy(), tparams[0].grad.numpy(), rtol=1e-5, atol=1e-6)

def test_clip_grad_norm_rejects_negative():
  p = Tensor.zeros(2, requires_grad=True)
  p.grad = Tensor.ones(2)
  with pytest.raises(KilnError, match="max_norm must be a finite number >= 0"): clip_grad_norm_(p, -1)

def test_warmup_cosine_matches_lambda_lr():
  base, warmup, total, low = 0.5, 3, 10, 0.05
  def factor(t):
    if t < warmup: return (t + 1) / warmup
    if t >= total: return low / base
    return (low + (base - low) * 0.5 * (1 + math.cos(math.pi * (t - warmup) / (total - warmup)))) / base
  topt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=base)
  tsched = torch.optim.lr_scheduler.LambdaLR(topt, factor)
  opt = nn.optim.SGD([Tensor.zeros(1, requires_grad=True)], lr=base)
  sched = WarmupCosineLR(opt, warmup, total, low)
  for step in range(total + 3):
    assert opt.lr.item() == pytest.approx(topt.param_groups[0]["lr"], rel=1e-6), f"step {step}"
    topt.step()
    tsched.step()
    sched.step()
