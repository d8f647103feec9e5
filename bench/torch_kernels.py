"""PyTorch reference for bench/kernels.cpp, measured in the same run on the same machine: matmul
1024, softmax (4096, 1024), sum of 16M floats, 128 rows gathered from a 60000x784 dataset (best wall
time of several after a warm-up) and the dispatch latency of (a+b) on 4 elements (mean over many).
Prints each next to kiln's figure and appends figures and speed ratios (above 1: kiln faster) to the
results file kernels.cpp wrote, and one JSON line to the .jsonl beside it, with the BLAS torch ran on
(torch_blas) and torch_suspect 1 where its matmul 1024 ran below half the FMA peak kernels.cpp measured
(a BLAS running generic kernels: no fair reference).   usage: torch_kernels.py RESULTS_FILE"""
import json
import os
import sys
import time

import torch

from figures import read_figures
from torch_blas import torch_blas

results = sys.argv[1]
figures = read_figures(results)
torch.manual_seed(1)
torch.set_num_threads(os.cpu_count())  # all cores, as kiln uses (Debian's torch may default to 1)


def best_seconds(fn, reps):
    fn()  # warm-up: allocations, thread pool
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


x, y = torch.rand(1024, 1024), torch.rand(1024, 1024)
matmul_gflops = 2 * 1024**3 / best_seconds(lambda: x @ y, 5) / 1e9
s = torch.randn(4096, 1024)
softmax_ms = best_seconds(lambda: torch.softmax(s, -1), 10) * 1e3
v = torch.rand(16 * 1024 * 1024)
sum_gbps = 4 * v.numel() / best_seconds(lambda: v.sum(), 10) / 1e9
data, samp = torch.rand(60000, 784), torch.randint(0, 60000, (128,))
gather_ms = best_seconds(lambda: data[samp], 10) * 1e3
a, b = torch.rand(4), torch.rand(4)
for _ in range(50):
    a + b
iters = 2000
t0 = time.perf_counter()
for _ in range(iters):
    a + b
dispatch_us = (time.perf_counter() - t0) / iters * 1e6

# (name, kiln figure, torch figure, unit, key suffix, speed ratio kiln/torch)
rows = [
    ("matmul_1024", figures["matmul_1024_gflops"], matmul_gflops, "GFLOP/s", "gflops",
     figures["matmul_1024_gflops"] / matmul_gflops),
    ("softmax_4096x1024", figures["softmax_4096x1024_ms"], softmax_ms, "ms", "ms",
     softmax_ms / figures["softmax_4096x1024_ms"]),
    ("sum_16M", figures["sum_16M_gbps"], sum_gbps, "GB/s", "gbps", figures["sum_16M_gbps"] / sum_gbps),
    ("gather_128_of_60000x784", figures["gather_128_of_60000x784_ms"], gather_ms, "ms", "ms",
     gather_ms / figures["gather_128_of_60000x784_ms"]),
    ("dispatch_add", figures["dispatch_add_us"], dispatch_us, "us", "us", dispatch_us / figures["dispatch_add_us"]),
]
added = {"torch_blas": torch_blas()}
print(f"PyTorch {torch.__version__}, {torch.get_num_threads()} threads, BLAS {added['torch_blas']} "
      "(speed ratio: above 1 means kiln is faster)")
for name, kiln, ref, unit, suffix, ratio in rows:
    print(f"  {name:18} kiln {kiln:9.2f} {unit:7}  torch {ref:9.2f} {unit:7}  ratio {ratio:.3f}")
    added[f"torch_{name}_{suffix}"] = ref
    added[f"{name}_vs_torch"] = ratio
if "fma_peak_gflops" in figures:
    added["torch_suspect"] = int(matmul_gflops < 0.5 * figures["fma_peak_gflops"])
    if added["torch_suspect"]:
        print(f"\n!!! SUSPECT REFERENCE: PyTorch runs matmul 1024 at {matmul_gflops:.1f} GFLOP/s, below half the FMA "
              f"peak ({figures['fma_peak_gflops']:.1f}):\n!!! its ratios are not a fair comparison\n")
with open(results, "a") as f:
    f.writelines(f"{k} {v}\n" for k, v in added.items())
with open(os.path.splitext(results)[0] + ".jsonl", "a") as f:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    f.write(json.dumps({"time": stamp, "program": "torch_kernels", "torch": torch.__version__, **added}) + "\n")
