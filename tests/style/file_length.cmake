# Fails when a source or header under the given folders has more than LIMIT lines: a file that long
# holds more than one thing, and the house rule is one model or one stage per file.
#   cmake -DLIMIT=700 -DROOTS="a;b" -P file_length.cmake
set(over "")
set(count 0)
foreach(root IN LISTS ROOTS)
  file(GLOB_RECURSE files "${root}/*.cpp" "${root}/*.hpp" "${root}/*.h" "${root}/*.cu")
  foreach(f IN LISTS files)
    math(EXPR count "${count} + 1")
    # The newlines, counted as the characters left when all others are removed.
    file(READ "${f}" text)
    string(REGEX REPLACE "[^\n]" "" newlines "${text}")
    string(LENGTH "${newlines}" n)
    if(n GREATER LIMIT)
      string(APPEND over "${f}: ${n} lines (limit ${LIMIT})\n")
    endif()
  endforeach()
endforeach()
if(NOT over STREQUAL "")
  message(FATAL_ERROR "${over}${count} files read")
endif()
message(STATUS "${count} files, none over ${LIMIT} lines")
