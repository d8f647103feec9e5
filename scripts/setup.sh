#!/usr/bin/env bash
# Installs what kiln needs on a fresh Debian machine to build and run it: compilers, CMake, Ninja,
# GoogleTest (configuring the default build, tests included, needs it), zlib, nlohmann-json, CLI11
# (the training example's flags), cpp-httplib (the VIZ server), the Fashion-MNIST dataset, pybind11,
# the Python headers and NumPy (the kiln Python package and its extension, for /usr/bin/python3),
# ONNX's protobuf definitions (the ONNX importer), Open MPI (data-parallel training) and the fortunes
# corpus (the GPT example's text).
# With --for-tests (scripts/test.sh), also what only the tests use: PyTorch, SentencePiece (the
# tokenizer tests' reference), the ONNX backend test data and python3-onnx, + pytest for the reference tests and pip + setuptools + wheel for
# `pip install .` (Debian's, for /usr/bin/python3),
# Chromium, Node.js and npm for the VIZ page's browser test (whose packages `npm ci` puts in
# web/node_modules), and OpenCL (headers, the ICD loader, PoCL as a CPU OpenCL device, clinfo) for
# the DEV=CL suites.
# Does nothing when everything is already there.
#   scripts/setup.sh [--for-tests]
set -euo pipefail
cd "$(dirname "$0")/.."

for_tests=0
case "${1:-}" in
  "") ;;
  --for-tests) for_tests=1 ;;
  *) echo "setup: unknown argument '$1' (expected none or --for-tests)" >&2; exit 2 ;;
esac

packages=(g++ clang cmake ninja-build pkg-config libgtest-dev libgmock-dev zlib1g-dev nlohmann-json3-dev
          libcli11-dev libcpp-httplib-dev dataset-fashion-mnist pybind11-dev python3-dev python3-numpy
          libonnx-dev libprotobuf-dev protobuf-compiler libopenmpi-dev openmpi-bin fortunes fortunes-min)
test_packages=(python3-torch python3-sentencepiece libonnx-testdata python3-onnx python3-pytest python3-pip python3-setuptools python3-wheel chromium
               ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo)
if [ "$for_tests" -eq 1 ]; then packages+=("${test_packages[@]}"); fi
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
# Node.js may come from elsewhere than Debian (whose nodejs then conflicts): only a missing npm counts.
if [ "$for_tests" -eq 1 ] && ! command -v npm >/dev/null 2>&1; then missing+=(nodejs npm); fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
fi

# The browser test's Puppeteer, as package-lock.json pins it (the page itself needs nothing from npm:
# its layout library is vendored in web/vendor/).
[ "$for_tests" -eq 1 ] || exit 0
if [ ! -d web/node_modules ] || [ web/package-lock.json -nt web/node_modules ]; then
  echo "setup: npm ci in web/"
  (cd web && npm ci --no-audit --no-fund --loglevel=error)
fi
