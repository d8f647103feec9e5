#!/usr/bin/env bash
# Installs what kiln needs on a fresh Debian machine: compilers, CMake, Ninja, GoogleTest, zlib,
# nlohmann-json, CLI11 (the training example's flags), cpp-httplib (the VIZ server), the
# Fashion-MNIST dataset, pybind11 and the Python headers (the kiln Python package's extension),
# NumPy + PyTorch + pytest for the Python tests and pip + setuptools + wheel for `pip install .`
# (Debian's, for /usr/bin/python3), and Chromium,
# Node.js and npm for the VIZ page's browser test (whose packages `npm ci` puts in web/node_modules),
# and OpenCL (headers, the ICD loader, PoCL as a CPU OpenCL device, clinfo) for DEV=CL.
# Does nothing when everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(g++ clang cmake ninja-build pkg-config libgtest-dev libgmock-dev zlib1g-dev nlohmann-json3-dev
          libcli11-dev libcpp-httplib-dev dataset-fashion-mnist pybind11-dev python3-dev python3-numpy
          python3-torch python3-pytest python3-pip python3-setuptools python3-wheel chromium ocl-icd-opencl-dev
          opencl-headers pocl-opencl-icd clinfo)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
# Node.js may come from elsewhere than Debian (whose nodejs then conflicts): only a missing npm counts.
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
fi

# The browser test's Puppeteer, as package-lock.json pins it (the page itself needs nothing from npm:
# its layout library is vendored in web/vendor/).
if [ ! -d web/node_modules ] || [ web/package-lock.json -nt web/node_modules ]; then
  echo "setup: npm ci in web/"
  (cd web && npm ci --no-audit --no-fund --loglevel=error)
fi
