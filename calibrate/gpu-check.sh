#!/usr/bin/env bash
# Checks trainplan-calibrate on a machine with an NVIDIA GPU (Hopper; no MPI needed): builds
# trainplan-calibrate and calibrate_gpu_test for sm_90, runs every GPU test case, then the attention
# sweep (cuDNN and unfused, causal and not, forward and backward) and the optimizer, elementwise and
# launch-overhead families. About 70 s on an H200 with 16 cores (20 s of it the build); each step
# has a time limit, so a hang cannot hold it for more than a few minutes.
#
#   calibrate/gpu-check.sh OUT_DIR
#
# OUT_DIR receives build.log, tests/<case>.txt, cudnn-tests.log (cuDNN's own warnings and errors
# during the attention tests), attention/ and kernels/ (run directories: measurements.jsonl,
# provenance.json) and summary.txt. Exit code 0 when every test case passed or skipped and both
# runs finished. BUILD_DIR (default build-gpu-check in the repository) and JOBS (16) may be set;
# SKIP_BUILD=1 uses the binaries already in BUILD_DIR.
check_name=gpu-check
# shellcheck source=check-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/check-common.sh"
build_targets trainplan-calibrate calibrate_gpu_test
bin=$build/calibrate/trainplan-calibrate
test_bin=$build/tests/gpu/calibrate_gpu_test

mkdir -p "$out/tests"
# cuDNN explains a refused graph only in its own log: level 2 is warnings and errors.
for case in matmul_layout gemm_peak hbm_copy attention attention_bwd adamw elementwise launch \
  all_reduce; do
  if [[ $case == attention* ]]; then
    CUDNN_LOGLEVEL_DBG=2 CUDNN_LOGDEST_DBG=$out/cudnn-tests.log \
      step "test $case" 90 "$out/tests/$case.txt" "$test_bin" "$case"
  else
    step "test $case" 90 "$out/tests/$case.txt" "$test_bin" "$case"
  fi
  sed 's/^/         /' "$out/tests/$case.txt" | tail -n 14 >>"$summary"
done

# Every attention point: 3 head layouts x 5 sequence lengths x causal or not, forward and backward,
# cuDNN and unfused (120 points).
step "trainplan-calibrate --attention" 180 "$out/attention.log" \
  "$bin" --attention -o "$out/attention"
step "trainplan-calibrate --optimizer --elementwise --launch" 90 "$out/kernels.log" \
  "$bin" --optimizer --elementwise --launch -o "$out/kernels"
if [[ -f $out/attention/provenance.json ]]; then
  note "libraries: $(sed -n 's/^ *"\(cuda\|cudnn\|cublas\)": "\([^"]*\)".*/\1 \2/p' \
    "$out/attention/provenance.json" | paste -sd, -)"
fi
for run in attention kernels; do
  file=$out/$run/measurements.jsonl
  [[ -f $file ]] || continue
  note "$run: $(grep -vc '"kind":"skipped"' "$file") points measured, $(grep -c '"kind":"skipped"' "$file") skipped"
  grep '"kind":"skipped"' "$file" | head -n 5 | cut -c1-400 | sed 's/^/         /' >>"$summary"
done

note "done in $((SECONDS - start)) s; exit code $status"
exit $status
