# Runs trainplan-calibrate where no CUDA device is visible and checks that it says so, exits 1 and
# writes nothing. Usage: cmake -DBIN=... -DWORK=... -P check_no_gpu.cmake
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
execute_process(COMMAND "${BIN}" -o "${WORK}/x" --quick
                WORKING_DIRECTORY "${WORK}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "exit code ${rc}; stderr: ${err}")
if(NOT rc EQUAL 1)
  message(FATAL_ERROR "expected exit code 1, got ${rc}")
endif()
if(NOT err MATCHES "error: no CUDA device found \\(cudaGetDeviceCount: [^)]+\\)")
  message(FATAL_ERROR "stderr lacks 'error: no CUDA device found (cudaGetDeviceCount: ...)'")
endif()
if(EXISTS "${WORK}/x")
  message(FATAL_ERROR "${WORK}/x was created although nothing was measured")
endif()
