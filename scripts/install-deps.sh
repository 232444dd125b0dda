#!/usr/bin/env bash
# Installs everything trainplan builds against, from Debian's packages. CUDA 13 (with cuBLASLt,
# cuDNN and NCCL) is expected under /usr/local/cuda when present; without it trainplan-calibrate is
# simply not built.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  libeigen3-dev nlohmann-json3-dev libcli11-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  qt6-base-dev qt6-charts-dev qt6-svg-dev libgl-dev fonts-dejavu-core
  libopenmpi-dev openmpi-bin
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "dependencies: all installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "dependencies: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
