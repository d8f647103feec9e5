"""PyTorch reference for bench/train_step.cpp: the same beautiful_mnist CNN and Adam step on the CPU
(or DEVICE, e.g. cuda, synchronized before the clock is read), median ms per step over 5 steps after 2
warm-up steps. Appends its figure, the ratio and the BLAS torch ran on (torch_blas, see torch_blas.py)
to the results file kiln's benchmark wrote.
usage: torch_train_step.py RESULTS_FILE [DEVICE]"""
import os
import sys
import time

import torch
import torch.nn as nn

from torch_blas import torch_blas

results = sys.argv[1]
device = sys.argv[2] if len(sys.argv) > 2 else "cpu"
figures = dict(line.split() for line in open(results))
batch = int(figures["train_step_batch"])
torch.manual_seed(1)
torch.set_num_threads(os.cpu_count())  # all cores, as kiln uses (Debian's torch may default to 1)

model = nn.Sequential(
    nn.Conv2d(1, 32, 5), nn.ReLU(), nn.Conv2d(32, 32, 5), nn.ReLU(), nn.BatchNorm2d(32), nn.MaxPool2d(2),
    nn.Conv2d(32, 64, 3), nn.ReLU(), nn.Conv2d(64, 64, 3), nn.ReLU(), nn.BatchNorm2d(64), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(576, 10)).to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
labels = torch.arange(batch, device=device) % 10


def sync():
    if device != "cpu":
        torch.cuda.synchronize()


def step():
    x = torch.randn(batch, 1, 28, 28, device=device)
    sync()
    t0 = time.perf_counter()
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), labels)
    loss.backward()
    opt.step()
    sync()
    return (time.perf_counter() - t0) * 1e3


for _ in range(2):
    step()
ms = sorted(step() for _ in range(5))[2]
kiln_ms = float(figures["train_step_ms"])
blas = torch_blas() if device == "cpu" else device
print(f"beautiful_mnist training step, batch {batch}: PyTorch {torch.__version__} ({blas}) {ms:.1f} ms, "
      f"kiln {kiln_ms:.1f} ms, kiln/torch time ratio {kiln_ms / ms:.2f}")
with open(results, "a") as f:
    f.write(f"torch_train_step_ms {ms}\ntrain_step_vs_torch {kiln_ms / ms}\ntorch_blas {blas}\n")
