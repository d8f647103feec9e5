"""Keeps the code in README.md and docs/*.md true: every ```cpp block is compiled as a whole program
against this build's headers and library (the flags of its kiln.pc) and run; every ```python block
is run with the built package. A block fails the test if it does not compile, exits non-zero or
takes over RUN_TIMEOUT_S; blocks check their own results (asserts, exit codes). Other blocks (```sh,
```cmake, ```text) are not run.
usage: doc_blocks.py --source DIR --build DIR --cxx CXX [--flags FLAGS] [--pythonpath PATH] [FILE.md ...]
(without --pythonpath, as in a sanitizer build without the extension, the python blocks are skipped)"""
import argparse
import glob
import os
import re
import shlex
import subprocess
import sys
import time

BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.M | re.S)
RUN_TIMEOUT_S = 120  # per compile or run: a loaded 2-core machine compiles kiln.h slowly


def blocks(path):
    text = open(path).read()
    for m in BLOCK.finditer(text):
        if m[1] in ("cpp", "python"):
            yield m[1], text.count("\n", 0, m.start()) + 1, m[2]


def kiln_flags(args):
    # The build tree's kiln.pc names the dependencies; its prefix is an install's, so point it here.
    env = {**os.environ, "PKG_CONFIG_PATH": args.build}
    out = subprocess.run(["pkg-config", f"--define-variable=includedir={args.source}/include",
                          f"--define-variable=libdir={args.build}", "--cflags", "--libs", "kiln"],
                         env=env, capture_output=True, text=True, check=True).stdout
    return shlex.split(out) + [f"-Wl,-rpath,{args.build}"]  # rpath: for a shared libkiln


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, **kw)


def check_cpp(code, name, args, work):
    src, exe = os.path.join(work, name + ".cpp"), os.path.join(work, name)
    open(src, "w").write(code)
    r = run([args.cxx, "-std=c++20", "-O1", *shlex.split(args.flags), src, "-o", exe, *args.kiln_flags])
    return r if r.returncode else run([exe], cwd=work)


def check_python(code, name, args, work):
    env = {**os.environ, "PYTHONPATH": args.pythonpath}
    return run([sys.executable, "-c", code], cwd=work, env=env)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--source", required=True)
    p.add_argument("--build", required=True)
    p.add_argument("--cxx", required=True)
    p.add_argument("--flags", default="")
    p.add_argument("--pythonpath", default="")
    p.add_argument("files", nargs="*")
    args = p.parse_args()
    args.source, args.build = os.path.abspath(args.source), os.path.abspath(args.build)
    files = args.files or [os.path.join(args.source, "README.md"),
                           *sorted(glob.glob(os.path.join(args.source, "docs", "*.md")))]
    args.kiln_flags = kiln_flags(args)
    work = os.path.join(args.build, "tests", "doc_blocks")
    os.makedirs(work, exist_ok=True)
    failed = ran = 0
    for path in files:
        for lang, line, code in blocks(path):
            where = f"{os.path.relpath(path, args.source)}:{line}"
            if lang == "python" and not args.pythonpath:
                print(f"{where} python: skipped (no Python package in this build)")
                continue
            name = re.sub(r"\W", "_", os.path.relpath(path, args.source)) + f"_{line}"
            t0 = time.perf_counter()
            try:
                r = (check_cpp if lang == "cpp" else check_python)(code, name, args, work)
            except subprocess.TimeoutExpired as e:
                r = subprocess.CompletedProcess(e.cmd, 124, e.stdout or "", f"timed out after {RUN_TIMEOUT_S} s")
            ran += 1
            print(f"{where} {lang}: {'ok' if r.returncode == 0 else 'FAILED'} ({time.perf_counter() - t0:.1f} s)")
            if r.returncode:
                failed += 1
                print(f"---- exit {r.returncode}\n{r.stdout}{r.stderr}----")
    print(f"{ran} blocks run, {failed} failed")
    if ran == 0:
        sys.exit("doc_blocks.py: no cpp or python blocks found in " + ", ".join(files))
    sys.exit(1 if failed else 0)


main()
