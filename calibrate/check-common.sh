# Shared by gpu-check.sh and replay-check.sh (sourced, not run): the OUT_DIR argument, the summary
# file, timed steps and the build of the given targets for one sm_90 GPU without MPI.
# The caller sets `check_name` before sourcing and calls `build_targets TARGET...`.
set -u

if [[ $# -ne 1 ]]; then
  echo "usage: $0 OUT_DIR" >&2
  exit 2
fi
out=$(mkdir -p "$1" && cd "$1" && pwd)
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$repo/build-gpu-check}
jobs=${JOBS:-16}
summary=$out/summary.txt
: >"$summary"
status=0
start=$SECONDS

note() { echo "$*" | tee -a "$summary"; }

# Runs "$@" under a time limit, output to a file; notes the outcome. Exit code 77 is a skip.
step() {
  local name=$1 limit=$2 log=$3
  shift 3
  local t0=$SECONDS rc
  timeout --signal=TERM --kill-after=10 "$limit" "$@" >"$log" 2>&1
  rc=$?
  local took=$((SECONDS - t0))
  case $rc in
    0) note "PASS     $name (${took} s)" ;;
    77) note "SKIPPED  $name (${took} s): $(grep -m1 SKIPPED "$log")" ;;
    124 | 137) note "TIMEOUT  $name after ${limit} s (see $log)"; status=1 ;;
    *) note "FAIL     $name: exit code $rc (${took} s, see $log)"; status=1 ;;
  esac
  return $rc
}

note "$check_name $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null |
  sed 's/^/GPU      /' | tee -a "$summary"

# Configures and builds the targets (or, with SKIP_BUILD=1, uses what BUILD_DIR holds); exits 1
# when the build fails.
build_targets() {
  local generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  local configure=(cmake -S "$repo" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release
    -DTRAINPLAN_CALIBRATE_MPI=OFF -DCMAKE_CUDA_ARCHITECTURES=90 -DTRAINPLAN_BUILD_GUI=OFF
    -DTRAINPLAN_BUILD_BENCH=OFF)
  if [[ ${SKIP_BUILD:-0} == 1 ]]; then
    note "build skipped: using $build"
  elif ! step "configure" 120 "$out/configure.log" "${configure[@]}" ||
    ! step "build" 300 "$out/build.log" cmake --build "$build" -j "$jobs" --target "$@"; then
    note "stopped: the build failed"
    exit 1
  fi
}
