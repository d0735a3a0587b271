// SPDX-License-Identifier: Apache-2.0
// Over-subscription (seed 001): InferenceSets created with the same group (through
// InferenceSetProperties::inferenceSetGroup) share one set of NSPs. Only one of them is active on
// the device at a time; submitting to another one switches the device over transparently
// (deactivate the current program, activate the next) once the current one has drained.
//
// Constraints, each enforced with Error(QS_INVAL / QS_WRONG_STATE):
//   1. every member is created with numActivations 1;
//   2. members are enabled together, by enable() or by the first submit() to any of them;
//   3. while enabled, no new member can join until disable() is called.
// All members must also use the same device.
#pragma once

#include <memory>
#include <string>

namespace qaic::rt {

class InferenceSetGroup {
 public:
  // An empty name makes a private group. A non-empty name returns the group registered under it
  // (creating it first), so independent parts of a program can share one; release() unregisters.
  static std::shared_ptr<InferenceSetGroup> Factory(const std::string& name = {});
  virtual ~InferenceSetGroup();
  InferenceSetGroup(const InferenceSetGroup&) = delete;
  InferenceSetGroup& operator=(const InferenceSetGroup&) = delete;

  // Loads every member's program and activates one. Throws Error when the device refuses.
  virtual void enable() = 0;
  // Waits for in-flight inferences (bounded by their data-path timeouts), then deactivates.
  virtual void disable() = 0;
  // Drops the name registry's reference (see Factory).
  virtual void release() = 0;
  virtual bool isEnabled() const = 0;
  virtual const std::string& getName() const = 0;

 protected:
  InferenceSetGroup() = default;
};

}  // namespace qaic::rt
