// SPDX-License-Identifier: Apache-2.0
// The InferenceHandle life cycle of seed 001 as a state machine: every misuse is a typed error.
#include <gtest/gtest.h>

#include "runtime/objects/HandleState.hpp"

namespace qaic::rt {
namespace {

QStatus statusOf(void (HandleStateMachine::*step)(), HandleStateMachine& machine) {
  try {
    (machine.*step)();
  } catch (const Error& e) {
    return e.status();
  }
  return QS_SUCCESS;
}

TEST(HandleState, FullCycleReturnsToAvailable) {
  HandleStateMachine m;
  EXPECT_EQ(m.state(), HandleState::Available);
  m.acquire();
  EXPECT_EQ(m.state(), HandleState::Acquired);
  m.submit();
  EXPECT_EQ(m.state(), HandleState::Submitted);
  m.complete();
  EXPECT_EQ(m.state(), HandleState::Completed);
  m.put();
  EXPECT_EQ(m.state(), HandleState::Available);
}

TEST(HandleState, PutTwiceIsAWrongStateError) {
  HandleStateMachine m;
  m.acquire();
  m.put();
  EXPECT_EQ(statusOf(&HandleStateMachine::put, m), QS_WRONG_STATE);
  EXPECT_EQ(m.state(), HandleState::Available);
}

TEST(HandleState, SubmitWithoutAcquireIsRefused) {
  HandleStateMachine m;
  try {
    m.submit();
    FAIL() << "submit accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), QS_WRONG_STATE);
    EXPECT_NE(std::string(e.what()).find("submit"), std::string::npos) << e.what();
  }
}

TEST(HandleState, InFlightHandleCannotBePutOrResubmitted) {
  HandleStateMachine m;
  m.acquire();
  m.submit();
  EXPECT_EQ(statusOf(&HandleStateMachine::put, m), QS_WRONG_STATE);
  EXPECT_EQ(statusOf(&HandleStateMachine::submit, m), QS_WRONG_STATE);
  EXPECT_EQ(statusOf(&HandleStateMachine::acquire, m), QS_WRONG_STATE);
  EXPECT_THROW(m.requireAcquired("setBuffers"), Error);
  EXPECT_EQ(m.state(), HandleState::Submitted);
}

TEST(HandleState, CompletedHandleMustBePutBeforeReuse) {
  HandleStateMachine m;
  m.acquire();
  m.submit();
  m.complete();
  EXPECT_EQ(statusOf(&HandleStateMachine::complete, m), QS_WRONG_STATE);
  EXPECT_EQ(statusOf(&HandleStateMachine::submit, m), QS_WRONG_STATE);
  EXPECT_THROW(m.requireAcquired("setBuffers"), Error);
}

TEST(HandleState, AcquiredHandleMayBeGivenBackUnused) {
  HandleStateMachine m;
  m.acquire();
  EXPECT_NO_THROW(m.requireAcquired("setBuffers"));
  m.put();
  EXPECT_EQ(m.state(), HandleState::Available);
  EXPECT_EQ(statusOf(&HandleStateMachine::complete, m), QS_WRONG_STATE);
}

}  // namespace
}  // namespace qaic::rt
