#!/usr/bin/env bash
# Regenerates the README's screenshots of trainplan-gui from the GUI's own test run: the ctest cases
# gui_screenshot_1024x700 and gui_screenshot_1600x1000 render the window headless (a plan search
# run, its chart shown), and this copies their PNGs to docs/. Run after scripts/test.sh, or give the
# build folder: scripts/update-screenshots.sh [BUILD_DIR] (default: build-test, scripts/test.sh's).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build-test}"
if [[ ! -f "$build/CTestTestfile.cmake" ]]; then
  echo "update-screenshots: no build in '$build' (run scripts/test.sh first, or name the build folder)" >&2
  exit 2
fi
(cd "$build" && ctest -R 'gui_screenshot_(1024x700|1600x1000)' --output-on-failure)
for size in 1024x700 1600x1000; do
  shot="$build/gui/screenshots/trainplan-gui-$size.png"
  if [[ ! -s "$shot" ]]; then
    echo "update-screenshots: the test run wrote no $shot" >&2
    exit 1
  fi
  cp "$shot" "$root/docs/trainplan-gui-$size.png"
  echo "docs/trainplan-gui-$size.png"
done
