# Two ranks of calibrate_bootstrap_probe must print the same id digest.
# Usage: cmake -DBIN=... [-DMPIRUN=...] -P check_bootstrap.cmake (MPIRUN only for an MPI build)
function(expect_same_id what out)
  string(REGEX MATCHALL "id [0-9a-f]+" ids "${out}")
  list(LENGTH ids n)
  list(REMOVE_DUPLICATES ids)
  list(LENGTH ids distinct)
  if(NOT n EQUAL 2 OR NOT distinct EQUAL 1)
    message(FATAL_ERROR "${what}: expected one id from two ranks, got:\n${out}")
  endif()
  message(STATUS "${what}: ${out}")
endfunction()

# torchrun-style environment, both ranks on this host. Deriving the id opens no socket, so the
# ranks can run one after the other.
set(common WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29600)
execute_process(COMMAND ${CMAKE_COMMAND} -E env ${common} RANK=0 LOCAL_RANK=0 "${BIN}"
                OUTPUT_VARIABLE out0 ERROR_VARIABLE err0 RESULT_VARIABLE rc0)
execute_process(COMMAND ${CMAKE_COMMAND} -E env ${common} RANK=1 LOCAL_RANK=1 "${BIN}"
                OUTPUT_VARIABLE out1 ERROR_VARIABLE err1 RESULT_VARIABLE rc1)
if(NOT rc0 EQUAL 0 OR NOT rc1 EQUAL 0)
  message(FATAL_ERROR "environment bootstrap failed: ${err0} ${err1}")
endif()
expect_same_id("environment" "${out0}${out1}")
if(NOT out1 MATCHES "rank 1 of 2 local 1 via torchrun")
  message(FATAL_ERROR "environment bootstrap: rank 1 reported '${out1}'")
endif()

if(MPIRUN)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env OMPI_ALLOW_RUN_AS_ROOT=1
                          OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm=isolated
                          OMPI_MCA_btl=self,vader "${MPIRUN}" -np 2 --oversubscribe "${BIN}"
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT 120)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "mpirun -np 2 failed (${rc}): ${err}")
  endif()
  expect_same_id("mpirun" "${out}")
endif()
