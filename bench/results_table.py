"""Writes bench/RESULTS.md from the last bench/run.sh on one CPU (a folder bench/results/<cpu>/): one
table of kiln's figures next to the reference measured in the same run (OpenBLAS, the FMA peak, a
STREAM triad, PyTorch, kiln's own C++ or CPU device), with the run's date (the JSON lines' time
stamps) and CPU (machine.txt, which run.sh writes first; else the folder's name).
usage: results_table.py RESULTS_DIR [OUT_FILE (default: bench/RESULTS.md)]"""
import json
import os
import re
import sys

from figures import read_figures

# Units by key suffix; for times lower is better, so a speed ratio divides the other way.
UNITS = {"gflops": ("GFLOP/s", False), "gbps": ("GB/s", False), "ms": ("ms", True), "us": ("µs", True)}

# How each ratio key pairs two figures: (ratio key, case, kiln's key, reference's key, reference,
# the key that flags the reference as suspect). `{c}` is the part of the case the ratio key names,
# `{u}` a unit suffix of UNITS that both keys have. The ratio in the table is recomputed from the two
# figures as a speed ratio (above 1: kiln, or the case's way of running it, is faster), whatever
# direction the stored ratio has.
PAIRS = [
    (r"(?P<c>.+)_beam_vs_openblas", "{c} with BEAM", "{c}_beam_{u}", "openblas_{c}_{u}", "OpenBLAS", "openblas_suspect"),
    (r"(?P<c>.+)_vs_openblas", "{c}", "{c}_{u}", "openblas_{c}_{u}", "OpenBLAS", "openblas_suspect"),
    (r"(?!openblas_)(?P<c>.+)_of_fma_peak", "{c}", "{c}_{u}", "fma_peak_{u}", "FMA peak", None),
    (r"(?P<c>.+)_vs_triad", "{c}", "{c}_{u}", "triad_{u}", "STREAM triad", None),
    (r"(?P<c>.+)_vs_torch", "{c}", "{c}_{u}", "torch_{c}_{u}", "PyTorch", "torch_suspect"),
    (r"(?P<c>.+)_vs_matmul_1024", "{c}", "{c}_{u}", "matmul_1024_{u}", "kiln's matmul_1024", None),
    (r"python_(?P<c>.+)_over_cpp", "{c} from Python", "python_{c}_{u}", "{c}_{u}", "kiln from C++", None),
    (r"(?P<c>.+)_CL_over_CPU", "{c} on OpenCL", "{c}_CL_{u}", "{c}_CPU_{u}", "kiln on CPU", None),
]

# The files of one run, in the order of run.sh; a LOCALS variant names its keys `localsN_...`.
FILES = ["kernels", "train_step", "devices", "devices_locals0", "devices_locals1"]
# Notes (one word) the run records about its references.
NOTES = {"openblas_core": "OpenBLAS kernels", "torch_blas": "PyTorch's BLAS"}


def last_time(jsonl_path):
    if not os.path.exists(jsonl_path):
        return None
    lines = [line for line in open(jsonl_path) if line.strip()]
    return json.loads(lines[-1]).get("time") if lines else None


def pair(key, figures):
    number = lambda k: isinstance(figures.get(k), float)
    for pattern, case, kiln_key, ref_key, ref_name, suspect_key in PAIRS:
        if not (m := re.fullmatch(pattern, key)):
            continue
        for suffix, (unit, lower_is_better) in UNITS.items():
            k, r = kiln_key.format(c=m["c"], u=suffix), ref_key.format(c=m["c"], u=suffix)
            if number(k) and number(r):
                ratio = figures[r] / figures[k] if lower_is_better else figures[k] / figures[r]
                if suspect_key and figures.get(suspect_key) == 1:
                    ref_name += " (**suspect**: below half the FMA peak)"
                return case.format(c=m["c"]), figures[k], figures[r], unit, ref_name, ratio
        return None
    return None


def rows_of(name, figures):
    # devices_locals0.txt names its keys locals0_matmul_512_...: the prefix becomes a label.
    variant = name.removeprefix("devices_") if name.startswith("devices_locals") else ""
    if variant:
        figures = {k.removeprefix(variant + "_"): v for k, v in figures.items()}
    label = f" ({variant.upper().replace('LOCALS', 'LOCALS=')})" if variant else ""
    rows = []
    for key in figures:
        if found := pair(key, figures):
            case, *rest = found
            rows.append((case + label, *rest))
    return rows


def machine(results_dir):
    path = os.path.join(results_dir, "machine.txt")
    if not os.path.exists(path):
        return f"{os.path.basename(os.path.abspath(results_dir))} (the results folder's name)"
    return "; ".join(line.strip() for line in open(path) if line.strip())


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    results_dir = sys.argv[1]
    out_path = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), "RESULTS.md")
    rows, times, sources, notes = [], [], [], {}
    for name in FILES:
        path = os.path.join(results_dir, name + ".txt")
        if not os.path.exists(path):
            continue
        sources.append(name + ".txt")
        figures = read_figures(path)
        rows += rows_of(name, figures)
        notes.update({label: figures[k] for k, label in NOTES.items() if isinstance(figures.get(k), str)})
        if t := last_time(os.path.join(results_dir, name + ".jsonl")):
            times.append(t)
    if not rows:
        sys.exit(f"results_table.py: no figures with a reference in {results_dir}")
    lines = [
        "# Benchmark results",
        "",
        "Generated by `bench/results_table.py` from the last `bash bench/run.sh` "
        f"(`{os.path.relpath(results_dir, os.path.dirname(os.path.abspath(out_path)))}/`: {', '.join(sources)}); "
        "do not edit by hand.",
        "",
        f"- Run: {min(times)} to {max(times)} (UTC)" if times else "- Run: date not recorded",
        f"- CPU: {machine(results_dir)}",
        *(f"- {label}: {value}" for label, value in notes.items()),
        "- Ratio: kiln's speed over the reference's, measured in the same run (above 1: kiln is faster).",
        "",
        "| case | kiln | reference | ratio | reference is |",
        "|---|---:|---:|---:|---|",
    ]
    for case, kiln, ref, unit, ref_name, ratio in rows:
        lines.append(f"| {case} | {kiln:.4g} {unit} | {ref:.4g} {unit} | {ratio:.2f} | {ref_name} |")
    with open(out_path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"results_table.py: {len(rows)} rows -> {out_path}")


main()
