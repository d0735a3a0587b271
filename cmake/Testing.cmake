# SPDX-License-Identifier: Apache-2.0
# What `make` leaves out: tests/ is added with EXCLUDE_FROM_ALL, so the default build is the
# product (libraries, programs, the Python module). `make test` builds qaic_tests (every test
# program and the helpers tests start), `make tsan` qaic_threaded_tests (those labelled threaded,
# all it runs), `make bench` qaic_benchmarks.
add_custom_target(qaic_tests)
add_custom_target(qaic_threaded_tests)
add_custom_target(qaic_benchmarks)

# qaic_test_program(TARGET...): built by `make test` (and the sanitizer builds).
function(qaic_test_program)
  add_dependencies(qaic_tests ${ARGN})
endfunction()

# qaic_bench_program(TARGET...): built by `make bench`.
function(qaic_bench_program)
  add_dependencies(qaic_benchmarks ${ARGN})
endfunction()

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
  qaic_test_program(${name})
  if("threaded" IN_LIST ARG_LABELS)
    add_dependencies(qaic_threaded_tests ${name})
  endif()
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

# qaic_add_pytest(TEST_NAME FILE LABEL label [TIMEOUT s] [ENVIRONMENT VAR=value ...])
# One ctest test running one pytest file with Debian's /usr/bin/python3; the build and source
# trees are in its environment as QAIC_BUILD_DIR / QAIC_SOURCE_DIR.
function(qaic_add_pytest test file)
  cmake_parse_arguments(ARG "" "LABEL;TIMEOUT" "ENVIRONMENT" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  set(environment "QAIC_BUILD_DIR=${CMAKE_BINARY_DIR}" "QAIC_SOURCE_DIR=${PROJECT_SOURCE_DIR}" ${ARG_ENVIRONMENT})
  add_test(NAME ${test} COMMAND ${DEBIAN_PYTHON} -m pytest -q -p no:cacheprovider ${file})
  set_tests_properties(${test} PROPERTIES LABELS ${ARG_LABEL} TIMEOUT ${ARG_TIMEOUT} ENVIRONMENT "${environment}")
endfunction()
