// SPDX-License-Identifier: Apache-2.0
// Test helper: the host executor (kernels::HostProgram), the code the emulator computes with,
// run in-process for a test's expected outputs, and the operators it implements. Suites that
// include it link qaic_test_host_reference (or qaic_kernels).
#pragma once

#include "kernels/HostProgram.hpp"
