// SPDX-License-Identifier: Apache-2.0
#include "runtime/objects/HandleState.hpp"

namespace qaic::rt {

const char* handleStateName(HandleState state) {
  switch (state) {
    case HandleState::Available: return "available (not acquired with getAvailable)";
    case HandleState::Acquired: return "acquired";
    case HandleState::Submitted: return "submitted (in flight)";
    case HandleState::Completed: return "completed";
  }
  return "unknown";
}

void HandleStateMachine::require(bool allowed, const char* operation) const {
  if (!allowed)
    throw Error(QS_WRONG_STATE, std::string(operation) + ": the inference handle is " + handleStateName(state_));
}

void HandleStateMachine::acquire() {
  require(state_ == HandleState::Available, "getAvailable");
  state_ = HandleState::Acquired;
}

void HandleStateMachine::submit() {
  require(state_ == HandleState::Acquired, "submit");
  state_ = HandleState::Submitted;
}

void HandleStateMachine::complete() {
  require(state_ == HandleState::Submitted, "complete");
  state_ = HandleState::Completed;
}

void HandleStateMachine::unsubmit() {
  require(state_ == HandleState::Submitted, "unsubmit");
  state_ = HandleState::Acquired;
}

void HandleStateMachine::put() {
  require(state_ == HandleState::Acquired || state_ == HandleState::Completed, "putCompleted");
  state_ = HandleState::Available;
}

void HandleStateMachine::requireAcquired(const char* operation) const {
  require(state_ == HandleState::Acquired, operation);
}

}  // namespace qaic::rt
