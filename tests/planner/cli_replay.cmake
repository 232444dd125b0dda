# trainplan-calibrate --replay as a user meets it without a GPU: an estimate written by
# `trainplan estimate --json` priced component by component (--dry-run), the options the file does
# not record asked for by name, and a real run that stops before doing anything.
# cmake -DTRAINPLAN=<binary> -DCALIBRATE=<binary> -DWORK=<dir> -P cli_replay.cmake

function(run name expected_rc)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL expected_rc)
    message(FATAL_ERROR "${name}: expected exit ${expected_rc}, got ${rc}\n${out}\n${err}")
  endif()
  set(OUT "${out}" PARENT_SCOPE)
  set(ERR "${err}" PARENT_SCOPE)
endfunction()

function(expect_in name text what)
  string(FIND "${text}" "${what}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${name}: output lacks '${what}':\n${text}")
  endif()
endfunction()

file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

run(estimate-lora 0 ${TRAINPLAN} estimate llama-2-7b 1xH200 --method lora --lora-rank 16
    --lora-targets q,v --precision bf16-true --seq 2048 --json)
file(WRITE ${WORK}/lora.json "${OUT}")
run(dry-run 0 ${CALIBRATE} --replay ${WORK}/lora.json --dry-run -o ${WORK}/dry)
expect_in(dry-run "${OUT}" "q lora A forward")
expect_in(dry-run "${OUT}" "2048x16x4096 bf16")
expect_in(dry-run "${OUT}" "step, predicted")
file(READ ${WORK}/dry/replay.json replay)
expect_in(dry-run-json "${replay}" "\"schema\": \"trainplan.replay/1\"")

run(estimate-all-linear 0 ${TRAINPLAN} estimate mistral-7b 1xH200 --method lora
    --lora-targets all-linear --seq 4096 --checkpointing full --json)
file(WRITE ${WORK}/all-linear.json "${OUT}")
set(all_linear_estimate "${OUT}")
# The plan records its adapters: read back as they are.
run(recorded-targets 0 ${CALIBRATE} --replay ${WORK}/all-linear.json --dry-run)
expect_in(recorded-targets "${OUT}" "down lora A forward")
# A file that does not record them (written before it did): the defaults disagree with its
# trainable count, and the message says what to pass.
set(older "${all_linear_estimate}")
foreach(key lora_rank lora_alpha lora_dropout lora_targets)
  string(JSON older REMOVE "${older}" plan ${key})
endforeach()
file(WRITE ${WORK}/all-linear-older.json "${older}")
run(unrecorded-targets 2 ${CALIBRATE} --replay ${WORK}/all-linear-older.json --dry-run)
expect_in(unrecorded-targets "${ERR}" "key 'trainable_parameters'")
expect_in(unrecorded-targets "${ERR}" "--plan-set lora_targets=")
run(targets-given 0 ${CALIBRATE} --replay ${WORK}/all-linear-older.json --dry-run
    --plan-set lora_targets=all-linear)
expect_in(targets-given "${OUT}" "down lora A forward")

# No device visible: the message, exit 1, nothing written.
run(no-gpu 1 ${CMAKE_COMMAND} -E env CUDA_VISIBLE_DEVICES=-1
    ${CALIBRATE} --replay ${WORK}/lora.json -o ${WORK}/run)
expect_in(no-gpu "${ERR}" "error: no CUDA device found")
if(EXISTS ${WORK}/run)
  message(FATAL_ERROR "no-gpu: ${WORK}/run was created although nothing ran")
endif()
