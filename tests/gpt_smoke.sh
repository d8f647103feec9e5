#!/usr/bin/env bash
# Smoke test of examples/gpt with a tiny model: 12 steps straight must lower the loss; the same run
# stopped after step 6 and resumed must print the same losses for steps 7..12 (the checkpoint holds
# the weights, AdamW's state and the step; the batches follow from the seed and the step); then
# --sample generates from the checkpoint. Exits 77 (skipped) when the fortunes are not installed.
#   gpt_smoke.sh path/to/gpt work-dir
set -euo pipefail
exe="$1"
work="$2"
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -d /usr/share/games/fortunes ] || { echo "skipping: no /usr/share/games/fortunes (apt-get install fortunes)"; exit 77; }
rm -rf "$work" && mkdir -p "$work"
tiny=(--steps 12 --layers 1 --heads 2 --dim 16 --block 16 --batch 4 --accum 2 --lr 1e-2 --warmup 2 --eval-batches 1
      --eval-every 100 --log-every 1)
losses() { sed -n 's/^step \([0-9]*\)\/12  loss \([0-9.]*\).*/\1 \2/p' "$1"; }

echo "== 12 steps"
"$exe" "${tiny[@]}" --out "$work/straight.safetensors" | tee "$work/straight.txt" || fail "training exited with $?"
first=$(losses "$work/straight.txt" | awk '$1 == 1 {print $2}')
last=$(losses "$work/straight.txt" | awk '$1 == 12 {print $2}')
awk -v a="$first" -v b="$last" 'BEGIN {exit !(b < a - 0.5)}' || fail "the loss did not fall: step 1 $first, step 12 $last"
grep -q "bits per byte" "$work/straight.txt" || fail "no validation line"

echo "== 6 steps, then --resume"
"$exe" "${tiny[@]}" --stop-at 6 --out "$work/resumed.safetensors" > "$work/part1.txt" || fail "stopping at 6 exited with $?"
"$exe" --resume "${tiny[@]}" --out "$work/resumed.safetensors" | tee "$work/part2.txt" || fail "resume exited with $?"
grep -q "resuming .* after step 6" "$work/part2.txt" || fail "resume did not start after step 6"
diff <(losses "$work/straight.txt" | awk '$1 > 6') <(losses "$work/part2.txt") ||
  fail "the resumed run's losses differ from the uninterrupted run's"

echo "== resume with nothing left, bad checkpoint path"
"$exe" --resume "${tiny[@]}" --out "$work/resumed.safetensors" | grep -q "nothing to train" || fail "no 'nothing to train'"
if "$exe" --resume --out "$work/missing.safetensors" 2> "$work/err.txt"; then fail "resumed from a missing file"; fi
grep -q "no checkpoint at" "$work/err.txt" || fail "unclear error for a missing checkpoint: $(cat "$work/err.txt")"

echo "== sample"
"$exe" --sample 20 --prompt "Q: " --out "$work/resumed.safetensors" > "$work/sample.txt" || fail "sampling exited with $?"
[ "$(head -c 3 "$work/sample.txt")" = "Q: " ] || fail "the sample does not start with the prompt"
[ "$(wc -c < "$work/sample.txt")" -ge 24 ] || fail "the sample is too short"
echo "ok"
