# trainplan estimate and plan as a user meets them: the README examples, JSON, emitters, and every
# kind of bad input (exit code 2 and a message naming the input).
# cmake -DTRAINPLAN=<binary> -DWORK=<dir> -P cli_estimate_plan.cmake

function(run_ok name)
  execute_process(COMMAND ${TRAINPLAN} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${name}: exit ${rc}\n${out}\n${err}")
  endif()
  set(OUT "${out}" PARENT_SCOPE)
  set(ERR "${err}" PARENT_SCOPE)
endfunction()

function(run_fails name expected)
  execute_process(COMMAND ${TRAINPLAN} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 2)
    message(FATAL_ERROR "${name}: expected exit 2, got ${rc}\n${out}\n${err}")
  endif()
  string(FIND "${err}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${name}: message does not name '${expected}':\n${err}")
  endif()
endfunction()

function(expect_in name text what)
  string(FIND "${text}" "${what}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${name}: output lacks '${what}':\n${text}")
  endif()
endfunction()

file(MAKE_DIRECTORY ${WORK})

run_ok(estimate-70b estimate llama-2-70b 4x8xH100-80GB --strategy fsdp-full --micro-batch 2 --seq 4096
       --checkpointing full --tokens 1T)
expect_in(estimate-70b "${OUT}" "Throughput:")
expect_in(estimate-70b "${OUT}" "MFU")
expect_in(estimate-70b "${OUT}" "Time to train 1e+12 tokens")

# GPT-3 175B with TP 8, interleaved PP and sequence parallelism: Megatron-LM's accounting (under
# Hugging Face eager accounting, with the tanh GELU in fp32 under autocast, it does not fit).
run_ok(estimate-175b estimate gpt3-175b 8x8xA100-80GB --tp 8 --pp 8 --pp-virtual 3 --sequence-parallel
       --checkpointing selective --global-batch 64 --framework megatron --json)
string(JSON schema GET "${OUT}" schema)
if(NOT schema STREQUAL "trainplan.estimate/1")
  message(FATAL_ERROR "estimate --json schema: ${schema}")
endif()
string(JSON accum GET "${OUT}" plan grad_accum)
if(NOT accum EQUAL 64)
  message(FATAL_ERROR "global batch 64 on DP 1 should give 64 micro-batches, got ${accum}")
endif()

run_ok(plan-8b plan llama-3.1-8b 2x8xA100-80GB --global-batch 512 --seq 8192 --top 5 --json)
string(JSON schema GET "${OUT}" schema)
string(JSON nplans LENGTH "${OUT}" plans)
if(NOT schema STREQUAL "trainplan.plan/1" OR NOT nplans EQUAL 5)
  message(FATAL_ERROR "plan --json: schema ${schema}, ${nplans} plans")
endif()

run_ok(plan-text plan llama-3.1-8b 2x8xA100-80GB --global-batch 512 --seq 8192 --top 3 --tokens 15T)
expect_in(plan-text "${OUT}" "slower")
expect_in(plan-text "${OUT}" "Rejected:")

run_ok(plan-emit plan 13b 4xA100 --method lora --emit accelerate)
expect_in(plan-emit "${OUT}" "distributed_type:")
run_ok(plan-emit-ds plan 13b 4xA100 --framework deepspeed --emit deepspeed)
expect_in(plan-emit-ds "${OUT}" "\"zero_optimization\"")
run_ok(estimate-expert-parallel estimate mixtral-8x7b 2x8xH100-80GB --strategy zero3 --expert-parallel 8 --checkpointing full --json)
expect_in(estimate-expert-parallel "${OUT}" "\"expert_parallel\": 8")
expect_in(estimate-expert-parallel "${OUT}" "MoE all-to-all")
run_ok(estimate-emit-megatron-ep estimate mixtral-8x7b 8xH100-80GB --framework megatron --strategy zero1 --expert-parallel 8 --emit torchrun)
expect_in(estimate-emit-megatron-ep "${OUT}" "--expert-model-parallel-size 8")
run_ok(estimate-activations estimate t5-3b A100-80GB --strategy single --activations)
expect_in(estimate-activations "${OUT}" "Saved for backward by one encoder block")
expect_in(estimate-activations "${OUT}" "Saved for backward by one decoder block")
expect_in(estimate-activations "${OUT}" "cross-attention q, k, v and output")
run_ok(estimate-emit-deepspeed-ep estimate mixtral-8x7b 8xH100-80GB --strategy zero3 --expert-parallel 8 --emit deepspeed)
expect_in(estimate-emit-deepspeed-ep "${ERR}" "cannot express expert parallelism 8")  # notes: stderr
run_ok(estimate-emit-torchrun estimate 7b 2x8xA100-80GB --strategy fsdp-full --emit torchrun)
expect_in(estimate-emit-torchrun "${OUT}" "torchrun --nnodes=2 --nproc_per_node=8")

# Bad input: exit 2, the message names the input.
run_fails(bad-tp "--tp 3" estimate 13b 8xA100-80GB --tp 3)
run_fails(bad-degrees "does not divide" estimate 13b 8xA100-80GB --tp 4 --pp 4)
run_fails(bad-global-batch "--global-batch 10" estimate 13b 4xA100-80GB --global-batch 10 --micro-batch 2)
run_fails(bad-global-tokens "--global-batch-tokens" estimate 13b 4xA100-80GB --global-batch-tokens 1000 --seq 2048)
run_fails(bad-tokens "--tokens" estimate 13b 4xA100-80GB --tokens 12parsecs)
run_fails(bad-emit "emit format" plan 13b 4xA100-80GB --emit slurm)
file(WRITE ${WORK}/broken_profile.json "{\"schema\": \"trainplan.profile/1\", ")
run_fails(bad-profile "--profile" estimate 13b 4xA100-80GB --profile ${WORK}/broken_profile.json)
run_fails(missing-profile "--profile" plan 13b 4xA100-80GB --profile ${WORK}/no_such_profile.json)
run_fails(bad-expert-parallel-dense "--expert-parallel 2" estimate 13b 4xA100-80GB --strategy ddp --expert-parallel 2)
run_fails(bad-expert-parallel-ranks "--expert-parallel 8" fit mixtral-8x7b 4xH100-80GB --strategy zero3 --expert-parallel 8)

# Infeasible is an answer, not an error: printed, and exit 1 (the answer is no).
function(run_no name)
  execute_process(COMMAND ${TRAINPLAN} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 1)
    message(FATAL_ERROR "${name}: expected exit 1 (no), got ${rc}\n${out}\n${err}")
  endif()
  set(OUT "${out}" PARENT_SCOPE)
endfunction()
run_no(plan-nothing-fits plan llama-2-70b A100-80GB)
expect_in(plan-nothing-fits "${OUT}" "No plan fits.")
run_no(plan-nothing-fits-json plan llama-2-70b A100-80GB --json)
expect_in(plan-nothing-fits-json "${OUT}" "\"plans\": []")
run_no(estimate-does-not-fit estimate llama-2-70b A100-80GB)
expect_in(estimate-does-not-fit "${OUT}" "DOES NOT FIT")
