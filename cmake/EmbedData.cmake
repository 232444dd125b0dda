# Embeds every JSON file under data/ into a C++ source as (relative path, text) pairs, so the
# binaries carry the catalogue and work from any directory. Run in script mode at build time:
#   cmake -DDATA_DIR=... -DOUT=... -P EmbedData.cmake
if(CMAKE_SCRIPT_MODE_FILE)
  file(GLOB_RECURSE files RELATIVE "${DATA_DIR}" "${DATA_DIR}/*.json")
  list(SORT files)
  set(body "// Generated from data/ at build time. Do not edit.\n#include \"trainplan/request/embedded.hpp\"\n\nnamespace trainplan::request {\nnamespace {\n")
  set(index 0)
  set(table "")
  foreach(f IN LISTS files)
    file(READ "${DATA_DIR}/${f}" text)
    string(APPEND body "constexpr char kFile${index}[] = R\"tpjson(${text})tpjson\";\n")
    # The length from sizeof, not a constexpr strlen: the compiler's constexpr step limit counts
    # every character of every file.
    string(APPEND table "      {\"${f}\", std::string_view(kFile${index}, sizeof(kFile${index}) - 1)},\n")
    math(EXPR index "${index} + 1")
  endforeach()
  string(APPEND body "}  // namespace\n\nstd::span<const EmbeddedFile> embedded_data() {\n  static constexpr EmbeddedFile kFiles[] = {\n${table}      {\"\", \"\"}};\n  return {kFiles, ${index}};\n}\n\n}  // namespace trainplan::request\n")
  file(WRITE "${OUT}.tmp" "${body}")
  file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
  file(REMOVE "${OUT}.tmp")
  return()
endif()

function(trainplan_embed_data out_cpp data_dir)
  file(GLOB_RECURSE files CONFIGURE_DEPENDS "${data_dir}/*.json")
  # The list of files itself, rewritten only when it changes: a file deleted from data/ leaves the
  # others older than the embedding, and this list is what makes it out of date.
  file(CONFIGURE OUTPUT "${out_cpp}.files" CONTENT "${files}")
  add_custom_command(
    OUTPUT "${out_cpp}"
    COMMAND ${CMAKE_COMMAND} -DDATA_DIR=${data_dir} -DOUT=${out_cpp} -P ${PROJECT_SOURCE_DIR}/cmake/EmbedData.cmake
    DEPENDS ${files} "${out_cpp}.files" ${PROJECT_SOURCE_DIR}/cmake/EmbedData.cmake
    COMMENT "Embedding data/ JSON"
    VERBATIM)
endfunction()
