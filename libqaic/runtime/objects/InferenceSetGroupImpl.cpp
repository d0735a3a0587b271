// SPDX-License-Identifier: Apache-2.0
#include "runtime/objects/InferenceSetGroupImpl.hpp"

#include <algorithm>

namespace qaic::rt {

std::shared_ptr<InferenceSetGroupImpl> InferenceSetGroupImpl::of(const std::shared_ptr<InferenceSetGroup>& group) {
  auto impl = std::dynamic_pointer_cast<InferenceSetGroupImpl>(group);
  if (group && !impl) throw Error(QS_INVAL, "the InferenceSetGroup was not made by InferenceSetGroup::Factory");
  return impl;
}

bool InferenceSetGroupImpl::isEnabled() const {
  std::lock_guard lock(mutex_);
  return enabled_;
}

void InferenceSetGroupImpl::addMember(GroupMember& set) {
  std::lock_guard lock(mutex_);
  if (enabled_)
    throw Error(QS_WRONG_STATE,
                "InferenceSetGroup '" + name_ + "' is enabled: call disable() before adding '" + set.name() + "'");
  if (!members_.empty() && members_.front()->device() != set.device())
    throw Error(QS_INVAL, "InferenceSetGroup '" + name_ + "': '" + set.name() + "' is on device " +
                              std::to_string(set.device()) + ", the group's members on device " +
                              std::to_string(members_.front()->device()));
  members_.push_back(&set);
}

void InferenceSetGroupImpl::removeMember(GroupMember& set) {
  std::lock_guard lock(mutex_);
  if (active_ == &set) {
    set.deactivate();
    active_ = nullptr;
  }
  std::erase(members_, &set);
  outstanding_.erase(&set);
  waiting_.erase(&set);
  if (members_.empty()) enabled_ = false;
  changed_.notify_all();
}

void InferenceSetGroupImpl::enableLocked(GroupMember* first) {
  if (enabled_) return;
  if (members_.empty()) throw Error(QS_INVAL, "InferenceSetGroup '" + name_ + "' has no InferenceSet");
  for (GroupMember* member : members_) member->loadPrograms();
  GroupMember* target = first ? first : members_.front();
  target->activate();
  active_ = target;
  activeSince_ = ++switches_;
  enabled_ = true;
  target->log(QL_INFO, "InferenceSetGroup '" + name_ + "' enabled with '" + target->name() + "' active");
  changed_.notify_all();
}

void InferenceSetGroupImpl::enable() {
  std::lock_guard lock(mutex_);
  enableLocked(nullptr);
}

void InferenceSetGroupImpl::disable() {
  std::unique_lock lock(mutex_);
  if (!enabled_) return;
  if (active_) {
    const auto bound = active_->inferenceBound();
    if (!changed_.wait_for(lock, bound, [&] { return !active_ || outstanding_[active_] == 0; }))
      throw Error(QS_TIMEDOUT, "InferenceSetGroup '" + name_ + "': '" + active_->name() + "' did not drain within " +
                                   std::to_string(bound.count()) + " ms");
    if (active_) active_->deactivate();
  }
  active_ = nullptr;
  enabled_ = false;
  changed_.notify_all();
}

void InferenceSetGroupImpl::switchToLocked(GroupMember& set) {
  if (active_) active_->deactivate();
  active_ = nullptr;
  set.activate();
  active_ = &set;
  activeSince_ = ++switches_;
  wakeMembersLocked();
  set.log(QL_DEBUG, "InferenceSetGroup '" + name_ + "' switched to '" + set.name() + "'");
}

bool InferenceSetGroupImpl::tryAdmit(GroupMember& set, AdmitTicket& ticket) {
  std::lock_guard lock(mutex_);
  if (!enabled_) {
    if (ticket.waiting) {
      --waiting_[&set];
      ticket.waiting = false;
    }
    enableLocked(&set);  // the first submission enables the group (seed 001)
  }
  if (!ticket.waiting) {
    ticket.arrival = switches_;
    ticket.deadline = Clock::now() + set.inferenceBound();
  }
  auto othersWaiting = [&] {
    for (const auto& [member, count] : waiting_)
      if (member != &set && count > 0) return true;
    return false;
  };
  bool admitted = active_ == &set && (ticket.arrival < activeSince_ || !othersWaiting());
  if (!admitted && active_ != &set && (!active_ || outstanding_[active_] == 0)) {
    switchToLocked(set);
    admitted = true;
  }
  if (admitted) {
    if (ticket.waiting) --waiting_[&set];
    ticket.waiting = false;
    ++outstanding_[&set];
    return true;
  }
  if (!ticket.waiting) {
    ++waiting_[&set];
    ticket.waiting = true;
  }
  if (Clock::now() >= ticket.deadline) {
    --waiting_[&set];
    ticket.waiting = false;
    throw Error(QS_TIMEDOUT, "InferenceSetGroup '" + name_ + "': '" + set.name() +
                                 "' waited too long for the device to switch over");
  }
  return false;
}

void InferenceSetGroupImpl::forget(GroupMember& set, AdmitTicket& ticket) {
  std::lock_guard lock(mutex_);
  if (ticket.waiting) --waiting_[&set];
  ticket.waiting = false;
  wakeMembersLocked();
}

void InferenceSetGroupImpl::requestEnded(GroupMember& set) {
  std::lock_guard lock(mutex_);
  auto it = outstanding_.find(&set);
  if (it != outstanding_.end() && it->second > 0) --it->second;
  changed_.notify_all();
  if (it != outstanding_.end() && it->second == 0) wakeMembersLocked();
}

void InferenceSetGroupImpl::wakeMembersLocked() {
  for (GroupMember* member : members_) member->wakeParked();
}

}  // namespace qaic::rt
