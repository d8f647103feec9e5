#!/usr/bin/env bash
# Installs what kiln needs on a fresh Debian machine: compilers, CMake, Ninja, GoogleTest, zlib,
# nlohmann-json, CLI11 (the training example's flags), the Fashion-MNIST dataset, pybind11 and the
# Python headers (the kiln Python package's extension), and NumPy + PyTorch + pytest for the Python
# tests. Python packages are Debian's, for /usr/bin/python3. Does nothing when everything is already there.
set -euo pipefail

packages=(g++ clang cmake ninja-build libgtest-dev libgmock-dev zlib1g-dev nlohmann-json3-dev libcli11-dev
          dataset-fashion-mnist pybind11-dev python3-dev python3-numpy python3-torch python3-pytest)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
fi
