# Fails when a source or header under the given folders has more than LIMIT lines: a file that long
# holds more than one thing, and the house rule is one model or one stage per file.
#   cmake -DLIMIT=700 -DROOTS="a;b" -P file_length.cmake
set(over 0)
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
      # One unwrapped line each (a FATAL_ERROR message is re-wrapped at its spaces).
      message("${f}: ${n} lines (limit ${LIMIT})")
      math(EXPR over "${over} + 1")
    endif()
  endforeach()
endforeach()
if(over GREATER 0)
  message(FATAL_ERROR "${over} of ${count} files over ${LIMIT} lines")
endif()
message(STATUS "${count} files, none over ${LIMIT} lines")
