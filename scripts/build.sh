#!/usr/bin/env bash
# Configures and builds kiln into build/<name> (default: build/release).
#   scripts/build.sh [name] [extra cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."
name="${1:-release}"
shift || true
cmake -S . -B "build/$name" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "build/$name"
