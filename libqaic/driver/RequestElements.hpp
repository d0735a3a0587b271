// SPDX-License-Identifier: Apache-2.0
// The request element for one attached slice (docs/device-protocol.md sections 2, 3 and 6): what
// the kernel side builds from a slice on EXECUTE_BO, and what the runtime writes into the mapped
// ring itself. One place for the mapping slice -> element so both paths agree.
#pragma once

#include <cstdint>

#include "driver/DeviceProtocol.hpp"
#include "qaic/uapi/qaic_accel.h"

namespace qaic::driver {

// `dir` is QAIC_DIR_TO_DEVICE or QAIC_DIR_FROM_DEVICE; `last` marks the request's final element,
// which asks the device for a response element.
RequestElement sliceRequestElement(uint16_t reqId, uint32_t boHandle, uint32_t dir,
                                   const qaic_attach_slice_entry& slice, bool last);

}  // namespace qaic::driver
