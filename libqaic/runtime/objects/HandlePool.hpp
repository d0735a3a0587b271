// SPDX-License-Identifier: Apache-2.0
// The inference handles of one InferenceSet and which of them are free: what InferenceSetImpl
// and MultiDeviceSetImpl share of the handles' life cycle (seed 001: acquire, retrieve by request
// id, put back, the set-wide wait's discard). Every call runs under the owning set's lock; the
// calls that change a handle's life-cycle fields take the handle's own lock too
// (InferenceHandleImpl.hpp says why both).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <qaic/InferenceSet.hpp>

#include "runtime/objects/InferenceHandleImpl.hpp"

namespace qaic::rt {

class HandlePool {
 public:
  // A new handle, free at once; its index must be the pool's size.
  void add(std::shared_ptr<InferenceHandleImpl> handle);

  const std::vector<std::shared_ptr<InferenceHandleImpl>>& all() const { return handles_; }
  const std::shared_ptr<InferenceHandleImpl>& at(std::size_t index) const { return handles_[index]; }

  // Whether a handle (of `activation`, when given) is free.
  bool hasFree(std::optional<uint32_t> activation) const;
  // The first handle put back (of `activation`, when given), acquired; hasFree must hold.
  std::shared_ptr<InferenceHandleImpl> take(std::optional<uint32_t> activation);
  // `handle` (completed) becomes free again, last in line.
  void putBack(InferenceHandleImpl& handle);

  // An inference submitted with `requestId` without a callback: one completed and not yet
  // retrieved, else (unless `completedOnly`) one still in flight; nullptr for none.
  InferenceHandleImpl* findByRequestId(uint64_t requestId, bool completedOnly) const;
  // The only inference in flight or unretrieved with `requestId`, or nullptr when there are none
  // or several.
  InferenceHandleImpl* soleWithRequestId(uint64_t requestId) const;
  // Seed 001's set-wide waitForCompletion discards the results: a completion no one retrieved
  // (getCompletedId, waitForCompletion(handle)) goes back as putCompleted would put it; a
  // callback's handle belongs to its callback and a retrieved one to the application. Returns
  // how many went back.
  std::size_t putBackUnclaimed();

 private:
  std::deque<uint32_t>::const_iterator firstFree(std::optional<uint32_t> activation) const;

  std::vector<std::shared_ptr<InferenceHandleImpl>> handles_;
  std::deque<uint32_t> free_;  // handle indices, in the order they were put back
};

// The set's own handle behind `handle`, for `operation`: QS_INVAL for a null handle,
// QS_WRONG_SET for another set's (`owner` is the set's address, its name the message's).
InferenceHandleImpl& ownHandle(const shInferenceHandle& handle, const void* owner, const std::string& setName,
                               const char* operation);
// QS_INVAL naming `call` unless activation < numActivations.
void checkActivationIndex(const char* call, const std::string& setName, uint32_t activation, uint32_t numActivations);

}  // namespace qaic::rt
