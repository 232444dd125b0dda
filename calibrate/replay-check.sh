#!/usr/bin/env bash
# Replays three plans on a machine with one NVIDIA GPU (Hopper; no MPI needed): builds trainplan
# and trainplan-calibrate for sm_90, writes three estimates with `trainplan estimate --json` and
# runs each with `trainplan-calibrate --replay`, which measures every component one GPU runs in
# the plan (GEMMs, attention, memory-bound traffic, the optimizer step) against its prediction.
# About a minute on an H200 with 16 cores (40 s of it the build); each step has a time limit.
#
#   calibrate/replay-check.sh OUT_DIR
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
check_name=replay-check
# shellcheck source=check-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/check-common.sh"
build_targets trainplan trainplan-calibrate
trainplan=$build/cli/trainplan
calibrate=$build/calibrate/trainplan-calibrate
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
# FSDP on one GPU is the single-GPU plan where the strategy wants more ranks (exit 2 refuses it;
# exit 1 only says it does not fit).
"$trainplan" estimate llama-3.1-8b 1xH200 --strategy fsdp-full --json >/dev/null 2>&1
if [[ $? -eq 2 ]]; then
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
