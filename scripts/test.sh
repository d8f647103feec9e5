#!/usr/bin/env bash
# Sets up the machine, then builds and runs every test: the release build, then the whole suite
# again under AddressSanitizer + UndefinedBehaviorSanitizer (without the Python extension: an
# ASan-instrumented module cannot be loaded into an uninstrumented python).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --for-tests

echo "== release build"
bash scripts/build.sh release
ctest --test-dir build/release --output-on-failure -j2

echo "== sanitizer build (ASan + UBSan)"
# use_sigaltstack=0: ASan's per-thread alternate signal stack is sometimes not unmapped when a thread
# exits on this VM ("unable to unmap", an ASan-internal CHECK that fails the test that owns the thread).
bash scripts/build.sh asan -DCMAKE_BUILD_TYPE=Debug -DKILN_SANITIZE=ON -DKILN_BUILD_EXAMPLES=OFF -DKILN_BUILD_BENCH=OFF \
  -DKILN_BUILD_PYTHON=OFF
# tests/lsan.supp: leaks inside third-party libraries (PoCL's), which kiln cannot free.
ASAN_OPTIONS=detect_leaks=1:use_sigaltstack=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  LSAN_OPTIONS="suppressions=$(pwd)/tests/lsan.supp" ctest --test-dir build/asan --output-on-failure -j2

echo "== fuzzers (libFuzzer + ASan + UBSan over the file parsers; skipped without clang)"
bash scripts/fuzz.sh 30
