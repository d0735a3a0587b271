# SPDX-License-Identifier: Apache-2.0
# The project's version for every program's --version (and so for their man pages):
# generated/QaicVersion.hpp in the build tree, on the include path of every target.
configure_file(${CMAKE_CURRENT_LIST_DIR}/QaicVersion.hpp.in ${CMAKE_BINARY_DIR}/generated/QaicVersion.hpp @ONLY)
include_directories(${CMAKE_BINARY_DIR}/generated)
