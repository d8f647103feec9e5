"""Which BLAS this process's PyTorch runs its matmuls on, as one word: Debian's torch (BLAS_INFO=generic
in torch.__config__.show()) calls libblas.so.3, which may be OpenBLAS (then `openblas-<core>`, the
kernel set it picked, which bench/run.sh steers with OPENBLAS_CORETYPE) or the slow reference BLAS."""
import ctypes
import re

import torch


def torch_blas():
    info = re.search(r"BLAS_INFO=(\w+)", torch.__config__.show())
    name = info.group(1) if info else "unknown"
    # The BLAS library torch loaded, from this process's memory map.
    paths = {line.split()[-1] for line in open("/proc/self/maps") if re.search(r"/lib(open)?blas[^/]*\.so", line)}
    for path in sorted(paths):
        lib = ctypes.CDLL(path)
        if hasattr(lib, "openblas_get_corename"):
            lib.openblas_get_corename.restype = ctypes.c_char_p
            return f"{name}:openblas-{lib.openblas_get_corename().decode()}"
    return f"{name}:{'+'.join(p.rsplit('/', 1)[-1] for p in sorted(paths)) or 'none'}"
