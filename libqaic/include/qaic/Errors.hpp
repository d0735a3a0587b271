// SPDX-License-Identifier: Apache-2.0
// The runtime's error vocabulary: one status code per way an API call or an inference can fail,
// and the exception that carries a code together with a message naming the buffer, field or
// device involved. Calls that can time out return a status; misuse and bad input throw Error.
#pragma once

#include <stdexcept>
#include <string>

namespace qaic::rt {

enum QStatus : int {
  QS_SUCCESS = 0,
  QS_ERROR = 1,          // unclassified failure (message says what)
  QS_INVAL = 2,          // an argument that is not allowed
  QS_TIMEDOUT = 3,       // a wait or an inference exceeded its time
  QS_NODEV = 4,          // the device does not exist (or its root is empty)
  QS_DEV_REMOVED = 5,    // the device went away
  QS_DEV_RESET = 6,      // the device reset while requests were in flight
  QS_BUFFER_SIZE = 7,    // a buffer whose byte size does not fit its mapping
  QS_BUFFER_DIMS = 8,    // dims that do not match the buffer's allowed shapes
  QS_INCOMPATIBLE = 9,   // a program container the device cannot run
  QS_NO_RESOURCES = 10,  // not enough free NSPs, DBCs or memory
  QS_WRONG_STATE = 11,   // an InferenceHandle used out of its life cycle
  QS_WRONG_SET = 12,     // a handle given to a set that did not create it
  QS_DEVICE_ERROR = 13,  // the device completed a request with an error code
  QS_CANCELED = 14,      // the set was destroyed or its group disabled first
};

// "QS_BUFFER_SIZE"
const char* statusName(QStatus status);

class Error : public std::runtime_error {
 public:
  Error(QStatus status, const std::string& message) : std::runtime_error(message), status_(status) {}
  QStatus status() const noexcept { return status_; }

 private:
  QStatus status_;
};

}  // namespace qaic::rt
