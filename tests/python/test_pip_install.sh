#!/usr/bin/env bash
# `pip install --no-build-isolation .` into a temporary --target folder, then kiln imported and run
# from there alone (not from the source tree). Usage: test_pip_install.sh <repo> <cmake build dir>;
# the build dir is reused (KILN_BUILD_DIR), so only an out-of-date _kiln is rebuilt. Exits 77
# (skipped) when Debian's pip or setuptools is missing.
set -euo pipefail
repo=$(cd "$1" && pwd) build=$(cd "$2" && pwd)
python=/usr/bin/python3
if ! "$python" -m pip --version >/dev/null 2>&1 || ! "$python" -c "import setuptools, wheel" 2>/dev/null; then
  echo "skipped: pip, setuptools or wheel missing for $python (Debian: python3-pip python3-setuptools python3-wheel)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
KILN_BUILD_DIR=$build "$python" -m pip install --quiet --no-build-isolation --no-deps --no-index --no-cache-dir \
  --target "$tmp/site" "$repo"
cd "$tmp"
PYTHONPATH=$tmp/site "$python" - "$tmp/site" <<'PY'
import sys, numpy as np
import kiln, _kiln
from kiln import Tensor
site = sys.argv[1]
assert kiln.__file__.startswith(site) and _kiln.__file__.startswith(site), (kiln.__file__, _kiln.__file__)
x = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3), requires_grad=True)
y = (x * x).sum()
y.backward()
np.testing.assert_allclose(x.grad.numpy(), 2 * np.arange(6, dtype=np.float32).reshape(2, 3))
print("kiln imported from", site, "and ran")
PY
