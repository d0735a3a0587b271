# SPDX-License-Identifier: Apache-2.0
# Debug information of the Debug and RelWithDebInfo builds: line tables (-g1) unless
# QAIC_FULL_DEBUG_INFO is ON. Line tables are what backtraces, sanitizer reports and perf need; full
# -g also describes every type and variable, which cost a quarter to a third of the compile time of
# template-heavy files here (docs/development.md, "Build time"). Turn it on to inspect variables in
# a debugger.
option(QAIC_FULL_DEBUG_INFO "Full debug information (-g) instead of line tables (-g1)" OFF)
if(NOT QAIC_FULL_DEBUG_INFO)
  foreach(language C CXX)
    foreach(config DEBUG RELWITHDEBINFO)
      string(REGEX REPLACE "(^| )-g( |$)" "\\1-g1\\2" CMAKE_${language}_FLAGS_${config} "${CMAKE_${language}_FLAGS_${config}}")
    endforeach()
  endforeach()
endif()
