// SPDX-License-Identifier: Apache-2.0
// How the driver's errno values and the device's DBC completion codes become the API's QStatus:
// one table for program loads, activations, buffer objects and the data path.
#pragma once

#include <cstdint>

#include <qaic/Errors.hpp>

namespace qaic::rt {

// ENOSPC, ENOMEM: QS_NO_RESOURCES; ENODEV, ENXIO, ENOTCONN (the emulator behind the node is
// gone): QS_DEV_REMOVED; ETIMEDOUT (no firmware answer within control_resp_timeout_s):
// QS_TIMEDOUT; EINVAL, EBADMSG, ENOEXEC, E2BIG (a container or request the device refuses):
// QS_INCOMPATIBLE; anything else QS_ERROR.
QStatus statusForErrno(int error);

// A buffer object the device would not create: QS_NO_RESOURCES unless the device went away.
QStatus statusForBufferObjectErrno(int error);

// DBC_COMPLETION_*: SUCCESS, DEVICE_RESET, ABORTED (the device went away), the two timeouts,
// anything else QS_DEVICE_ERROR.
QStatus statusForCompletion(uint16_t code);

}  // namespace qaic::rt
