#!/usr/bin/env bash
# Smoke test of examples/mnist_data_parallel.cpp with tiny settings: 3 steps as 2 MPI ranks (rank 0
# writes the checkpoint), the same as one process without mpirun, and a batch the ranks cannot split
# evenly, which must end both ranks with the error. Checks exit codes, output and the checkpoint, not
# accuracy. Exits 77 (skipped) when Fashion-MNIST is not installed.
#   mnist_data_parallel_smoke.sh MPIEXEC path/to/mnist_data_parallel work-dir
set -uo pipefail
mpiexec="$1"
exe="$2"
work="$3"
source "$(dirname "$0")/mnist_test_setup.sh"
ckpt="$work/ckpt/model.safetensors"
tiny=(--steps 3 --batch-size 16 --test-examples 32 --log-every 1 --checkpoint "$ckpt")
mpi=("$mpiexec" --allow-run-as-root --oversubscribe -np 2)

echo "== 2 ranks"
timeout 600 "${mpi[@]}" "$exe" "${tiny[@]}" > "$work/two.txt" 2>&1 || { cat "$work/two.txt"; fail "2 ranks exited with $?"; }
cat "$work/two.txt"
grep -q "2 ranks x 8 images per step" "$work/two.txt" || fail "the ranks did not split the batch"
grep -q "epoch 1/1: test accuracy" "$work/two.txt" || fail "rank 0 did not evaluate"
[ "$(grep -c "test accuracy" "$work/two.txt")" -eq 1 ] || fail "more than rank 0 evaluated"
head -c 16384 "$ckpt" | grep -ac '"ranks":"2"' > /dev/null || fail "no checkpoint of 2 ranks at $ckpt"

echo "== one process"
rm -f "$ckpt"
timeout 600 "$exe" "${tiny[@]}" > "$work/one.txt" 2>&1 || { cat "$work/one.txt"; fail "one process exited with $?"; }
grep -q "1 ranks x 16 images per step" "$work/one.txt" || fail "one process did not take the whole batch"
[ -s "$ckpt" ] || fail "no checkpoint at $ckpt"

echo "== a batch 2 ranks cannot split"
start=$(date +%s)
if timeout 120 "${mpi[@]}" "$exe" --steps 3 --batch-size 15 --checkpoint "$ckpt" > "$work/bad.txt" 2>&1; then fail "--batch-size 15 was accepted"; fi
cat "$work/bad.txt"
grep -q "must be a multiple of the 2 ranks" "$work/bad.txt" || fail "no error message"
[ $(($(date +%s) - start)) -lt 60 ] || fail "the failed job took too long to end"
echo "ok"
