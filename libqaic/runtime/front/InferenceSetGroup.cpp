#include <qaic/InferenceSetGroup.hpp>

#include <map>
#include <mutex>

#include "runtime/objects/GroupImpl.hpp"

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
  if (name.empty()) return std::make_shared<GroupImpl>("<unnamed>");
  std::lock_guard lock(registryMutex);
  auto& slot = registry()[name];
  if (!slot) slot = std::make_shared<GroupImpl>(name);
  return slot;
}

InferenceSetGroup::~InferenceSetGroup() = default;

std::shared_ptr<GroupImpl> GroupImpl::of(const std::shared_ptr<InferenceSetGroup>& group) {
  auto impl = std::dynamic_pointer_cast<GroupImpl>(group);
  if (group && !impl) throw Error(QS_INVAL, "the InferenceSetGroup was not made by InferenceSetGroup::Factory");
  return impl;
}

void GroupImpl::release() {
  std::lock_guard lock(registryMutex);
  auto it = registry().find(name_);
  if (it != registry().end() && it->second.get() == this) registry().erase(it);
}

}  // namespace qaic::rt
