// SPDX-License-Identifier: Apache-2.0
// Over-subscription: the members of an InferenceSetGroup share one device's NSPs, and exactly
// one member is activated at a time. A member's request is admitted when its set is active and
// no other member is waiting, or when the active member has drained and the device can be
// switched over (deactivate it, activate the requester). Members waiting when their set becomes
// active go first, so two busy members alternate instead of one starving the other.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <qaic/Context.hpp>
#include <qaic/InferenceSetGroup.hpp>

#include "runtime/objects/InferenceHandleImpl.hpp"

namespace qaic::rt {

// What a group needs from a member (implemented by InferenceSetImpl); called under the group's
// lock.
class GroupMember {
 public:
  virtual ~GroupMember() = default;
  virtual const std::string& name() const = 0;
  virtual QID device() const = 0;
  // The longest one of its inferences can take.
  virtual std::chrono::milliseconds inferenceBound() const = 0;
  virtual void loadPrograms() = 0;
  virtual void activate() = 0;
  virtual void deactivate() = 0;
  virtual void wakeParked() = 0;  // the group changed: retry parked submissions
  virtual void log(QLogLevel level, const std::string& message) const = 0;
};

class InferenceSetGroupImpl final : public InferenceSetGroup {
 public:
  explicit InferenceSetGroupImpl(std::string name) : name_(std::move(name)) {}

  // The implementation behind `group`; throws Error(QS_INVAL) for one that
  // InferenceSetGroup::Factory did not make.
  static std::shared_ptr<InferenceSetGroupImpl> of(const std::shared_ptr<InferenceSetGroup>& group);

  // InferenceSetGroup
  void enable() override;
  void disable() override;
  void release() override;
  bool isEnabled() const override;
  const std::string& getName() const override { return name_; }

  void addMember(GroupMember& set);     // Error(QS_WRONG_STATE) while enabled, QS_INVAL other device
  void removeMember(GroupMember& set);  // deactivates it if it is the active one

  // Never blocks: true when `set` may put a request on the device now (switching the device
  // over if the active member has drained); false when the request must wait, in which case the
  // pipeline parks it and retries when the group wakes its members. Throws Error(QS_TIMEDOUT)
  // when the ticket's deadline passed, QS_CANCELED when the group was disabled.
  bool tryAdmit(GroupMember& set, AdmitTicket& ticket);
  void forget(GroupMember& set, AdmitTicket& ticket);  // a parked request that will not be retried
  void requestEnded(GroupMember& set);                 // an admitted request left the device

 private:
  void enableLocked(GroupMember* first);
  void switchToLocked(GroupMember& set);
  void wakeMembersLocked();

  const std::string name_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<GroupMember*> members_;
  bool enabled_ = false;
  GroupMember* active_ = nullptr;
  uint64_t switches_ = 0;                            // how many times the device was switched over
  uint64_t activeSince_ = 0;                         // value of switches_ when active_ was activated
  std::map<GroupMember*, std::size_t> outstanding_;  // admitted, not yet released
  std::map<GroupMember*, std::size_t> waiting_;      // blocked in admit
};

}  // namespace qaic::rt
