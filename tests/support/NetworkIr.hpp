// SPDX-License-Identifier: Apache-2.0
// LightNet IR text of the two small networks the runtime, stress and bench suites compile with
// qaic-exec, over [1, elements] floats; `partial` marks every buffer is_partial_allowed and
// `extra` is appended to the top-level object (e.g. allowed_shapes).
#pragma once

#include <string>

namespace qaic::testing {

std::string addNetworkIr(int elements, bool partial = false);                                  // c = a + b
std::string reluNetworkIr(int elements, bool partial = false, const std::string& extra = {});  // y = relu(x)

}  // namespace qaic::testing
