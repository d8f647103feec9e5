#!/usr/bin/env bash
# Sets up the machine, builds kiln and runs the example program (examples/quickstart.cpp).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh release
./build/release/examples/quickstart
