#!/usr/bin/env bash
# Smoke test of examples/beautiful_mnist.py: 20 training steps of 128 images, one test-accuracy
# measurement on 1000 images, and the loss plot when matplotlib is installed. Checks the exit code,
# the printed accuracy and the plot, not the accuracy's value. Exits 77 (skipped) when Fashion-MNIST
# is not installed.
#   beautiful_mnist_python_smoke.sh PYTHON path/to/beautiful_mnist.py work-dir   (PYTHONPATH: the kiln package)
set -euo pipefail
python="$1"
script="$2"
work="$3"
source "$(dirname "$0")/mnist_test_setup.sh"

STEPS=20 BS=128 TEST_EVERY=20 TEST_EXAMPLES=1000 PLOT="$work/loss.png" "$python" "$script" 2>&1 | tr '\r' '\n' |
  tee "$work/out.txt" || fail "the example exited with $?"
grep -q "test_accuracy: *[0-9]" "$work/out.txt" || fail "no test accuracy was printed"
if "$python" -c "import matplotlib" 2>/dev/null; then
  [ -s "$work/loss.png" ] || fail "matplotlib is installed but no plot was written"
fi
echo "ok"
