#!/usr/bin/env bash
# Builds and runs the benchmarks; figures go to bench/results/<cpu>/ (one record per CPU model met,
# named by bench/cpu_env.sh), each next to a reference measured on the same machine in the same run:
# OpenBLAS's sgemm (libopenblas-dev), the FMA peak and a STREAM triad for the kernels, PyTorch
# (python3-torch) for kernels and the training step. plot.py charts the ratios
# (python3-matplotlib). results_table.py writes bench/RESULTS.md from them.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
for p in libopenblas-dev python3-torch python3-matplotlib; do
  dpkg -s "$p" >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq "$p"; }
done
bash scripts/build.sh release
# Names the CPU (KILN_BENCH_CPU) and makes OpenBLAS, kernels' and PyTorch's, use its best kernels.
source bench/cpu_env.sh
out=bench/results/$KILN_BENCH_CPU
mkdir -p "$out"
# The machine the figures come from, for RESULTS.md.
{ echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
  grep -qw avx512f /proc/cpuinfo && echo "AVX-512" || echo "no AVX-512"; } > "$out/machine.txt"

# Kernels: matmul, sum, elementwise, softmax, conv2d, dispatch and compile overheads.
./build/release/bench/kernels "$out/kernels.txt"
/usr/bin/python3 bench/torch_kernels.py "$out/kernels.txt"
# The Python package's dispatch overhead against the C++ figures above (kiln's extension, build/release).
PYTHONPATH=python:build/release/python /usr/bin/python3 bench/python_dispatch.py "$out/kernels.txt"

# Devices: OpenCL (PoCL here) next to the CPU; LOCALS=0 without work-group opts, LOCALS=1 with the
# work-group heuristics a GPU gets.
./build/release/bench/devices "$out/devices.txt"
for l in 0 1; do LOCALS=$l ./build/release/bench/devices "$out/devices_locals$l.txt"; done

# Training: one beautiful_mnist Adam step at batch 512, kiln against PyTorch in the same run.
./build/release/bench/train_step "$out/train_step.txt" 512
/usr/bin/python3 bench/torch_train_step.py "$out/train_step.txt"

/usr/bin/python3 bench/plot.py "$out"
/usr/bin/python3 bench/results_table.py "$out" bench/RESULTS.md
