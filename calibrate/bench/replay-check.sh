#!/usr/bin/env bash
# Replays three plans on a machine with one NVIDIA GPU (Hopper; no MPI needed): builds trainplan
# and trainplan-calibrate for sm_90, writes three estimates with `trainplan estimate --json` and
# runs each with `trainplan-calibrate --replay`, which measures every component one GPU runs in
# the plan (GEMMs, attention, memory-bound traffic, the optimizer step) against its prediction.
# About a minute on an H200 with 16 cores (40 s of it the build); each step has a time limit.
#
#   calibrate/bench/replay-check.sh OUT_DIR
#
# The plans, all on 1xH200:
#   llama-2-7b-lora       LoRA r16 on q,v, bf16-true, seq 2048, micro-batch 1
#   llama-3.1-8b-fsdp     full fine-tune, bf16-mixed, fsdp-full (single where that needs more GPUs),
#                         seq 4096, micro-batch 1, full checkpointing
#   mistral-7b-lora-all   LoRA r16 on all linears, bf16-mixed, seq 4096, micro-batch 1, full
#                         checkpointing
# OUT_DIR receives configure.log and build.log, estimates/<plan>.json, replay-<plan>/replay.json
# (measured vs predicted per component, with provenance) and replay-<plan>.log (the table),
# replay-<plan>-profile/replay.json (the same components predicted with data/profiles/h200.json,
# no GPU work) and summary.txt. Exit code 0 when the build and all three replays finished.
# BUILD_DIR (default build-gpu-check in the repository, shared with gpu-check.sh) and JOBS (16)
# may be set; SKIP_BUILD=1 uses the binaries already in BUILD_DIR.
set -u

if [[ $# -ne 1 ]]; then
  echo "usage: $0 OUT_DIR" >&2
  exit 2
fi
out=$(mkdir -p "$1" && cd "$1" && pwd)
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${BUILD_DIR:-$repo/build-gpu-check}
jobs=${JOBS:-16}
summary=$out/summary.txt
: >"$summary"
status=0
start=$SECONDS

note() { echo "$*" | tee -a "$summary"; }

# Runs "$@" under a time limit, output to a file; notes the outcome.
step() {
  local name=$1 limit=$2 log=$3
  shift 3
  local t0=$SECONDS rc
  timeout --signal=TERM --kill-after=10 "$limit" "$@" >"$log" 2>&1
  rc=$?
  local took=$((SECONDS - t0))
  case $rc in
    0) note "PASS     $name (${took} s)" ;;
    124 | 137) note "TIMEOUT  $name after ${limit} s (see $log)"; status=1 ;;
    *) note "FAIL     $name: exit code $rc (${took} s, see $log)"; status=1 ;;
  esac
  return $rc
}

note "replay-check $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null |
  sed 's/^/GPU      /' | tee -a "$summary"

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
configure=(cmake -S "$repo" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release
  -DTRAINPLAN_CALIBRATE_MPI=OFF -DCMAKE_CUDA_ARCHITECTURES=90 -DTRAINPLAN_BUILD_GUI=OFF
  -DTRAINPLAN_BUILD_BENCH=OFF)
if [[ ${SKIP_BUILD:-0} == 1 ]]; then
  note "build skipped: using $build"
elif ! step "configure" 120 "$out/configure.log" "${configure[@]}" ||
  ! step "build" 300 "$out/build.log" \
    cmake --build "$build" -j "$jobs" --target trainplan trainplan-calibrate; then
  note "stopped: the build failed"
  exit 1
fi
trainplan=$build/cli/trainplan
calibrate=$build/calibrate/bench/trainplan-calibrate
profile=$repo/data/profiles/h200.json

mkdir -p "$out/estimates"
# estimate NAME [trainplan estimate arguments...]: the plan's JSON in estimates/NAME.json.
estimate() {
  local name=$1
  shift
  local rc
  timeout 60 "$trainplan" estimate "$@" --json >"$out/estimates/$name.json" \
    2>"$out/estimates/$name.err"
  rc=$?
  # Exit 1 is trainplan's "no, it does not fit": the JSON is written all the same, and a plan's
  # components can be replayed at their shapes whether or not its whole model fits.
  if [[ $rc -eq 0 ]]; then
    note "PASS     estimate $name: trainplan estimate $*"
  elif [[ $rc -eq 1 ]]; then
    note "PASS     estimate $name (does not fit; replayed for its shapes): trainplan estimate $*"
  else
    note "FAIL     estimate $name: exit code $rc (see estimates/$name.err)"
    status=1
  fi
}

# replay NAME [--plan-set KEY=VALUE...]: measured on the GPU, then predicted with the profile.
replay() {
  local name=$1
  shift
  local file=$out/estimates/$name.json rc
  if [[ ! -s $file ]]; then
    note "SKIPPED  replay $name: no estimate"
    return 1
  fi
  step "replay $name" 120 "$out/replay-$name.log" \
    "$calibrate" --replay "$file" "$@" -o "$out/replay-$name"
  rc=$?
  grep -E '^(step, |components one after another|[0-9]+ components measured|warning:)' \
    "$out/replay-$name.log" | sed 's/^/         /' | tee -a "$summary"
  if [[ -f $profile ]]; then
    "$calibrate" --replay "$file" "$@" --dry-run --profile "$profile" \
      -o "$out/replay-$name-profile" >"$out/replay-$name-profile.log" 2>&1 ||
      note "         (the prediction with $profile failed: see replay-$name-profile.log)"
  fi
  return $rc
}

estimate llama-2-7b-lora llama-2-7b 1xH200 --method lora --lora-rank 16 --lora-targets q,v \
  --precision bf16-true --seq 2048 --micro-batch 1
# FSDP on one GPU is the single-GPU plan where the strategy wants more ranks.
if ! "$trainplan" estimate llama-3.1-8b 1xH200 --strategy fsdp-full --json >/dev/null 2>&1; then
  note "note     fsdp-full on one GPU refused; llama-3.1-8b-fsdp uses --strategy single"
  fsdp=single
else
  fsdp=fsdp-full
fi
estimate llama-3.1-8b-fsdp llama-3.1-8b 1xH200 --method full --precision bf16-mixed \
  --strategy "$fsdp" --micro-batch 1 --seq 4096 --checkpointing full
estimate mistral-7b-lora-all mistral-7b 1xH200 --method lora --lora-rank 16 \
  --lora-targets all-linear --precision bf16-mixed --seq 4096 --micro-batch 1 --checkpointing full

replay llama-2-7b-lora || status=1
replay llama-3.1-8b-fsdp || status=1
# The estimate JSON does not record LoRA targets: they are given again.
replay mistral-7b-lora-all --plan-set lora_targets=all-linear --plan-set lora_rank=16 || status=1

note "done in $((SECONDS - start)) s; exit code $status"
exit $status
