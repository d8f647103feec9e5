#!/usr/bin/env bash
# kiln's CUDA device on a GPU machine that has a compiler, CMake and PyTorch but none of Debian's
# packages (the device tool's; docs/devices.md gives the call): builds kiln against the folder
# scripts/gpu_vendor.sh made (carried along), then with DEV=CUDA runs the op, fusion and fuzz-graph
# suites (tests/CMakeLists.txt's KILN_DEVICE_SUITES) and the training-step suites, a short
# Fashion-MNIST training run, and benchmarks against PyTorch on the same GPU (bench/gpu.cpp with
# bench/torch_gpu.py, bench/train_step.cpp with bench/torch_train_step.py). Writes summary.md (each
# stage's result, the first failures, the benchmark table), the figures and logs.tar.gz to $OUT.
# Each stage has its own time limit inside one overall budget (BUDGET_S), so a hang costs one stage.
#   scripts/gpu_check.sh             on the GPU machine
#   scripts/gpu_check.sh --dry-run   anywhere: DEV=CPU, -j2, CPU-sized benchmarks, PyTorch on the CPU
# Settings (environment): DEV, JOBS, BUILD, VENDOR, OUT, BUDGET_S, PARALLEL (suites at once),
# CMAKE_ARGS (more configure arguments), GTEST_FILTER (applies to every suite).
set -uo pipefail
cd "$(dirname "$0")/.." || exit
root=$PWD
dry=0
[ "${1:-}" = --dry-run ] && dry=1
if ((dry)); then
  DEV=${DEV:-CPU} JOBS=${JOBS:-2} PARALLEL=${PARALLEL:-1}
else
  DEV=${DEV:-CUDA} JOBS=${JOBS:-16} PARALLEL=${PARALLEL:-8}
fi
BUILD=${BUILD:-build/gpu} VENDOR=${VENDOR:-build/gpu_vendor} OUT=${OUT:-build/gpu_check_out}
BUDGET_S=${BUDGET_S:-450} CMAKE_ARGS=${CMAKE_ARGS:-}
mkdir -p "$OUT" "$BUILD"
logs=$(mktemp -d)
stages=$logs/stages.tsv
deadline=$(($(date +%s) + BUDGET_S))

# stage NAME LIMIT RESERVE COMMAND...: runs COMMAND, its output in $logs/NAME.log, for at most LIMIT
# seconds and never into the last RESERVE seconds of the budget (kept for the stages after it).
stage() {
  local name=$1 limit=$2 reserve=$3
  shift 3
  local left=$((deadline - reserve - $(date +%s)))
  ((left < limit)) && limit=$left
  if ((limit < 5)); then
    printf '%s\tSKIPPED (out of time)\t0\t\n' "$name" >>"$stages"
    echo "== $name: skipped, out of time"
    return 1
  fi
  local t0 status rc tests
  t0=$(date +%s)
  # through bash, so COMMAND may be one of the functions below (exported)
  timeout -k 10 "$limit" bash -c '"$@"' stage "$@" >"$logs/$name.log" 2>&1
  rc=$?
  case $rc in
    0) status=PASS ;;
    77) status=SKIPPED ;;
    124 | 137) status="TIMEOUT (${limit}s)" ;;
    *) status="FAIL (exit $rc)" ;;
  esac
  # a test binary's counts, from gtest's closing lines
  tests=$(grep -oE '^\[  (PASSED|SKIPPED|FAILED) *\] [0-9]+' "$logs/$name.log" | tr -d '[]' | tr -s ' ' | sed 's/^ //' | paste -sd,)
  printf '%s\t%s\t%s\t%s\n' "$name" "$status" $(($(date +%s) - t0)) "$tests" >>"$stages"
  echo "== $name: $status in $(($(date +%s) - t0))s"
  return $rc
}

# A stage that could not run at all (what it needed failed earlier).
not_run() { printf '%s\tNOT RUN (%s)\t0\t\n' "$1" "$2" >>"$stages"; }

# Where the loader does not know libnvrtc or libcuda, their folder goes on LD_LIBRARY_PATH (kiln opens
# both at run time by name); never the toolkit's stubs/libcuda.so, which has no driver behind it.
find_cuda_libraries() {
  local lib dir
  for lib in libnvrtc.so libcuda.so.1; do
    ldconfig -p 2>/dev/null | grep -q "$lib" && continue
    dir=$(find /usr/local/cuda*/ /usr/local/nvidia/ /usr/lib/x86_64-linux-gnu/ \
      "$(python3 -c 'import nvidia; print(nvidia.__path__[0])' 2>/dev/null)" -path '*/stubs' -prune -o \
      -name "$lib*" -printf '%h\n' -quit 2>/dev/null)
    [ -n "$dir" ] && export LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  done
}

# A python3 with torch: the first python3 on PATH (the GPU machine's), else Debian's.
python=python3
python3 -c 'import torch' 2>/dev/null || python=/usr/bin/python3

environment() {
  date -u
  uname -m
  nvidia-smi -L || true
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv || true
  nvcc --version | tail -2 || true
  c++ --version | head -1
  cmake --version | head -1
  ninja --version || true
  $python -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available())'
  echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
  ldconfig -p | grep -E 'libnvrtc.so|libcuda.so' || true
}

# The suites: tests/CMakeLists.txt's device list (op, fusion, fuzz graphs), the CUDA device's own
# tests, and the training-step ones (a jitted MNIST step, conv/pool, PyTorch's gradients and optimizers).
device_suites=$(sed -n '/^set(KILN_DEVICE_SUITES/,/)/p' tests/CMakeLists.txt | sed 's/^set(KILN_DEVICE_SUITES//; s/)//')
suites="test_cuda $device_suites test_jit test_nn_conv_pool test_torch_reference"

configure() {
  local generator=Ninja
  command -v ninja >/dev/null || generator="Unix Makefiles"
  # shellcheck disable=SC2086  # CMAKE_ARGS is a list of arguments
  cmake -S . -B "$BUILD" -G "$generator" -DCMAKE_BUILD_TYPE=Release -DKILN_VENDOR_DIR="$root/$VENDOR" \
    -DKILN_BUILD_PYTHON=OFF -DKILN_BUILD_TESTS=ON -DKILN_BUILD_EXAMPLES=ON -DKILN_BUILD_BENCH=ON ${CMAKE_ARGS:-}
}

build() {
  local keep_going=()
  [ -f "$BUILD/build.ninja" ] && keep_going=(-- -k 0)  # build every target that can be built
  # shellcheck disable=SC2086
  cmake --build "$BUILD" -j "$JOBS" --target kiln has_device $suites beautiful_mnist gpu train_step "${keep_going[@]}"
}

suite() {
  local name=$1 filter=()
  [ -n "${GTEST_FILTER:-}" ] && filter=(--gtest_filter="$GTEST_FILTER")
  [ -x "$BUILD/tests/$name" ] || { not_run "$name" "not built"; return; }
  if [ "$name" = test_torch_reference ]; then
    export KILN_TORCH_REFERENCE=$BUILD/torch_reference.safetensors
    $python tests/python/make_torch_reference.py "$KILN_TORCH_REFERENCE" >"$logs/torch_reference_make.log" 2>&1 ||
      { not_run "$name" "make_torch_reference.py failed, see torch_reference_make.log"; return; }
  fi
  # Keep room for MNIST and the benchmarks after the suites.
  stage "$name" 150 150 env SPEC=1 "$BUILD/tests/$name" --gtest_brief=1 "${filter[@]}"
}

mnist() {
  local args=(--epochs 1 --batch-size 128 --test-examples 2000)
  ((dry)) && args=(--epochs 1 --batch-size 32 --steps 4 --test-examples 256)
  "$BUILD/examples/beautiful_mnist" --data "$VENDOR/fashion-mnist" --checkpoint "$BUILD/mnist.safetensors" \
    --log-every 20 "${args[@]}"
}

# ---- the run
export DEV JOBS BUILD VENDOR OUT CMAKE_ARGS root dry logs python suites
export -f environment configure build mnist
echo "gpu_check: DEV=$DEV, -j$JOBS, $PARALLEL suites at once, budget ${BUDGET_S}s; logs in $logs"
find_cuda_libraries
stage environment 30 0 environment
ok=1
[ -d "$VENDOR/include" ] || { echo "no $VENDOR: run scripts/gpu_vendor.sh first (and carry it)"; ok=0; }
((ok)) && { stage configure 90 0 configure || ok=0; }
((ok)) && { stage build 300 0 build || [ -x "$BUILD/tests/has_device" ] || ok=0; }
((ok)) && { stage device 30 0 "$BUILD/tests/has_device" "$DEV" || ok=0; }
if ((ok)); then
  for s in $suites; do
    while (($(jobs -rp | wc -l) >= PARALLEL)); do wait -n; done
    suite "$s" &
  done
  wait
  stage mnist 60 90 mnist
  small=()
  ((dry)) && small=(--small)
  torch_device=cuda
  ((dry)) && torch_device=cpu
  batch=512
  ((dry)) && batch=64
  stage bench_kiln 90 40 "$BUILD/bench/gpu" "$OUT/gpu.txt" "${small[@]}"
  [ -s "$OUT/gpu.txt" ] && stage bench_torch 40 30 $python bench/torch_gpu.py "$OUT/gpu.txt" $torch_device
  stage train_step_kiln 45 15 "$BUILD/bench/train_step" "$OUT/train_step.txt" $batch &&
    stage train_step_torch 30 0 $python bench/torch_train_step.py "$OUT/train_step.txt" $torch_device
else
  for s in suites mnist bench; do not_run "$s" "an earlier stage failed"; done
fi

# ---- the summary
{
  echo "# kiln GPU check: DEV=$DEV on $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || echo 'no GPU')"
  echo
  echo "$(date -u), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores, -j$JOBS"
  echo
  echo "| stage | result | seconds | tests |"
  echo "|---|---|---|---|"
  awk -F'\t' '{print "| " $1 " | " $2 " | " $3 " | " $4 " |"}' "$stages"
  echo
  echo "## Environment"
  echo '```'
  cat "$logs/environment.log" "$logs/device.log" 2>/dev/null
  echo '```'
  echo
  echo "## First failures"
  awk -F'\t' '$2 !~ /^(PASS|SKIPPED)/ {print $1}' "$stages" | while read -r name; do
    log=$logs/$name.log
    [ -f "$log" ] || continue
    echo
    echo "### $name"
    echo '```'
    grep -m5 '^\[  FAILED  \]' "$log"
    # the first failure's message, a compiler error, or else the end of the log
    { grep -m1 -A12 -E 'Failure$|error:|FAILED:|terminate called|what\(\)' "$log" || tail -15 "$log"; } | cut -c1-300
    case $(grep -F "$name	" "$stages") in *"exit 13"[49]*) echo "... the end (it crashed):"; tail -3 "$log" ;; esac
    echo '```'
  done
  echo
  echo "## Benchmarks"
  echo '```'
  cat "$logs/bench_kiln.log" "$logs/bench_torch.log" "$logs/train_step_kiln.log" "$logs/train_step_torch.log" 2>/dev/null
  echo '```'
  echo
  echo "## MNIST"
  echo '```'
  grep -E '^done|accuracy|error' "$logs/mnist.log" 2>/dev/null | tail -3
  echo '```'
} >"$OUT/summary.md"
tar -czf "$OUT/logs.tar.gz" -C "$logs" .
cat "$OUT/summary.md"
awk -F'\t' '$2 !~ /^(PASS|SKIPPED)/ {bad=1} END {exit bad}' "$stages"
