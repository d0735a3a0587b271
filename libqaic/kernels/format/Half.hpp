// SPDX-License-Identifier: Apache-2.0
// The float16 conversions of the public API (<qaic/Float16.hpp>) under the kernels' names: one
// implementation for applications, the device-format conversions and the operators.
#pragma once

#include <qaic/Float16.hpp>

namespace qaic::kernels {

using rt::floatToHalf;
using rt::halfToFloat;

}  // namespace qaic::kernels
