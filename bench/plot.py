"""Draws kiln's speed ratios against the references of the last bench/run.sh (every `*_vs_*` figure
in the results files; above 1 means kiln is faster) as a horizontal bar chart, ratios.png in the
results folder of that CPU (bench/results/<cpu>/, see cpu_env.sh).   usage: plot.py RESULTS_DIR"""
import os
import sys

if len(sys.argv) != 2:
    sys.exit("usage: plot.py RESULTS_DIR (a CPU's folder of bench/results)")
results_dir = sys.argv[1]
try:
    import matplotlib
    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt
except ImportError:
    print("plot.py: matplotlib is missing (Debian: python3-matplotlib), no chart drawn")
    sys.exit(0)

# train_step_vs_torch is a ratio of times (kiln/torch); inverted here so every bar is a speed ratio.
TIME_RATIOS = {"train_step_vs_torch"}

ratios = {}
for name in ("kernels.txt", "train_step.txt"):
    path = os.path.join(results_dir, name)
    if not os.path.exists(path):
        continue
    for line in open(path):
        key, value = line.split()
        if "_vs_" in key:
            if key in TIME_RATIOS:
                ratios[key + " (1/time ratio)"] = 1 / float(value)
            else:
                ratios[key] = float(value)

if not ratios:
    print(f"plot.py: no ratios in {results_dir}, no chart drawn")
    sys.exit(0)
labels = list(ratios)[::-1]  # first figure on top
values = [ratios[k] for k in labels]
fig, ax = plt.subplots(figsize=(8, 0.4 * len(labels) + 1))
ax.barh(labels, values, color=["tab:green" if v >= 1 else "tab:orange" for v in values])
ax.axvline(1, color="black", linewidth=0.8)
for i, v in enumerate(values):
    ax.text(v, i, f" {v:.2f}", va="center", fontsize=8)
ax.set_xlabel("kiln speed / reference speed (same run; > 1: kiln faster)")
ax.set_title("kiln against its references")
fig.tight_layout()
out = os.path.join(results_dir, "ratios.png")
fig.savefig(out, dpi=100)
print(f"plot.py: wrote {out}")
