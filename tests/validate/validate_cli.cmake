# `trainplan validate` as a user meets it. Run by ctest as
#   cmake -DTRAINPLAN=... -DREFERENCE=.../data/reference -DFIXTURES=.../tests/validate/data -P validate_cli.cmake
# A report exits 0 however large its errors; bad input exits non-zero with a message naming it.
set(failures 0)

# check(NAME EXPECT_RC STDOUT_REGEX STDERR_REGEX ARGS...): EXPECT_RC is 0 or "nonzero"; "" skips a regex.
function(check name expect_rc out_regex err_regex)
  execute_process(COMMAND ${TRAINPLAN} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(ok TRUE)
  if(expect_rc STREQUAL "nonzero")
    if(rc EQUAL 0)
      set(ok FALSE)
    endif()
  elseif(NOT rc EQUAL expect_rc)
    set(ok FALSE)
  endif()
  if(NOT out_regex STREQUAL "" AND NOT out MATCHES "${out_regex}")
    set(ok FALSE)
  endif()
  if(NOT err_regex STREQUAL "" AND NOT err MATCHES "${err_regex}")
    set(ok FALSE)
  endif()
  if(ok)
    message("ok   ${name}")
  else()
    string(SUBSTRING "${out}" 0 2000 out_head)
    message("FAIL ${name} (exit ${rc})\n--- stdout\n${out_head}\n--- stderr\n${err}")
    math(EXPR f "${failures} + 1")
    set(failures ${f} PARENT_SCOPE)
  endif()
  set(last_out "${out}" PARENT_SCOPE)
endfunction()

check("text report" 0 "Summary" "" validate ${REFERENCE})
check("markdown report" 0 "^# Accuracy against reference runs" "" validate ${REFERENCE} --markdown)
check("json report" 0 "\"schema\": \"trainplan.validate/1\"" "" validate ${REFERENCE} --json)

# The oracle set: median absolute error at most 5 %.
string(JSON oracle_median ERROR_VARIABLE json_error GET "${last_out}" summary by_kind oracle median_abs_pct_error)
string(JSON oracle_cases ERROR_VARIABLE json_error2 GET "${last_out}" summary by_kind oracle cases)
if(json_error OR json_error2 OR NOT oracle_cases EQUAL 71 OR oracle_median GREATER 5)
  message("FAIL json summary: oracle cases ${oracle_cases}, median ${oracle_median} % ${json_error} ${json_error2}")
  math(EXPR failures "${failures} + 1")
else()
  message("ok   json summary: ${oracle_cases} oracle cases, median absolute error ${oracle_median} %")
endif()

check("one file" 0 "tiny-llama-lora" "" validate ${FIXTURES}/good/minimal.json)
check("open gap and stale mark in the report" 0 "peak_allocated .* open\n.*ok \\(stale open mark\\)" ""
      validate ${FIXTURES}/good/open_gaps.json)
check("open gaps counted apart" 0 "\"open\": 1" "" validate ${FIXTURES}/good/open_gaps.json --json)
check("empty open reason" nonzero "" "key 'open' must say why" validate ${FIXTURES}/bad/empty_open.json)
check("unknown metric" nonzero "" "unknown_metric\\.json.*unknown metric 'peak_memory'"
      validate ${FIXTURES}/bad/unknown_metric.json)
check("missing configuration" nonzero "" "missing_precision\\.json.*key 'precision' is missing"
      validate ${FIXTURES}/bad/missing_precision.json)
check("no unit" nonzero "" "no_unit\\.json.*key 'unit' is missing" validate ${FIXTURES}/bad/no_unit.json)
check("unreadable file" nonzero "" "cannot read reference file.*no-such-file\\.json"
      validate ${FIXTURES}/no-such-file.json)
check("bad file among good ones" nonzero "" "truncated\\.json.*invalid JSON"
      validate ${FIXTURES}/good/minimal.json ${FIXTURES}/bad/truncated.json)
check("no path" nonzero "" "" validate)
check("json and markdown together" nonzero "" "" validate ${FIXTURES}/good/minimal.json --json --markdown)

if(failures GREATER 0)
  message(FATAL_ERROR "${failures} validate command-line check(s) failed")
endif()
