# qaic_add_gtest(NAME SOURCES a.cpp b.cpp LIBS x y [LABELS l1 l2] [TIMEOUT s])
# One GoogleTest executable, registered with ctest as a single test so that its output stays
# readable and the suite's count means executables; gtest prints the per-case detail.
function(qaic_add_gtest name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main Threads::Threads)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  include(GoogleTest)
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT}
    ENVIRONMENT "QAIC_BUILD_DIR=${CMAKE_BINARY_DIR};QAIC_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
endfunction()
