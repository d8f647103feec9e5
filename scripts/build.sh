#!/usr/bin/env bash
# Configures and builds kiln into build/<name> (default: build/release): every target, or only the
# ones named with --target (and what they link), e.g. the training example without the tests.
#   scripts/build.sh [--target T]... [name] [extra cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."
targets=()
while [ "${1:-}" = "--target" ]; do
  targets+=(--target "$2")
  shift 2
done
name="${1:-release}"
shift || true
cmake -S . -B "build/$name" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "build/$name" "${targets[@]}"
