#include <qaic/InferenceSetGroup.hpp>

#include <map>
#include <mutex>

#include "GroupImpl.hpp"

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
  if (name.empty())
    return std::make_shared<InferenceSetGroup>(std::make_unique<engine::GroupImpl>("<unnamed>"));
  std::lock_guard lock(registryMutex);
  auto& slot = registry()[name];
  if (!slot) slot = std::make_shared<InferenceSetGroup>(std::make_unique<engine::GroupImpl>(name));
  return slot;
}

InferenceSetGroup::InferenceSetGroup(std::unique_ptr<engine::GroupImpl> impl) : impl_(std::move(impl)) {}
InferenceSetGroup::~InferenceSetGroup() = default;

void InferenceSetGroup::enable() { impl_->enable(); }
void InferenceSetGroup::disable() { impl_->disable(); }
void InferenceSetGroup::release() {
  std::lock_guard lock(registryMutex);
  auto it = registry().find(impl_->name());
  if (it != registry().end() && it->second.get() == this) registry().erase(it);
}
bool InferenceSetGroup::isEnabled() const { return impl_->enabled(); }
const std::string& InferenceSetGroup::getName() const { return impl_->name(); }

}  // namespace qaic::rt
