#!/usr/bin/env bash
# One command: install dependencies, build everything with warnings as errors, run every test.
# GPU tests (ctest label 'gpu') skip visibly where no CUDA device exists.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
BUILD_DIR=${BUILD_DIR:-build-test}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRAINPLAN_WERROR=ON
cmake --build "$BUILD_DIR" -j "$(nproc)"

export QT_QPA_PLATFORM=offscreen
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$(mktemp -d)}
cd "$BUILD_DIR"
ctest --output-on-failure -j "$(nproc)" --timeout 600
