// SPDX-License-Identifier: Apache-2.0
// Test helper: values as the device holds them, for staging a test's inputs and computing its
// expected outputs: fp16 conversions (Half) and the conversions between a user's buffer and the
// device's layout of it (DeviceFormat), the code the runtime converts with, and MXFP6 weights as
// the compiler encodes them (Mxfp6Format).
#pragma once

#include "kernels/format/DeviceFormat.hpp"
#include "kernels/format/Half.hpp"
#include "kernels/mx/Mxfp6Format.hpp"
