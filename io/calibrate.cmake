# Calibration I/O: benchmark-log parsers, run directories (measurements.jsonl, provenance.json),
# hardware profiles.
target_sources(trainplan_io PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/src/nccl_tests_parser.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/all_reduce_bench_parser.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/measurements_json.cpp
  ${CMAKE_CURRENT_LIST_DIR}/src/profile_json.cpp)
if(NOT TARGET trainplan_calibrate_fit)
  message(FATAL_ERROR "io/calibrate.cmake needs trainplan_calibrate_fit (add calibrate/ before io/)")
endif()
target_link_libraries(trainplan_io PUBLIC trainplan_calibrate_fit)
