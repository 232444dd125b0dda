#!/usr/bin/env bash
# One command on a fresh Debian machine: install dependencies, build trainplan, and answer the
# headline question "will a 13B model fit on 4x A100, and how should I run it?".
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
# The command line only: no GUI, no CUDA, no tests, no benchmarks (scripts/test.sh builds those).
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRAINPLAN_BUILD_TESTS=OFF \
  -DTRAINPLAN_BUILD_BENCH=OFF -DTRAINPLAN_BUILD_GUI=OFF -DTRAINPLAN_BUILD_CUDA=OFF
cmake --build build --target trainplan -j "$(nproc)"

echo
echo "\$ trainplan fit 13b 4xA100"
./build/cli/trainplan fit 13b 4xA100
echo
echo "The binary is build/cli/trainplan; try 'build/cli/trainplan --help', 'trainplan models', 'trainplan gpus'."
echo "scripts/test.sh builds everything (GUI, calibration, benchmarks) and runs every test."
