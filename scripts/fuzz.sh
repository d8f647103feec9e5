#!/usr/bin/env bash
# Builds the libFuzzer harnesses of kiln's file parsers (tests/fuzz/) with clang into build/fuzz and
# runs each for SECONDS (default 30) from its seed corpus (tests/fuzz/seeds/), keeping what it finds in
# build/fuzz/corpus/. Skipped (exit 0) where clang is missing. A finding fails the run; libFuzzer
# saves the input as build/fuzz/crash-* (rerun it: build/fuzz/tests/fuzz/fuzz_gguf build/fuzz/crash-...).
# KILN_FUZZ_BUILD names another build folder.
#   scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-30}"
build="${KILN_FUZZ_BUILD:-build/fuzz}"
if ! command -v clang++ >/dev/null 2>&1; then
  echo "fuzz: skipped (no clang++)"
  exit 0
fi
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang \
  -DKILN_BUILD_FUZZERS=ON -DKILN_BUILD_TESTS=OFF -DKILN_BUILD_EXAMPLES=OFF -DKILN_BUILD_BENCH=OFF \
  -DKILN_BUILD_PYTHON=OFF >/dev/null
parsers="gguf safetensors"
# fuzz_onnx exists where the ONNX protobuf classes are found (libonnx-dev); it links the whole library.
if cmake --build "$build" --target help | grep -q '^fuzz_onnx:'; then parsers="$parsers onnx"; fi
cmake --build "$build" --target $(printf 'fuzz_%s ' $parsers)
for parser in $parsers; do
  mkdir -p "$build/corpus/$parser"
  echo "== fuzz_$parser for ${seconds}s"
  (cd "$build" && "tests/fuzz/fuzz_$parser" -max_total_time="$seconds" -rss_limit_mb=2048 -print_final_stats=1 \
     "corpus/$parser" "$OLDPWD/tests/fuzz/seeds/$parser" 2>&1 | grep -v '^#')
done
