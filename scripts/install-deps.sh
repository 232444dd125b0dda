#!/usr/bin/env bash
# Installs everything trainplan builds against, from Debian's packages (bookworm), so that the
# default configure builds every part: CLI, GUI, tests and benchmarks. CUDA 13 (with cuBLASLt,
# cuDNN and NCCL) is not a Debian package: it is used from /usr/local/cuda when present, and without
# it trainplan-calibrate is left out (scripts/test.sh requires it where nvcc exists).
#
# Packages are installed without their recommendations, so every package the build needs is named
# here, including libqt6opengl6-dev: Qt6Charts' CMake package needs Qt6OpenGL, which qt6-base-dev
# only recommends and qt6-charts-dev does not depend on. (XKB, libxkbcommon-dev, is optional for
# Qt6Gui and only Qt6::GuiPrivate links it; trainplan-gui does not.) scripts/check-fresh-debian.sh
# proves the list on a pristine bookworm. libyaml-dev: trainplan reads the YAML training configs
# people already have (accelerate, litgpt, torchtune, axolotl) with libyaml, the parser under
# PyYAML's CSafeLoader.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  libeigen3-dev nlohmann-json3-dev libcli11-dev libfmt-dev libyaml-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  qt6-base-dev libqt6opengl6-dev qt6-charts-dev qt6-svg-dev libgl-dev
  fonts-dejavu-core
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
