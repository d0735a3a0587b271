// SPDX-License-Identifier: Apache-2.0
#include "runtime/objects/StatusCodes.hpp"

#include <cerrno>

#include "driver/DeviceProtocol.hpp"

namespace qaic::rt {

QStatus statusForErrno(int error) {
  switch (error) {
    case ENOSPC:
    case ENOMEM: return QS_NO_RESOURCES;
    case ENODEV:
    case ENXIO:
    case ENOTCONN:  // the emulator behind a FUSE node is gone (its connection closed)
      return QS_DEV_REMOVED;
    case ETIMEDOUT: return QS_TIMEDOUT;  // the firmware did not answer within control_resp_timeout_s
    case EINVAL:
    case EBADMSG:
    case ENOEXEC:
    case E2BIG: return QS_INCOMPATIBLE;
    default: return QS_ERROR;
  }
}

QStatus statusForBufferObjectErrno(int error) {
  const QStatus status = statusForErrno(error);
  return status == QS_DEV_REMOVED ? status : QS_NO_RESOURCES;
}

QStatus statusForCompletion(uint16_t code) {
  switch (code) {
    case driver::DBC_COMPLETION_SUCCESS: return QS_SUCCESS;
    case driver::DBC_COMPLETION_DEVICE_RESET: return QS_DEV_RESET;
    case driver::DBC_COMPLETION_ABORTED: return QS_DEV_REMOVED;
    case driver::DBC_COMPLETION_SEMAPHORE_TIMEOUT:
    case driver::DBC_COMPLETION_NSP_HANG: return QS_TIMEDOUT;
    default: return QS_DEVICE_ERROR;
  }
}

}  // namespace qaic::rt
