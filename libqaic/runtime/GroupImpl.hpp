// Over-subscription: the members of an InferenceSetGroup share one device's NSPs, and exactly
// one member is activated at a time. A member's request is admitted when its set is active and
// no other member is waiting, or when the active member has drained and the device can be
// switched over (deactivate it, activate the requester). Members waiting when their set becomes
// active go first, so two busy members alternate instead of one starving the other.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <qaic/InferenceSetGroup.hpp>

#include "HandleImpl.hpp"

namespace qaic::rt::engine {

class SetImpl;
class ActivationQueue;

class GroupImpl {
 public:
  explicit GroupImpl(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  bool enabled() const;

  void addMember(SetImpl& set);     // Error(QS_WRONG_STATE) while enabled, QS_INVAL other device
  void removeMember(SetImpl& set);  // deactivates it if it is the active one

  void enable();
  void disable();

  // Never blocks: true when `set` may put a request on the device now (switching the device
  // over if the active member has drained); false when the request must wait, in which case the
  // queue parks it and retries when the group wakes its members. Throws Error(QS_TIMEDOUT) when
  // the ticket's deadline passed, QS_CANCELED when the group was disabled.
  bool tryAdmit(SetImpl& set, AdmitTicket& ticket);
  void forget(SetImpl& set, AdmitTicket& ticket);  // a parked request that will not be retried
  void release(SetImpl& set);

 private:
  void enableLocked(SetImpl* first);
  void switchToLocked(SetImpl& set);
  void wakeMembersLocked();

  const std::string name_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<SetImpl*> members_;
  bool enabled_ = false;
  SetImpl* active_ = nullptr;
  uint64_t switches_ = 0;        // how many times the device was switched over
  uint64_t activeSince_ = 0;     // value of switches_ when active_ was activated
  std::map<SetImpl*, std::size_t> outstanding_;  // admitted, not yet released
  std::map<SetImpl*, std::size_t> waiting_;      // blocked in admit
};

}  // namespace qaic::rt::engine
