#!/usr/bin/env bash
# Smoke test of examples/beautiful_mnist.cpp with tiny settings: train one epoch of 2 steps, resume
# for a second epoch, then evaluate the checkpoint. Checks exit codes, the checkpoint file and its
# metadata, not accuracy. Exits 77 (skipped) when Fashion-MNIST is not installed.
#   beautiful_mnist_smoke.sh path/to/beautiful_mnist work-dir
set -euo pipefail
exe="$1"
work="$2"
source "$(dirname "$0")/mnist_test_setup.sh"
ckpt="$work/ckpt/model.safetensors"  # in a directory that does not exist yet
tiny=(--steps 2 --batch-size 16 --test-examples 32 --checkpoint "$ckpt")

# The safetensors header (JSON, near the start of the file) holds the metadata. (grep -c reads
# all its input: grep -q could exit first and fail the pipeline on head's SIGPIPE.)
has_metadata() { head -c 16384 "$ckpt" | grep -ac "\"$1\":\"$2\"" > /dev/null; }

echo "== train epoch 1"
"$exe" "${tiny[@]}" --epochs 1 || fail "training exited with $?"
[ -s "$ckpt" ] || fail "no checkpoint at $ckpt"
has_metadata epoch 1 || fail "checkpoint metadata does not say epoch 1"

echo "== resume for epoch 2"
"$exe" --resume --epochs 2 --checkpoint "$ckpt" --test-examples 32 | tee "$work/resume.txt" ||
  fail "resume exited with $?"
grep -q "resuming .* after epoch 1" "$work/resume.txt" || fail "resume did not start after epoch 1"
has_metadata epoch 2 || fail "checkpoint metadata does not say epoch 2"
has_metadata step 4 || fail "checkpoint metadata does not count 4 optimizer steps"

echo "== resume with a different batch size must fail"
if "$exe" --resume --epochs 3 --batch-size 32 --checkpoint "$ckpt"; then fail "resume accepted a new --batch-size"; fi

echo "== eval"
"$exe" --eval "$ckpt" --batch-size 16 --test-examples 32 | tee "$work/eval.txt" || fail "eval exited with $?"
grep -q "test accuracy" "$work/eval.txt" || fail "eval printed no accuracy"
echo "ok"
