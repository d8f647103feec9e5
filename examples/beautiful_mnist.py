#!/usr/bin/env python3
"""tinygrad's beautiful_mnist, on kiln's Python API: a small CNN (conv, batchnorm, max-pool) trained
on Fashion-MNIST with Adam. The script is tinygrad's but for the import lines and three changes said
below. Settings come from the environment, as tinygrad's:

  STEPS=70 BS=512 LR=3e-3 TEST_EVERY=10 TEST_EXAMPLES=10000 SEED=42 PLOT=beautiful_mnist_loss.png

With STEPS=1404 BS=128 (the C++ main job's 3 epochs) it reaches the C++ job's accuracy.

  PYTHONPATH=python:build/release/python /usr/bin/python3 examples/beautiful_mnist.py

The loss curve is saved to $PLOT (PLOT= to skip) when matplotlib is importable.
"""
from typing import Callable
import numpy as np
from kiln import GlobalCounters, Tensor, TinyJit, nn
from kiln.helpers import getenv, trange
from kiln.nn.datasets import mnist
from kiln.extra.lr_scheduler import OneCycleLR

class Model:
  def __init__(self):
    self.layers: list[Callable[[Tensor], Tensor]] = [
      nn.Conv2d(1, 32, 5), Tensor.relu,
      nn.Conv2d(32, 32, 5), Tensor.relu,
      nn.BatchNorm(32), Tensor.max_pool2d,
      nn.Conv2d(32, 64, 3), Tensor.relu,
      nn.Conv2d(64, 64, 3), Tensor.relu,
      nn.BatchNorm(64), Tensor.max_pool2d,
      lambda x: x.flatten(1), nn.Linear(576, 10)]

  def __call__(self, x: Tensor) -> Tensor: return x.sequential(self.layers)

def plot_losses(losses: list[float], path: str):
  try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
  except ImportError:
    print("matplotlib is not installed (python3-matplotlib): no plot")
    return
  fig, ax = plt.subplots(figsize=(6, 4))
  ax.plot(range(1, len(losses) + 1), losses)
  ax.set(xlabel="step", ylabel="training loss", title="beautiful_mnist on kiln (Fashion-MNIST)")
  fig.savefig(path, dpi=100)
  print(f"loss curve: {path}")

if __name__ == "__main__":
  X_train, Y_train, X_test, Y_test = mnist(fashion=True)
  # Change 1: batches are gathered on the host. tinygrad indexes X_train[samples] on the device,
  # which kiln (like tinygrad) does as a one-hot product over all 60000 images: too slow on a CPU.
  X_train_np, Y_train_np = X_train.numpy(), Y_train.numpy().astype(np.int32)
  rng = np.random.default_rng(getenv("SEED", 42))
  Tensor.manual_seed(getenv("SEED", 42))

  model = Model()
  opt = nn.optim.Adam(nn.state.get_parameters(model))
  # Change 3: a one-cycle learning rate peaking at LR over the run, as the C++ main job's (LR=0:
  # tinygrad's fixed rate).
  schedule = None
  if (peak := getenv("LR", 3e-3)) > 0:
    schedule = OneCycleLR(opt, max_lr=peak, div_factor=25, final_div_factor=1e4, total_steps=getenv("STEPS", 70),
                          pct_start=0.25)

  @TinyJit
  @Tensor.train()
  def train_step(x: Tensor, y: Tensor) -> Tensor:
    opt.zero_grad()
    loss = model(x).sparse_categorical_crossentropy(y).backward()
    opt.step()
    return loss

  # Change 2: the test set is measured in slices of 1000 images (all 10000 at once would need
  # gigabytes for the activations).
  @Tensor.test()
  def get_test_acc() -> float:
    n, correct = min(getenv("TEST_EXAMPLES", 10000), X_test.shape[0]), 0
    for i in range(0, n, 1000):
      x, y = X_test[i:min(i + 1000, n)], Y_test[i:min(i + 1000, n)]
      correct += (model(x).argmax(axis=1) == y).sum().item()
    return correct / n * 100

  test_acc, losses = float("nan"), []
  for i in (t := trange(getenv("STEPS", 70))):
    GlobalCounters.reset()  # so DEBUG=2 timing is per step
    samples = rng.integers(0, X_train_np.shape[0], getenv("BS", 512))
    loss = train_step(Tensor(X_train_np[samples]), Tensor(Y_train_np[samples]))
    if schedule: schedule.step()
    losses.append(loss.item())
    if i % getenv("TEST_EVERY", 10) == getenv("TEST_EVERY", 10) - 1: test_acc = get_test_acc()
    t.set_description(f"loss: {losses[-1]:6.2f} test_accuracy: {test_acc:5.2f}%")
  if plot := getenv("PLOT", "beautiful_mnist_loss.png"): plot_losses(losses, plot)
