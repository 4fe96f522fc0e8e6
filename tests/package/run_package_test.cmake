# Installs the build tree into a scratch prefix, then configures, builds and runs the
# consumer project and the examples (EXAMPLES_DIR) against it. Fails on the first step that
# fails.
file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")

function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "failed (${status}): ${ARGN}")
  endif()
endfunction()

step("${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}")
# With the command come its manual page and bash completion (share/, where man and
# bash-completion look under the prefix).
if(EXISTS "${prefix}/bin/dnstransport")
  foreach(file share/man/man1/dnstransport.1.gz share/bash-completion/completions/dnstransport)
    if(NOT EXISTS "${prefix}/${file}")
      message(FATAL_ERROR "not installed with the command: ${prefix}/${file}")
    endif()
  endforeach()
endif()
step("${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${WORK_DIR}/build" -G "${GENERATOR}"
     "-DCMAKE_PREFIX_PATH=${prefix}" -DCMAKE_BUILD_TYPE=Release)
step("${CMAKE_COMMAND}" --build "${WORK_DIR}/build")
step("${WORK_DIR}/build/consumer")

step("${CMAKE_COMMAND}" -S "${EXAMPLES_DIR}" -B "${WORK_DIR}/examples" -G "${GENERATOR}"
     "-DCMAKE_PREFIX_PATH=${prefix}" -DCMAKE_BUILD_TYPE=Release)
step("${CMAKE_COMMAND}" --build "${WORK_DIR}/examples")
foreach(example load_with_timeline two_loads_in_coroutines answers_as_they_come
        one_query_each_transport own_transport)
  step("${WORK_DIR}/examples/${example}")
endforeach()
step("${WORK_DIR}/examples/sweep_and_report" "${WORK_DIR}/sweep-report")
