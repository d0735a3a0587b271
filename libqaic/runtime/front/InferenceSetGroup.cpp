// SPDX-License-Identifier: Apache-2.0
#include <qaic/InferenceSetGroup.hpp>

#include <map>
#include <mutex>

#include "runtime/objects/InferenceSetGroupImpl.hpp"

namespace qaic::rt {
namespace {
// Seed 001's "static map of the InferenceSet group repository": named groups by name.
std::mutex registryMutex;
std::map<std::string, std::shared_ptr<InferenceSetGroup>>& registry() {
  static std::map<std::string, std::shared_ptr<InferenceSetGroup>> groups;
  return groups;
}
}  // namespace

std::shared_ptr<InferenceSetGroup> InferenceSetGroup::Factory(const std::string& name) {
  if (name.empty()) return std::make_shared<InferenceSetGroupImpl>("<unnamed>");
  std::lock_guard lock(registryMutex);
  auto& slot = registry()[name];
  if (!slot) slot = std::make_shared<InferenceSetGroupImpl>(name);
  return slot;
}

InferenceSetGroup::~InferenceSetGroup() = default;

// The group's own method, defined beside the repository it leaves.
void InferenceSetGroupImpl::release() {
  std::lock_guard lock(registryMutex);
  auto it = registry().find(name_);
  if (it != registry().end() && it->second.get() == this) registry().erase(it);
}

}  // namespace qaic::rt
