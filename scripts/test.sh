#!/usr/bin/env bash
# One command: install dependencies, build everything with warnings as errors, run every test.
# GPU tests (ctest label 'gpu') skip visibly where no CUDA device exists.
#
# Every part is asked for explicitly, so a part that cannot be built fails the configure instead of
# being left out: the GUI, the benchmarks, and trainplan-calibrate wherever a CUDA compiler is
# installed (/usr/local/cuda/bin/nvcc, as on the CI machine). After the build the script checks
# that the binaries exist and that the GUI tests are among those ctest runs.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
BUILD_DIR=${BUILD_DIR:-build-test}

require_cuda=OFF
if [ -x /usr/local/cuda/bin/nvcc ] || command -v nvcc >/dev/null; then require_cuda=ON; fi

cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRAINPLAN_WERROR=ON \
  -DTRAINPLAN_BUILD_TESTS=ON -DTRAINPLAN_BUILD_GUI=ON -DTRAINPLAN_BUILD_BENCH=ON \
  -DTRAINPLAN_BUILD_CUDA=ON -DTRAINPLAN_REQUIRE_CUDA="$require_cuda"
cmake --build "$BUILD_DIR" -j "$(nproc)"

expected=(cli/trainplan gui/trainplan-gui bench/trainplan-bench)
if [ "$require_cuda" = ON ]; then expected+=(calibrate/trainplan-calibrate); fi
for bin in "${expected[@]}"; do
  if [ ! -x "$BUILD_DIR/$bin" ]; then
    echo "test.sh: $BUILD_DIR/$bin was not built" >&2
    exit 1
  fi
done
echo "test.sh: built ${expected[*]}"
if [ "$require_cuda" = OFF ]; then
  echo "test.sh: no CUDA compiler here: trainplan-calibrate and its tests are left out"
fi

export QT_QPA_PLATFORM=offscreen
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$(mktemp -d)}
cd "$BUILD_DIR"
gui_tests=$(ctest -N -L gui | sed -n 's/^Total Tests: //p')
if [ "${gui_tests:-0}" -eq 0 ]; then
  echo "test.sh: ctest has no tests labelled 'gui': the GUI tests would not run" >&2
  exit 1
fi
echo "test.sh: $gui_tests GUI tests among those ctest runs"
ctest --output-on-failure -j "$(nproc)" --timeout 600

# Optional: the emitted launch configs loaded by DeepSpeed's, accelerate's and Megatron-LM's own
# parsers (tools/emit_check), only where this Python has one of them. Never required.
repo=$OLDPWD  # the repository root, before the cd into the build directory
if command -v python3 >/dev/null &&
  { python3 -c "import deepspeed" 2>/dev/null || python3 -c "import accelerate" 2>/dev/null ||
    python3 -c "import megatron.training" 2>/dev/null; }; then
  python3 "$repo/tools/emit_check/emit_check.py" --trainplan cli/trainplan
else
  echo "test.sh: skipped: tools/emit_check (python3 has none of deepspeed, accelerate, Megatron-LM)"
fi
