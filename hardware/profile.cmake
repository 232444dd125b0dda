# Hardware profile: the calibrated constants and their queries (pure values, no I/O).
target_sources(trainplan_hardware PRIVATE ${CMAKE_CURRENT_LIST_DIR}/src/profile.cpp)
