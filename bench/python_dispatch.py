"""The Python package's overhead over the C++ API: the dispatch latency of (a+b).realize() on 4
floats and of a 10-op chain, measured from Python as bench/kernels.cpp measures them from C++ (mean
over 2000 realizes after 50 warm-up ones), each next to the C++ figure kernels wrote to the results
file in the same run, with the ratio Python/C++ (the target: within 2). Appends the figures to the
results file and one JSON line to the .jsonl beside it.
usage: PYTHONPATH=python:build/release/python python_dispatch.py RESULTS_FILE"""
import json
import os
import sys
import time

from figures import read_figures
from kiln import Tensor

WARMUP, ITERS = 50, 2000

def us_per_realize(make) -> float:
    for _ in range(WARMUP): make().realize()
    t0 = time.perf_counter()
    for _ in range(ITERS): make().realize()
    return (time.perf_counter() - t0) / ITERS * 1e6

def chain(a: Tensor, b: Tensor) -> Tensor:
    t = a
    for _ in range(5): t = t * b + a  # two ops per step, fused into one kernel
    return t

results = sys.argv[1]
figures = read_figures(results)
Tensor.manual_seed(1)
a, b = Tensor.rand(4).realize(), Tensor.rand(4).realize()
rows = [("dispatch_add", us_per_realize(lambda: a + b)), ("dispatch_chain10", us_per_realize(lambda: chain(a, b)))]
added = {}
print("Python over C++ (ratio: Python's time / C++'s; target: below 2)")
for name, python_us in rows:
    cpp_us = figures[f"{name}_us"]
    print(f"  {name:18} C++ {cpp_us:8.2f} us  Python {python_us:8.2f} us  ratio {python_us / cpp_us:.2f}")
    added[f"python_{name}_us"] = python_us
    added[f"python_{name}_over_cpp"] = python_us / cpp_us
with open(results, "a") as f:
    f.writelines(f"{k} {v}\n" for k, v in added.items())
with open(os.path.splitext(results)[0] + ".jsonl", "a") as f:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    f.write(json.dumps({"time": stamp, "program": "python_dispatch", **added}) + "\n")
