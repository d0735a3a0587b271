// SPDX-License-Identifier: Apache-2.0
#include <qaic/Errors.hpp>

namespace qaic::rt {

const char* statusName(QStatus status) {
  switch (status) {
    case QS_SUCCESS: return "QS_SUCCESS";
    case QS_ERROR: return "QS_ERROR";
    case QS_INVAL: return "QS_INVAL";
    case QS_TIMEDOUT: return "QS_TIMEDOUT";
    case QS_NODEV: return "QS_NODEV";
    case QS_DEV_REMOVED: return "QS_DEV_REMOVED";
    case QS_DEV_RESET: return "QS_DEV_RESET";
    case QS_BUFFER_SIZE: return "QS_BUFFER_SIZE";
    case QS_BUFFER_DIMS: return "QS_BUFFER_DIMS";
    case QS_INCOMPATIBLE: return "QS_INCOMPATIBLE";
    case QS_NO_RESOURCES: return "QS_NO_RESOURCES";
    case QS_WRONG_STATE: return "QS_WRONG_STATE";
    case QS_WRONG_SET: return "QS_WRONG_SET";
    case QS_DEVICE_ERROR: return "QS_DEVICE_ERROR";
    case QS_CANCELED: return "QS_CANCELED";
  }
  return "QS_UNKNOWN";
}

}  // namespace qaic::rt
