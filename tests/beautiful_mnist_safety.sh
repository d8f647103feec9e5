#!/usr/bin/env bash
# What examples/beautiful_mnist.cpp must refuse or survive, with tiny settings: flag values out of
# range, checkpoint paths it cannot write (refused before training), a checkpoint path that is a
# symbolic link (written through), a checkpoint holding NaN, a loss that becomes NaN (training stops,
# the last checkpoint is kept) and Ctrl-C (a checkpoint of the current step is saved and resumed).
# Exits 77 (skipped) when Fashion-MNIST is not installed.
#   beautiful_mnist_safety.sh path/to/beautiful_mnist work-dir
set -euo pipefail
exe="$1"
work="$2"
source "$(dirname "$0")/mnist_test_setup.sh"
tiny=(--steps 2 --batch-size 16 --test-examples 32 --epochs 1)

# Runs the program, expecting it to fail with a message containing $1; its output is in $work/out.txt.
expect_error() {
  local phrase="$1"
  shift
  if "$exe" "$@" > "$work/out.txt" 2>&1; then fail "accepted $*"; fi
  grep -qF -- "$phrase" "$work/out.txt" || { cat "$work/out.txt"; fail "$* did not say: $phrase"; }
}

echo "== flag values out of range are short, clear errors"
nines=$(printf '9%.0s' $(seq 300))
for args in "--lr nan" "--lr -1" "--lr inf" "--lr 1e400" "--seed -1" "--seed 18446744073709551616" \
            "--epochs $nines" "--batch-size 0" "--steps 0x10"; do
  # shellcheck disable=SC2086  # the flag and its value are two words
  expect_error "expected a" $args --checkpoint "$work/unused.safetensors"
  grep -qE '[0-9]{30}' "$work/out.txt" && { cat "$work/out.txt"; fail "$args: the message prints a huge number"; }
  [ "$(wc -c < "$work/out.txt")" -lt 200 ] || { cat "$work/out.txt"; fail "$args: the message is long"; }
done
[ ! -e "$work/unused.safetensors" ] || fail "a refused run wrote a checkpoint"

echo "== bad checkpoint paths fail before training"
mkdir "$work/a_directory"
mkfifo "$work/a_fifo"
touch "$work/a_file"
expect_error "is a directory" "${tiny[@]}" --checkpoint "$work/a_directory"
expect_error "is a FIFO" "${tiny[@]}" --checkpoint "$work/a_fifo"
[ -p "$work/a_fifo" ] || fail "the FIFO was replaced"
expect_error "cannot create the directory" "${tiny[@]}" --checkpoint "$work/a_file/model.safetensors"
grep -q "step" "$work/out.txt" && fail "training started before the checkpoint path was checked"

echo "== a checkpoint path that is a symbolic link is written through"
mkdir "$work/real"
ln -s real/model.safetensors "$work/link.safetensors"
"$exe" "${tiny[@]}" --checkpoint "$work/link.safetensors" || fail "training through a link exited with $?"
[ -L "$work/link.safetensors" ] || fail "the link was replaced"
[ -s "$work/real/model.safetensors" ] || fail "the link's target was not written"
good="$work/real/model.safetensors"
cp "$good" "$work/good.safetensors"

echo "== a checkpoint holding NaN is refused, naming the tensor"
cp "$good" "$work/nan.safetensors"
python3 - "$work/nan.safetensors" <<'EOF'
import json, struct, sys
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
n = struct.unpack("<Q", data[:8])[0]
begin = json.loads(data[8:8 + n])["model.l1.weight"]["data_offsets"][0]
data[8 + n + begin + 12:8 + n + begin + 16] = struct.pack("<f", float("nan"))  # element 3
open(path, "wb").write(data)
EOF
expected='tensor "model.l1.weight" holds NaN (element 3 of 800)'
expect_error "$expected" --resume --epochs 2 --checkpoint "$work/nan.safetensors" --test-examples 32
expect_error "$expected" --eval "$work/nan.safetensors" --batch-size 16 --test-examples 32

echo "== a loss that becomes NaN stops training and keeps the last checkpoint"
expect_error "stopped without saving" --lr 1e30 --steps 20 --batch-size 16 --log-every 1 --epochs 1 \
  --test-examples 32 --checkpoint "$good"
cmp -s "$good" "$work/good.safetensors" || fail "the checkpoint was overwritten"

echo "== Ctrl-C saves the current step, and --resume continues from it"
# Runs the program in the background until its progress line shows a step, then sends SIGINT; the
# exit code must be 130 and the output ($work/run.txt) must say what was saved.
interrupt_run() {
  rm -f "$work/run.txt"  # the last run's lines must not be taken for this one's
  "$exe" "$@" --log-every 1 > "$work/run.txt" 2>&1 &
  local pid=$! waited=0 rc=0
  until grep -qs "step [0-9]*/3000" "$work/run.txt"; do
    sleep 0.2
    waited=$((waited + 1))
    [ "$waited" -lt 1500 ] || { kill "$pid"; fail "no training step within 300 s"; }
  done
  kill -INT "$pid"
  wait "$pid" || rc=$?
  [ "$rc" -eq 130 ] || { cat "$work/run.txt"; fail "interrupted run exited with $rc, not 130"; }
}
ckpt="$work/interrupted.safetensors"
interrupt_run --steps 3000 --batch-size 16 --test-examples 32 --epochs 1 --checkpoint "$ckpt"
saved=$(sed -n 's|^interrupted: saved epoch 1 step \([0-9]*\)/3000 to .*|\1|p' "$work/run.txt")
[ -n "$saved" ] || { cat "$work/run.txt"; fail "the interrupted run did not say it saved"; }
head -c 16384 "$ckpt" | grep -ac "\"epoch_step\":\"$saved\"" > /dev/null || fail "the checkpoint is not at step $saved"
interrupt_run --resume --checkpoint "$ckpt"
grep -q "resuming .* in epoch 1 after step $saved" "$work/run.txt" ||
  { cat "$work/run.txt"; fail "no mid-epoch resume"; }
first=$(grep -o "step [0-9]*/3000" "$work/run.txt" | head -n 1)
[ "$first" = "step $((saved + 1))/3000" ] || fail "resumed at $first, not step $((saved + 1))"
echo "ok"
