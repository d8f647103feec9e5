#!/usr/bin/env bash
# Builds and runs the benchmarks; figures go to bench/results/. The matmul reference is NumPy on
# OpenBLAS (Debian's python3-numpy and libopenblas0-pthread; without the latter NumPy falls back
# to the slow reference BLAS) on the same machine in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
for p in python3-numpy libopenblas0-pthread python3-torch; do
  dpkg -s "$p" >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq "$p"; }
done
bash scripts/build.sh release
mkdir -p bench/results
./build/release/bench/spine bench/results/spine.txt
/usr/bin/python3 - <<'PY'
import time, numpy as np
a = np.random.rand(1024, 1024).astype(np.float32); b = np.random.rand(1024, 1024).astype(np.float32)
a @ b
best = min((lambda t0: (a @ b, time.perf_counter() - t0)[1])(time.perf_counter()) for _ in range(5))
numpy_gflops = 2 * 1024**3 / best / 1e9
figures = dict(line.split() for line in open("bench/results/spine.txt"))
kiln_gflops = float(figures["matmul_1024_gflops"])
print(f"matmul 1024x1024 float32: numpy {numpy_gflops:.2f} GFLOP/s, kiln/numpy ratio {kiln_gflops / numpy_gflops:.3f}")
with open("bench/results/spine.txt", "a") as f:
    f.write(f"numpy_matmul_1024_gflops {numpy_gflops}\nmatmul_vs_numpy {kiln_gflops / numpy_gflops}\n")
PY

# Training: one beautiful_mnist Adam step at batch 512, kiln against PyTorch in the same run.
./build/release/bench/train_step bench/results/train_step.txt 512
/usr/bin/python3 bench/torch_train_step.py bench/results/train_step.txt
