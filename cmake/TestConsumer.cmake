# ctest script: install the build into a scratch prefix, build the example
# consumer with find_package(haloex) and run it.
set(prefix "${BUILD_DIR}/consumer-test/prefix")
set(work "${BUILD_DIR}/consumer-test/build")
file(REMOVE_RECURSE "${BUILD_DIR}/consumer-test")
execute_process(COMMAND ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}" RESULT_VARIABLE rc
                OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc})")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -S "${SOURCE_DIR}/examples/consumer" -B "${work}" -G "${GENERATOR}"
                        "-DCMAKE_PREFIX_PATH=${prefix}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring the consumer against the installed haloex failed (${rc})")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build "${work}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the consumer failed (${rc})")
endif()
execute_process(COMMAND "${work}/plan_summary" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the consumer failed (${rc})")
endif()
