"""PyTorch reference for bench/gpu.cpp on the same device: rebuilds each case from its `<case>_spec`
figure (op:sizes:dtype), times it the same way (median wall time of REPS runs after two warm-up runs,
the device synchronized before the clock is read), appends torch_<case>_ms and <case>_vs_torch (kiln's
time over torch's: above 1, kiln is slower) to the results file, and prints the table. fp32 matmuls
run in true float32 (TF32 off, torch's default), as kiln's do.
usage: torch_gpu.py RESULTS_FILE [DEVICE (default cuda)] [REPS (default 10)]"""
import statistics
import sys
import time

import torch

from figures import read_figures

results = sys.argv[1]
device = sys.argv[2] if len(sys.argv) > 2 else "cuda"
reps = int(sys.argv[3]) if len(sys.argv) > 3 else 10
figures = read_figures(results)
torch.manual_seed(1)
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def sync():
    if device != "cpu":
        torch.cuda.synchronize()


def median_ms(fn):
    for _ in range(2):
        fn()
    times = []
    for _ in range(reps):
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def build(spec):
    """The inputs and the function of one case, as bench/gpu.cpp makes them."""
    op, *sizes, dtype = spec.split(":")
    dims, dt = [int(s) for s in sizes], getattr(torch, dtype)
    randn = lambda *shape: torch.randn(*shape, device=device).to(dt)  # noqa: E731
    if op == "matmul":
        a, b = randn(dims[0], dims[0]), randn(dims[0], dims[0])
        return lambda: a @ b
    if op == "softmax":
        x = randn(*dims)
        return lambda: torch.softmax(x, 1)
    if op == "conv2d":
        batch, channels, side = dims
        x, w = randn(batch, channels, side, side), randn(channels, channels, 3, 3)
        return lambda: torch.nn.functional.conv2d(x, w, padding=1)
    raise ValueError(f"unknown case spec {spec}")


name = torch.cuda.get_device_name() if device != "cpu" else "cpu"
print(f"kiln against PyTorch {torch.__version__} on {name} (ms, median of {reps}; ratio = kiln / torch time)")
print(f"  {'case':28} {'kiln':>10} {'torch':>10} {'ratio':>8} {'kiln rate':>12} {'torch rate':>12}")
added = {}
for key, spec in figures.items():
    if not key.endswith("_spec"):
        continue
    case = key[: -len("_spec")]
    kiln_ms, work = figures[case + "_ms"], figures[case + "_work"]
    try:
        torch_ms = median_ms(build(spec))
    except RuntimeError as e:  # e.g. no float16 matmul on the CPU
        print(f"  {case:28} {kiln_ms:10.3f}  torch failed: {str(e).splitlines()[0]}")
        continue
    scale, unit = (1e12, "TFLOP/s") if spec.startswith(("matmul", "conv2d")) else (1e9, "GB/s")
    rate = lambda ms: work / (ms * 1e-3) / scale  # noqa: E731
    print(f"  {case:28} {kiln_ms:10.3f} {torch_ms:10.3f} {kiln_ms / torch_ms:8.2f} "
          f"{rate(kiln_ms):8.2f} {unit:>3} {rate(torch_ms):8.2f} {unit}")
    added[f"torch_{case}_ms"] = torch_ms
    added[f"{case}_vs_torch"] = kiln_ms / torch_ms
with open(results, "a") as f:
    f.write(f"torch_version {torch.__version__}\n")
    f.writelines(f"{k} {v}\n" for k, v in added.items())
