# qaic_add_gtest(NAME SOURCES a.cpp b.cpp LIBS x y [LABELS l1 l2] [TIMEOUT s])
# One GoogleTest executable whose cases ctest discovers one by one.
# CMake 3.25's gtest_discover_tests flattens list-valued PROPERTIES, so each discovered test gets
# exactly one label (the LABELS joined by '-': `ctest -L threaded` still matches
# "emu-threaded") and one ENVIRONMENT entry; the source and build trees are also compiled in as
# QAIC_SOURCE_DIR / QAIC_BUILD_DIR.
function(qaic_add_gtest name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  # Every suite has the test support (tests/support: processes, temporary directories, the
  # emulator fixture, ...) at hand.
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} qaic_test_support GTest::gtest GTest::gtest_main Threads::Threads)
  target_compile_definitions(${name} PRIVATE QAIC_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
                                             QAIC_BUILD_DIR="${CMAKE_BINARY_DIR}")
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  include(GoogleTest)
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  list(JOIN ARG_LABELS "-" label)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS ${label} TIMEOUT ${ARG_TIMEOUT} ENVIRONMENT "QAIC_BUILD_DIR=${CMAKE_BINARY_DIR}")
endfunction()
