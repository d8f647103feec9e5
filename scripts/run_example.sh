#!/usr/bin/env bash
# Sets up the machine, builds the example program (examples/quickstart.cpp, and the library it
# links) and runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh --target quickstart release
./build/release/examples/quickstart
