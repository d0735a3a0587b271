// SPDX-License-Identifier: Apache-2.0
// The life cycle of one InferenceHandle (seed 001) as an explicit state machine, so that every
// misuse (put twice, submit a handle that was not acquired, set buffers while in flight) is a
// typed error instead of undefined behaviour.
//
//   Available --acquire--> Acquired --submit--> Submitted --complete--> Completed
//       ^                     |                                          |
//       +-------put-----------+------------------put---------------------+
//
// Not thread-safe by itself: the owning InferenceSet serializes transitions under its lock.
#pragma once

#include <cstdint>
#include <string>

#include <qaic/Errors.hpp>

namespace qaic::rt {

enum class HandleState : uint8_t { Available, Acquired, Submitted, Completed };

const char* handleStateName(HandleState state);

class HandleStateMachine {
 public:
  HandleState state() const { return state_; }

  // Each throws Error(QS_WRONG_STATE) naming the operation and the current state.
  void acquire();   // Available -> Acquired
  void submit();    // Acquired -> Submitted
  void complete();  // Submitted -> Completed
  // Submitted -> Acquired: a submission refused before any of it reached a device (a
  // multi-device set's, whose parts validate the IO set only as they are submitted).
  void unsubmit();
  void put();                                         // Acquired | Completed -> Available
  void requireAcquired(const char* operation) const;  // for setBuffers and friends

 private:
  void require(bool allowed, const char* operation) const;
  HandleState state_ = HandleState::Available;
};

}  // namespace qaic::rt
