#!/usr/bin/env bash
# Sets up the machine, builds the training example (release; only it and the library it links, not
# the tests) and trains tinygrad's beautiful_mnist CNN on Fashion-MNIST (examples/beautiful_mnist.cpp).
# Arguments go to the program: see --help.
#   bash scripts/train.sh                       # the defaults
#   bash scripts/train.sh --epochs 1 --steps 20 # a quick run
#   bash scripts/train.sh --resume              # continue from the checkpoint
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh --target beautiful_mnist release
exec ./build/release/examples/beautiful_mnist "$@"
